#pragma once
// Reading the files schedc is given (specs, schedule JSON, torch-csv, measurements): whole, up to a
// stated size, and only from regular files or standard input, so that no input can exhaust memory
// or block the compiler.

#include <cstddef>
#include <string>
#include <variant>

#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc {

/// The most bytes schedc reads from one input (docs/formats.md, "Limits").
inline constexpr size_t kMaxInputBytes = size_t{256} << 20;

/// The path that names standard input, and how diagnostics name it.
inline constexpr std::string_view kStdinPath = "-";
inline constexpr std::string_view kStdinName = "<stdin>";

/// Why an input could not be read: `io` (missing, unreadable, not a regular file) or `too-large`.
struct ReadFailure {
  DiagKind kind = DiagKind::Io;
  std::string message;
};

/// The whole text of `path` ("-": standard input). By name, only regular files are read: a
/// directory, FIFO, device or socket is refused at once (pipe it in as `-` instead), so that
/// reading never blocks. More than `limit` bytes is a failure, found without reading them all.
std::variant<std::string, ReadFailure> read_input(const std::string& path, size_t limit = kMaxInputBytes);

/// read_input into `sources`; returns the file id, or -1 after reporting the failure (a
/// `too-large` input is reported against its file: `path: error: ...`).
int32_t read_source(SourceManager& sources, Diagnostics& diags, const std::string& path, size_t limit = kMaxInputBytes);

}  // namespace schedc
