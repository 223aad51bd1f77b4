#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "frontend/lexer.h"
#include "frontend/reporter.h"
#include "profile/profile.h"
#include "support/input.h"

namespace schedc::profile {
namespace {

using frontend::TokenKind;

struct Span {
  size_t begin = 0, end = 0;
  bool found = false;
};

// The top-level `cost { ... }` (from `cost` to its `}`), and where `schedule` starts its line.
struct Layout {
  Span cost;
  std::optional<size_t> schedule_line;
};

Layout find_layout(const SourceManager& sources, int32_t file) {
  frontend::Reporter report(file);
  frontend::TokenBuffer t = frontend::lex(sources, file, report);
  Layout out;
  int depth = 0;
  bool line_start = true;
  for (size_t i = 0; i < t.size() && t.kind(i) != TokenKind::End; ++i) {
    TokenKind k = t.kind(i);
    if (k == TokenKind::LBrace || k == TokenKind::LBracket || k == TokenKind::LParen) ++depth;
    if (k == TokenKind::RBrace || k == TokenKind::RBracket || k == TokenKind::RParen) --depth;
    bool at_line_start = line_start;
    line_start = k == TokenKind::Newline;
    if (depth != 0 || k != TokenKind::Word) continue;
    if (t.text(i) == "schedule" && at_line_start && !out.schedule_line) {
      size_t off = t[i].offset;
      const std::string& text = sources.text(file);
      while (off > 0 && text[off - 1] != '\n') --off;
      out.schedule_line = off;
    }
    if (t.text(i) != "cost" || out.cost.found) continue;
    size_t j = i + 1;
    while (j < t.size() && t.kind(j) == TokenKind::Newline) ++j;
    if (j >= t.size() || t.kind(j) != TokenKind::LBrace) continue;
    int inner = 0;
    for (size_t k2 = j; k2 < t.size() && t.kind(k2) != TokenKind::End; ++k2) {
      if (t.kind(k2) == TokenKind::LBrace) ++inner;
      if (t.kind(k2) == TokenKind::RBrace && --inner == 0) {
        out.cost = Span{t[i].offset, t[k2].offset + t[k2].length, true};
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::string replace_cost_block(const SourceManager& sources, int32_t file, const std::string& block) {
  const std::string& text = sources.text(file);
  Layout l = find_layout(sources, file);
  if (l.cost.found) return text.substr(0, l.cost.begin) + block + text.substr(l.cost.end);
  if (l.schedule_line) return text.substr(0, *l.schedule_line) + block + "\n" + text.substr(*l.schedule_line);
  std::string out = text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + block + "\n";
}

bool write_spec_atomically(const std::string& path, const std::string& expected, const std::string& text,
                           Diagnostics& diags) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = fs::canonical(path, ec);
  if (ec) {
    diags.error(DiagKind::Io, {}, "cannot write `" + path + "`: " + ec.message());
    return false;
  }
  auto fail = [&](const std::string& why, const fs::path& tmp) {
    std::error_code ignored;
    if (!tmp.empty()) fs::remove(tmp, ignored);
    diags.error(DiagKind::Io, {}, "cannot write `" + path + "`: " + why + "; the file is unchanged");
    return false;
  };
  {
    // Read no more than it held: a longer file has changed too.
    auto now = read_input(target.string(), expected.size());
    if (!std::holds_alternative<std::string>(now) || std::get<std::string>(now) != expected)
      return fail("it changed while the costs were measured (run `schedc profile` again)", {});
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) return fail(std::strerror(errno), {});
  fs::path tmp = target;
  tmp += ".schedc-profile-" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
  if (fd < 0) return fail(std::string("cannot create a temporary file next to it (") + std::strerror(errno) + ")", {});
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return fail(why, tmp);
    }
    done += static_cast<size_t>(n);
  }
  // The data is on disk before the rename makes it the spec: a crash leaves the old file or the new.
  if (::fchmod(fd, st.st_mode & 07777) != 0 || ::fsync(fd) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return fail(why, tmp);
  }
  if (::close(fd) != 0) return fail(std::strerror(errno), tmp);
  if (::rename(tmp.c_str(), target.c_str()) != 0) return fail(std::strerror(errno), tmp);
  return true;
}

}  // namespace schedc::profile
