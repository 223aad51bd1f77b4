#pragma once
// Actions as PyTorch pipelining's CSV spells them: `{stage}{letter}{microbatch}` (`2I5`). Shared by
// the torch-csv reader (frontend/torch_csv.h) and the writers (codegen/emit.h).

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "ir/action.h"

namespace schedc::ir {

/// torch's letter for each action kind, indexed by ActionKind: `F`, `I` (input-gradient
/// backward, our B), `W`, and `B` (full backward, our BW). torch has no recomputation action: the
/// writers refuse a schedule with an R.
inline constexpr std::array<char, 4> kTorchLetters = {'F', 'I', 'W', 'B'};

/// The action kind torch letter `c` names; nullopt for any other character.
inline std::optional<ActionKind> torch_action_kind(char c) {
  size_t i = std::string_view(kTorchLetters.data(), kTorchLetters.size()).find(c);
  if (i == std::string_view::npos) return std::nullopt;
  return static_cast<ActionKind>(i);
}

/// An action as torch writes it: stage, letter, microbatch (`2I5`).
inline std::string torch_token(Action a) {
  return std::to_string(a.stage.value) + kTorchLetters[static_cast<size_t>(a.kind)] + std::to_string(a.mb.value);
}

}  // namespace schedc::ir
