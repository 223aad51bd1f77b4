#pragma once
// Import of PyTorch pipelining's compute-only CSV (the export is codegen::emit_torch_csv), and
// the action letters both use.

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ir/schedule.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::codegen {

/// torch's letter for each action kind, indexed by ir::ActionKind: `F`, `I` (input-gradient
/// backward, our B), `W`, and `B` (full backward, our BW).
inline constexpr std::array<char, ir::kNumActionKinds> kTorchLetters = {'F', 'I', 'W', 'B'};

/// The action kind torch letter `c` names; nullopt for any other character.
inline std::optional<ir::ActionKind> torch_action_kind(char c) {
  size_t i = std::string_view(kTorchLetters.data(), kTorchLetters.size()).find(c);
  if (i == std::string_view::npos) return std::nullopt;
  return static_cast<ir::ActionKind>(i);
}

/// An action as torch writes it: stage, letter, microbatch (`2I5`).
inline std::string torch_token(ir::Action a) {
  return std::to_string(a.stage.value) + kTorchLetters[static_cast<size_t>(a.kind)] + std::to_string(a.mb.value);
}

/// Reads `file` into a schedule. The number of ranks, stages, microbatches, the placement (looped,
/// vshape, else custom) and the backward mode (fused, split or mixed by the tokens used) are
/// inferred; the other problem fields come from `base`. A field listed in `given` (by its
/// frontend::Spec::given name) is taken from `base` and must agree with the file. Errors are
/// reported at the cell (`bad-csv`, `bad-token`, ...).
std::optional<ir::Schedule> import_torch_csv(const SourceManager& sources, int32_t file, const ir::Problem& base,
                                             const std::map<std::string, SourceLoc>& given, Diagnostics& diags);

}  // namespace schedc::codegen
