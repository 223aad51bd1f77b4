#include "tools/schedc/dump.h"

#include <sstream>

#include "ir/json_io.h"
#include "support/numbers.h"
#include "tools/schedc/json_out.h"

namespace schedc::driver {

namespace {

std::string_view input_kind(const Input& in) {
  if (!in.has_file()) return "flags";
  switch (in.format) {
    case frontend::InputFormat::Spec: return "spec";
    case frontend::InputFormat::ScheduleJson: return "schedule-json";
    case frontend::InputFormat::TorchCsv: return "torch-csv";
  }
  return "";
}

// `file:line:col`, `file` for the file as a whole, or `command line` for a flag.
std::string where(const Session& s, SourceLoc loc) {
  if (!loc.has_file()) return "command line";
  std::string out = s.sources.path(loc.file);
  if (loc.has_line()) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  return out;
}

// The input as the later phases see it: the problem with the flags over it, which fields the
// input or the flags gave (and where), and how the schedule is to be obtained.
std::string load_dump(const Session& s, const Input& in) {
  ojson given = ojson::object();
  for (const auto& [field, loc] : in.spec.given) given[std::string(ir::to_string(field))] = where(s, loc);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"input", ojson(std::string(input_kind(in))).dump()},
      {"file", in.file >= 0 ? ojson(s.sources.path(in.file)).dump() : "null"},
      {"problem", ir::problem_json(in.spec.problem)},
      {"given", json_line(given)},
      {"schedule", json_line(schedule_source_json(in.spec.schedule))}};
  return json_document("schedc.dump.load", fields);
}

std::string program_verdict(const ir::Program& p) {
  std::ostringstream os;
  os << "deadlock-free: " << p.num_ops() << " ops, " << p.messages.size() << " transfers in " << p.num_groups()
     << " groups; peak memory per rank with receive buffers:";
  for (const ir::RankProgram& r : p.ranks) os << " " << format_number(r.peak_memory);
  os << "\n";
  return os.str();
}

std::string files_dump(const std::vector<codegen::EmittedFile>& files) {
  std::string out;
  for (const codegen::EmittedFile& f : files) {
    out += "// ---- " + f.name + " (" + std::to_string(f.content.size()) + " bytes) ----\n" + f.content;
    if (!f.content.empty() && f.content.back() != '\n') out += "\n";
  }
  return out;
}

std::string data(const Session& s, const Compilation& c, Phase p) {
  switch (p) {
    case Phase::Load: return load_dump(s, *c.input);
    case Phase::Schedule: return ir::write_schedule_json(*c.schedule, nullptr);
    case Phase::Verify:
      return "valid: " + std::to_string(c.schedule->num_actions()) + " actions on " +
             std::to_string(c.schedule->ranks.size()) + " ranks\n";
    case Phase::Simulate: return timeline_json(*c.schedule, *c.timeline);
    case Phase::Lower: return ir::format_program(*c.program);
    case Phase::VerifyProgram: return program_verdict(*c.program);
    case Phase::Emit: return files_dump(c.emitted->files);
    case Phase::Build: return c.executable + "\n";
    case Phase::Run: return "exit status " + std::to_string(c.exit_status) + "\n";
  }
  return "";
}

}  // namespace

std::string_view dump_description(Phase p) {
  switch (p) {
    case Phase::Load: return "the input: problem, given fields, schedule source (JSON)";
    case Phase::Schedule: return "the schedule as made, before verification (schedule JSON)";
    case Phase::Verify: return "the verdict";
    case Phase::Simulate: return "the timeline and metrics (JSON, as `show --format json`)";
    case Phase::Lower: return "the per-rank program (as `schedule --format program`)";
    case Phase::VerifyProgram: return "the verdict and each rank's peak memory";
    case Phase::Emit: return "the generated C++ files";
    case Phase::Build: return "the executable's path in the build cache";
    case Phase::Run: return "the executor's exit status";
  }
  return "";
}

std::string dump(const Session& s, const Compilation& c, Phase p) {
  return "=== after " + std::string(to_string(p)) + ": " + std::string(dump_description(p)) + " ===\n" + data(s, c, p);
}

}  // namespace schedc::driver
