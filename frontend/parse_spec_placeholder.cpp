// Placeholder until the frontend lands (replaced in this session).
#include "frontend/spec.h"
namespace schedc::frontend {
std::optional<Spec> parse_spec(const SourceManager&, int32_t file, Diagnostics& diags) {
  diags.error(DiagKind::Unsupported, SourceLoc{file, 0, 0}, "the .sched frontend is not built yet");
  return std::nullopt;
}
}  // namespace schedc::frontend
