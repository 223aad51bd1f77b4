#pragma once
// Source buffers (spec files, JSON documents, CSV files) and positions inside them, so that every
// diagnostic can print `file:line:col` with the source line and a caret.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace schedc {

/// A position in a source buffer; `line` and `col` are 1-based, 0 when unknown.
struct SourceLoc {
  int32_t file = -1;
  int32_t line = 0;
  int32_t col = 0;

  bool has_file() const { return file >= 0; }
  bool has_line() const { return file >= 0 && line > 0; }
};

/// Owns the text of every file the compiler reads; files are referred to by their index.
class SourceManager {
 public:
  /// Adds a buffer (under 4 GiB; inputs are read up to support/input.h's kMaxInputBytes) and
  /// returns its file id.
  int32_t add(std::string path, std::string text);
  const std::string& path(int32_t file) const { return files_[static_cast<size_t>(file)].path; }
  const std::string& text(int32_t file) const { return files_[static_cast<size_t>(file)].text; }
  int32_t size() const { return static_cast<int32_t>(files_.size()); }
  /// The text of 1-based `line` without its line terminator ("" when out of range).
  std::string_view line_text(int32_t file, int32_t line) const;
  /// The location of byte `offset` in `file`.
  SourceLoc loc_at(int32_t file, size_t offset) const;

 private:
  struct File {
    std::string path;
    std::string text;
    std::vector<uint32_t> line_starts;  // 4 bytes a line: a file of empty lines stays small
  };
  std::vector<File> files_;
};

}  // namespace schedc
