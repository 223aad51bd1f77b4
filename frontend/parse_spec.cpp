// frontend::parse_spec: the frontend's phases in a row. Sema runs only on a file without syntax
// errors: a tree with holes would make it report keys as missing that the file did write.

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "frontend/reporter.h"
#include "frontend/sema.h"
#include "frontend/spec.h"

namespace schedc::frontend {

std::optional<Spec> parse_spec(const SourceManager& sources, int32_t file, Diagnostics& diags) {
  Reporter report(file);
  TokenBuffer tokens = lex(sources, file, report);
  ast::File tree = parse(tokens, report);
  std::optional<Spec> spec;
  if (report.error_count() == 0) spec = check(tree, report);
  report.flush(diags);
  return spec;
}

}  // namespace schedc::frontend
