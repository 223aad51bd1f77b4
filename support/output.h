#pragma once
// Writing the files schedc produces so that nothing is half-written or clobbered: a regular file
// (or a path that does not exist yet) is written to a temporary beside it, created exclusively,
// and renamed over it; symlinks are followed (the link stays, its target is replaced); devices and
// FIFOs (`-o /dev/null`) are written in place, never replaced; a directory is refused, and so is a
// file the user may not write (a read-only file), as the shell refuses it.

#include <string>
#include <string_view>

namespace schedc {

struct OutputPlan {
  std::string target;  // the path written: `path` with its symlinks followed
  std::string tmp;     // the temporary renamed over `target`; empty when written in place
  bool in_place = false;
  std::string error;  // why `path` cannot be written (then nothing else is set)
};

/// "" or why this user may not write the regular file at `path` (symlinks followed), as the shell's
/// `>` would refuse it: "Permission denied" for a read-only file. plan_output refuses the same.
std::string unwritable_reason(const std::string& path);

/// Where and how `path` would be written; touches nothing.
OutputPlan plan_output(const std::string& path);

/// Writes `content` as `plan` says. Returns "" or the reason it failed (the target is then as it
/// was, and no temporary is left).
std::string write_planned(const OutputPlan& plan, std::string_view content);

/// The two in one: "" or the reason.
std::string write_file_atomically(const std::string& path, std::string_view content);

}  // namespace schedc
