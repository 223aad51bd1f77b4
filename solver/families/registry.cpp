// Placeholder until the families land (replaced in this session).
#include "solver/families/families.h"
namespace schedc::solver {
const std::vector<FamilyInfo>& families() { static const std::vector<FamilyInfo> v; return v; }
const FamilyInfo* find_family(std::string_view) { return nullptr; }
void apply_family_defaults(const FamilyInfo&, const std::vector<std::string>&, ir::Problem&) {}
std::optional<ir::Schedule> generate_family(std::string_view name, const ir::Problem&, const ir::Params&, SourceLoc loc,
                                            Diagnostics& diags) {
  diags.error(DiagKind::UnknownFamily, loc, "unknown family " + backtick(name));
  return std::nullopt;
}
}  // namespace schedc::solver
