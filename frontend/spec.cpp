#include "frontend/spec.h"

namespace schedc::frontend {

SourceLoc Spec::loc_of(ir::Field field) const {
  auto it = given.find(field);
  if (it != given.end()) return it->second;
  return SourceLoc{file, 0, 0};
}

}  // namespace schedc::frontend
