#pragma once
// The `provenance` object of schedule JSON (docs/formats.md, docs/solver.md): written with the
// format's key order, read leniently. ir's JSON code only; others use json_io.h.

#include <optional>

#include <nlohmann/json.hpp>

#include "ir/provenance.h"

namespace schedc::ir {

/// `p` as the document's `provenance` object.
nlohmann::ordered_json provenance_object(const Provenance& p);

/// The provenance `j` holds. Lenient, as it has always been (it was ignored): nullopt when `j` is
/// not an object; members of unknown names or of the wrong type are skipped, never errors.
std::optional<Provenance> read_provenance(const nlohmann::ordered_json& j);

}  // namespace schedc::ir
