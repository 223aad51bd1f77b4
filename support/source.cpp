#include "support/source.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace schedc {

int32_t SourceManager::add(std::string path, std::string text) {
  assert(text.size() < UINT32_MAX && "a source buffer of 4 GiB or more (inputs are read up to 256 MiB)");
  File f{std::move(path), std::move(text), {0}};
  const char* begin = f.text.data();
  const char* end = begin + f.text.size();
  for (const char* p = begin; (p = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p))));)
    f.line_starts.push_back(static_cast<uint32_t>(++p - begin));
  files_.push_back(std::move(f));
  return static_cast<int32_t>(files_.size() - 1);
}

std::string_view SourceManager::line_text(int32_t file, int32_t line) const {
  if (file < 0 || static_cast<size_t>(file) >= files_.size() || line < 1) return {};
  const File& f = files_[static_cast<size_t>(file)];
  if (static_cast<size_t>(line) > f.line_starts.size()) return {};
  size_t begin = f.line_starts[static_cast<size_t>(line - 1)];
  if (begin > f.text.size()) return {};
  size_t end = f.text.find('\n', begin);
  if (end == std::string::npos) end = f.text.size();
  std::string_view s(f.text.data() + begin, end - begin);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

SourceLoc SourceManager::loc_at(int32_t file, size_t offset) const {
  const File& f = files_[static_cast<size_t>(file)];
  offset = std::min(offset, f.text.size());
  auto it = std::upper_bound(f.line_starts.begin(), f.line_starts.end(), static_cast<uint32_t>(offset));
  size_t line = static_cast<size_t>(it - f.line_starts.begin());
  size_t col = offset - f.line_starts[line - 1] + 1;
  return SourceLoc{file, static_cast<int32_t>(line), static_cast<int32_t>(col)};
}

}  // namespace schedc
