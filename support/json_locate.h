#pragma once
// Maps a JSON pointer (e.g. "/ranks/2/5") to its byte offset in the document text, so that errors
// found after nlohmann has parsed a document can still point at `file:line:col`.

#include <cstddef>
#include <string_view>
#include <vector>

namespace schedc {

/// Offset of the value at `pointer` in `text`; the deepest existing ancestor's offset when the
/// path does not exist all the way, and 0 for an unreadable document.
size_t json_locate(std::string_view text, std::string_view pointer);

/// The offsets of the elements of the arrays in the array at `pointer` (`/ranks`: out[r][i] is
/// json_locate(text, "/ranks/r/i")), in one pass over the text; empty when there is no such
/// array. An element that is not an array has no offsets.
std::vector<std::vector<size_t>> json_locate_elements(std::string_view text, std::string_view pointer);

/// The offset of the first `[` or `{` in `text` that opens a level deeper than `max_depth`, or
/// npos. A quick pass before parsing: nlohmann's parser keeps up, but recursive walks of the
/// parsed value (dump, compare, destroy) would overflow the stack on a deep document.
size_t json_too_deep(std::string_view text, size_t max_depth);

}  // namespace schedc
