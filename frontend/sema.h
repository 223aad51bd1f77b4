#pragma once
// frontend::check: syntax tree -> Spec. Gives every key its meaning (docs/dsl.md, "Keys"), checks
// types and ranges, runs ir::validate on the problem (its errors point at the values the file
// wrote), checks explicit schedules' tokens against the problem, and reads `expect` and
// `runtime`. Reports every error it finds with a named kind; checks that depend on a valid
// problem are skipped when the problem has errors, so that one mistake gives one message.

#include <optional>

#include "frontend/ast.h"
#include "frontend/reporter.h"
#include "frontend/spec.h"

namespace schedc::frontend {

/// Nullopt when any error was reported.
std::optional<Spec> check(const ast::File& file, Reporter& report);

}  // namespace schedc::frontend
