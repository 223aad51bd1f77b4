#pragma once
// Compiling generated executors into a cache keyed by content: the same files, stage sources,
// compiler and runtime give the same entry, built once.

#include <optional>
#include <string>
#include <vector>

#include "codegen/emit_cpp.h"
#include "tools/schedc/flags.h"
#include "tools/schedc/session.h"

namespace schedc::driver {

/// Compiles the emitted files with the compiler schedc was configured with, against schedrt, and
/// returns the executable's path in the cache (reused when the same content was built before).
/// Compiler errors are reported with kind `build`. Temporaries in the cache left by a schedc that
/// is gone are removed first; an interrupted build removes its own and reports nothing.
std::optional<std::string> build_executor(Session& s, const std::vector<codegen::EmittedFile>& files,
                                          const BuildSettings& settings);

}  // namespace schedc::driver
