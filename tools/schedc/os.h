#pragma once
// The operating system's pieces `emit`, `build` and `run` share (issue: processes and files):
// child processes that die with schedc, temporaries named after the process that owns them (so
// that the next schedc can remove those of a process that is gone), and writing a file with the
// reason it failed.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace schedc::driver {

/// Starts argv[0] (looked up in PATH) in a process group of its own, with stdin from /dev/null
/// and, when `output_fd` >= 0, stdout and stderr into it. A SIGINT or SIGTERM that schedc
/// receives is forwarded to the group, and on Linux the child is killed when schedc dies.
/// Returns the child's pid, or -1 when it cannot be started (or schedc was asked to stop).
pid_t start_process(const std::vector<std::string>& argv, int output_fd = -1);

/// Waits for a child of start_process and returns its exit status (128 + N when killed by
/// signal N, 127 when it could not start). After a forwarded signal, the child's group is given
/// a few seconds and then killed.
int wait_process(pid_t pid);

/// start_process + wait_process.
int run_process(const std::vector<std::string>& argv, int output_fd = -1);

/// A file for a child's output that a full disk cannot lose: in memory where the system allows
/// (memfd), else `fallback_path`; -1 when neither can be made. read_log reads it from the start.
int open_log(const std::string& fallback_path);
std::string read_log(int fd);

/// This process as the owner of a temporary: `HOST-PID`.
std::string temp_owner();

/// True when `owner` (a temp_owner() of some schedc, or a bare PID from an older one) names a
/// process on this host that no longer runs, so its temporaries can be removed.
bool is_stale_owner(std::string_view owner);

/// Writes `content` to `path` (created or truncated); "" on success, else the reason
/// (e.g. "No space left on device").
std::string write_file(const std::string& path, std::string_view content);

}  // namespace schedc::driver
