#pragma once
// frontend::parse: tokens -> syntax tree (docs/dsl.md, "Grammar"). Reports every syntax error it
// can find, recovering at the next line, `;` or closing brace, and never reports a token the
// lexer already reported. Recursion (nested lists) is bounded.

#include "frontend/ast.h"
#include "frontend/lexer.h"
#include "frontend/reporter.h"

namespace schedc::frontend {

/// Lists nest at most this deep (`stage_to_rank = [[...], [...]]` needs 2).
inline constexpr int kMaxListDepth = 16;

ast::File parse(const TokenBuffer& tokens, Reporter& report);

}  // namespace schedc::frontend
