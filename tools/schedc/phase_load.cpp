// The load phase: the input file, read by frontend::read_input, with the problem flags over its
// problem.

#include "tools/schedc/phases.h"

namespace schedc::driver {

std::optional<Input> load(Session& s, const std::string& path, const ProblemFlags& flags) {
  Input in;
  if (!path.empty()) {
    const int32_t file = s.read_file(path);
    if (file < 0) return std::nullopt;
    const frontend::InputFormat format = frontend::input_format(s.sources, file, path);
    // A torch-csv file's shape is checked against the flags while it is read; the other formats
    // take the flags below.
    const bool csv = format == frontend::InputFormat::TorchCsv;
    frontend::Spec command_line;
    if (csv && !flags.apply(command_line, true, s.diags)) return std::nullopt;
    auto read = frontend::read_input(s.sources, file, format, command_line, s.diags);
    if (!read) return std::nullopt;
    in = std::move(*read);
    if (csv) return in;
  } else if (!flags.pp || !flags.microbatches) {
    // A problem that was never stated is not one rank and one microbatch.
    std::string missing = !flags.pp && !flags.microbatches ? "--pp and --microbatches"
                          : !flags.pp                      ? "--pp"
                                                           : "--microbatches";
    s.diags.error(DiagKind::BadFlag, {},
                  "no problem is stated: without a spec, give " + missing +
                      " (the ranks and microbatches; the other problem flags have defaults)");
    return std::nullopt;
  }
  if (flags.any() || !in.has_file()) {
    // A JSON document's memory deltas may be unbalanced (version 1 allowed it); the check applies
    // to what a spec or a flag states.
    bool check_balance = in.format != frontend::InputFormat::ScheduleJson;
    if (!flags.apply(in.spec, check_balance, s.diags)) return std::nullopt;
  }
  return in;
}

}  // namespace schedc::driver
