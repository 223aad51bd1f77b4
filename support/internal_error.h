#pragma once
// The one channel for bugs in schedc (docs/style.md, "Errors"): a broken invariant prints
// `schedc: internal error: MESSAGE (at FILE:LINE; ...)` on stderr and ends the process with exit
// code 3 (docs/design.md section 5). User errors never come here; they are diagnostics.

#include <string_view>

namespace schedc {

/// Prints the internal-error line for `message` at `file`:`line` and exits with code 3. Use
/// SCHEDC_INTERNAL_ERROR, which fills in the location.
[[noreturn]] void internal_error(const char* file, int line, std::string_view message);

/// The exit code of an internal error (docs/design.md section 5).
inline constexpr int kInternalErrorExitCode = 3;

}  // namespace schedc

/// Reports a bug in schedc (an invariant that does not hold) and exits with code 3. `message`
/// says what went wrong in schedc's terms; it is any std::string_view-convertible expression.
#define SCHEDC_INTERNAL_ERROR(message) ::schedc::internal_error(__FILE__, __LINE__, (message))
