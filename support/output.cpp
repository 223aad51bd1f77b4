#include "support/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace schedc {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Writes all of `content` to `fd`; 0 or the errno.
int write_all(int fd, std::string_view content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

std::string unwritable_reason(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  if (::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) == 0) return {};
  return errno_text(errno);
}

OutputPlan plan_output(const std::string& path) {
  namespace fs = std::filesystem;
  OutputPlan plan;
  if (path.empty()) {
    plan.error = "the output path is empty";
    return plan;
  }
  // Follow symlinks by hand: a dangling link names the file to create.
  fs::path target(path);
  struct stat st {};
  for (int hops = 0;; ++hops) {
    if (::lstat(target.c_str(), &st) != 0) {
      if (errno != ENOENT) {
        plan.error = errno_text(errno);
        return plan;
      }
      st = {};
      st.st_mode = 0;  // absent
      break;
    }
    if (!S_ISLNK(st.st_mode)) break;
    if (hops >= 40) {
      plan.error = "too many levels of symbolic links";
      return plan;
    }
    std::error_code ec;
    fs::path next = fs::read_symlink(target, ec);
    if (ec) {
      plan.error = ec.message();
      return plan;
    }
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  plan.target = target.string();
  // A file the user may not write is refused as the shell's `>` refuses it ("Permission denied"),
  // although the folder would let the temporary be renamed over it.
  if (S_ISREG(st.st_mode)) {
    if (std::string why = unwritable_reason(plan.target); !why.empty()) {
      plan.error = why;
      plan.target.clear();
      return plan;
    }
  }
  if (st.st_mode == 0 || S_ISREG(st.st_mode)) {
    // The folder must exist: say so now rather than as a failed create.
    fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    struct stat ds {};
    if (::stat(dir.c_str(), &ds) != 0) {
      plan.error = errno == ENOENT ? "its folder `" + dir.string() + "` does not exist" : errno_text(errno);
      return plan;
    }
    if (!S_ISDIR(ds.st_mode)) {
      plan.error = "`" + dir.string() + "` is not a folder";
      return plan;
    }
    plan.tmp = plan.target + ".schedc-tmp";
    return plan;
  }
  if (S_ISDIR(st.st_mode)) plan.error = "it is a directory";
  else if (S_ISSOCK(st.st_mode)) plan.error = "it is a socket";
  else plan.in_place = true;  // a device or a FIFO: written, never replaced
  if (!plan.error.empty()) plan.target.clear();
  return plan;
}

std::string write_planned(const OutputPlan& plan, std::string_view content) {
  if (!plan.error.empty()) return plan.error;
  if (plan.in_place) {
    int fd = ::open(plan.target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return errno_text(errno);
    int e = write_all(fd, content);
    if (::close(fd) != 0 && e == 0) e = errno;
    return e == 0 ? std::string() : errno_text(e);
  }
  // A stale temporary (a file or a symlink an earlier run or someone else left) is removed, never
  // written through; the new one is created exclusively.
  struct stat st {};
  if (::lstat(plan.tmp.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "`" + plan.tmp + "` is in the way (a directory)";
    if (::unlink(plan.tmp.c_str()) != 0) return "cannot remove the stale `" + plan.tmp + "`: " + errno_text(errno);
  }
  int fd = ::open(plan.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return errno_text(errno);
  // A replaced file keeps its permissions.
  struct stat old {};
  if (::stat(plan.target.c_str(), &old) == 0 && S_ISREG(old.st_mode)) (void)::fchmod(fd, old.st_mode & 07777);
  int e = write_all(fd, content);
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e == 0 && ::rename(plan.tmp.c_str(), plan.target.c_str()) != 0) e = errno;
  if (e != 0) {
    ::unlink(plan.tmp.c_str());
    return errno_text(e);
  }
  return {};
}

std::string write_file_atomically(const std::string& path, std::string_view content) {
  return write_planned(plan_output(path), content);
}

}  // namespace schedc
