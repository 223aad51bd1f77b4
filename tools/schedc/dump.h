#pragma once
// What --dump-after prints after each phase (docs/driver.md, "Dumps"): the data the phase made, in
// the form a reader or a script can use. Dumps are for debugging: their form may change.

#include <string>
#include <string_view>

#include "tools/schedc/driver.h"

namespace schedc::driver {

/// What the dump after `p` shows, in a few words (for --help and the dump's header line).
std::string_view dump_description(Phase p);

/// The dump after `p`, which `c` has run: a header line `=== after PHASE: WHAT ===`, then the
/// data. Ends with a newline.
std::string dump(const Session& s, const Compilation& c, Phase p);

}  // namespace schedc::driver
