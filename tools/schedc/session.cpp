#include "tools/schedc/session.h"
#include <algorithm>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "support/input.h"
#include "support/output.h"
#include "tools/schedc/interrupt.h"

namespace schedc::driver {

int exit_code(const Diagnostics& diags) {
  if (diags.has_error_of_kind(DiagKind::Internal)) return kInternalError;
  if (diags.has_error_of_kind(DiagKind::BadFlag)) return kBadCommandLine;
  return diags.has_errors() ? kInputError : kOk;
}

int Session::finish() { return finish(exit_code(diags)); }

int Session::fail() {
  int code = finish();
  return code == kOk ? kInputError : code;
}

int Session::finish(int code) {
  std::cout.flush();
  diags.print(std::cerr);
  return code;
}

int32_t Session::read_file(const std::string& path) { return read_source(sources, diags, path); }

bool check_output_path(Session& s, const std::string& path) {
  if (!path.empty()) return true;
  s.diags.error(DiagKind::BadFlag, {}, "-o: the output path is empty, expected a file (or `-` for standard output)");
  return false;
}

bool write_output(Session& s, const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    std::cout.flush();
    if (!std::cout) {  // `> /dev/full`, a closed pipe: never exit 0 with the output lost
      int e = errno;
      s.diags.error(DiagKind::Io, {},
                    std::string("cannot write to standard output") + (e ? ": " + std::string(std::strerror(e)) : ""));
      return false;
    }
    return true;
  }
  OutputPlan plan = plan_output(path);
  if (plan.error.empty()) {
    // Never the input itself: `schedule spec.sched -o spec.sched` would lose the spec.
    std::error_code ec;
    for (int32_t f = 0; f < s.sources.size(); ++f)
      if (std::find(s.replaceable.begin(), s.replaceable.end(), f) == s.replaceable.end() &&
          std::filesystem::equivalent(plan.target, s.sources.path(f), ec)) {
        plan.error = "it is also the input; write the output to another path";
        break;
      }
  }
  if (!plan.error.empty()) {
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(path) + ": " + plan.error);
    return false;
  }
  std::optional<PendingOutput> pending;  // a second interrupt removes the temporary
  if (!plan.tmp.empty()) pending.emplace(plan.tmp);
  if (std::string why = write_planned(plan, content); !why.empty()) {
    s.diags.error(DiagKind::Io, {}, "cannot write " + backtick(path) + ": " + why);
    return false;
  }
  return true;
}

int finish_with_output(Session& s, const std::string& path, const std::string& content) {
  return write_output(s, path, content) ? s.finish() : s.fail();
}

}  // namespace schedc::driver
