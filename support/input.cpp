#include "support/input.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace schedc {
namespace {

std::string describe_limit(size_t limit) {
  constexpr size_t kMiB = size_t{1} << 20;
  if (limit % kMiB == 0) return std::to_string(limit / kMiB) + " MiB";
  return std::to_string(limit) + " bytes";
}

std::string shown_path(const std::string& path) { return path == kStdinPath ? std::string(kStdinName) : path; }

std::string lowercase_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

ReadFailure too_large(size_t limit, std::optional<size_t> size) {
  std::string most = describe_limit(limit) + " schedc reads from one input";
  if (size) return {DiagKind::TooLarge, "the file has " + std::to_string(*size) + " bytes, more than the " + most};
  return {DiagKind::TooLarge, "the input is larger than the " + most + "; stopped reading"};
}

// Reads `fd` to its end, or until more than `limit` bytes have come (`over`); `hint` is the size
// expected. Returns false on a read error.
bool read_all(int fd, size_t limit, size_t hint, std::string& out, bool& over) {
  over = false;
  out.resize(std::min(std::max<size_t>(hint, 65536), limit + 1));
  size_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (used > limit) {
        over = true;
        std::string().swap(out);
        return true;
      }
      out.resize(std::min(out.size() * 2, limit + 1));
    }
    ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n > 0) {
      used += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking standard input: wait for it
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  out.resize(used);
  return true;
}

}  // namespace

std::variant<std::string, ReadFailure> read_input(const std::string& path, size_t limit) {
  const std::string shown = "`" + shown_path(path) + "`";
  std::string text;
  bool over = false;
  if (path == kStdinPath) {
    if (!read_all(STDIN_FILENO, limit, 0, text, over))
      return ReadFailure{DiagKind::Io, "cannot read standard input: " + lowercase_first(std::strerror(errno))};
    if (over) return too_large(limit, std::nullopt);
    return text;
  }
  if (path.empty()) return ReadFailure{DiagKind::Io, "cannot read a file with an empty name"};
  // Non-blocking, so that opening a FIFO with no writer does not wait for one.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    std::string why = err == ENOENT ? "no such file" : lowercase_first(std::strerror(err));
    return ReadFailure{DiagKind::Io, "cannot read " + shown + ": " + why};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool is_dir = S_ISDIR(st.st_mode);
    ::close(fd);
    std::string why = std::string("it is ") + file_type_name(st.st_mode);
    if (!is_dir) why += ", not a regular file (to read a stream, pass `-` and redirect it to standard input)";
    return ReadFailure{DiagKind::Io, "cannot read " + shown + ": " + why};
  }
  auto size = static_cast<size_t>(st.st_size);
  if (size > limit) {
    ::close(fd);
    return too_large(limit, size);
  }
  // One byte more than the size, to see the end of the file (or that it grew) in one pass.
  bool ok = read_all(fd, limit, size + 1, text, over);
  int err = errno;
  ::close(fd);
  if (!ok) return ReadFailure{DiagKind::Io, "cannot read " + shown + ": " + lowercase_first(std::strerror(err))};
  if (over) return too_large(limit, std::nullopt);  // it grew while being read
  return text;
}

int32_t read_source(SourceManager& sources, Diagnostics& diags, const std::string& path, size_t limit) {
  auto r = read_input(path, limit);
  if (auto* text = std::get_if<std::string>(&r)) return sources.add(shown_path(path), std::move(*text));
  ReadFailure& f = std::get<ReadFailure>(r);
  if (f.kind == DiagKind::Io) {
    diags.error(f.kind, {}, std::move(f.message));
    return -1;
  }
  // The file exists and is too big: say so against its name, as for any other error in it.
  int32_t file = sources.add(shown_path(path), std::string());
  diags.error(f.kind, SourceLoc{file, 0, 0}, std::move(f.message));
  return -1;
}

}  // namespace schedc
