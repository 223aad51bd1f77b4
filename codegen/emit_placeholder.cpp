// Placeholder until the emitters land (replaced in this session).
#include "codegen/emit.h"
#include "codegen/torch_csv.h"
namespace schedc::codegen {
std::string emit_text(const ir::Schedule&, const ir::Timeline&) { return "(text grid not built yet)\n"; }
std::string emit_torch_csv(const ir::Schedule&) { return ""; }
std::string emit_perfetto(const ir::Schedule&, const ir::Timeline&) { return ""; }
std::string emit_svg(const ir::Schedule&, const ir::Timeline&) { return ""; }
std::optional<ir::Schedule> import_torch_csv(const SourceManager&, int32_t file, const ir::Problem&,
                                             const std::map<std::string, SourceLoc>&, Diagnostics& diags) {
  diags.error(DiagKind::Unsupported, SourceLoc{file, 0, 0}, "torch-csv import is not built yet");
  return std::nullopt;
}
}  // namespace schedc::codegen
