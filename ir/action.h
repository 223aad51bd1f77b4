#pragma once
// Actions: F(mb, s), B(mb, s) (input gradient), W(mb, s) (weight gradient), BW(mb, s) (fused
// backward) and R(mb, s) (recompute the forward of a checkpointed F before its backward); their
// text tokens (`F3.s1`), costs, memory deltas and dense ids.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/problem.h"

namespace schedc::ir {

enum class ActionKind : uint8_t { F = 0, B = 1, W = 2, BW = 3, R = 4 };
inline constexpr int kNumActionKinds = 5;

std::string_view to_string(ActionKind k);
bool is_backward(ActionKind k);  // B or BW: produces the input gradient
bool is_forward(ActionKind k);

struct Action {
  ActionKind kind = ActionKind::F;
  MbId mb;
  StageId stage;

  auto operator<=>(const Action&) const = default;
};

inline Action F(int32_t mb, int32_t s) { return {ActionKind::F, MbId(mb), StageId(s)}; }
inline Action B(int32_t mb, int32_t s) { return {ActionKind::B, MbId(mb), StageId(s)}; }
inline Action W(int32_t mb, int32_t s) { return {ActionKind::W, MbId(mb), StageId(s)}; }
inline Action BW(int32_t mb, int32_t s) { return {ActionKind::BW, MbId(mb), StageId(s)}; }
inline Action R(int32_t mb, int32_t s) { return {ActionKind::R, MbId(mb), StageId(s)}; }

/// "F3.s1": kind, microbatch, stage.
std::string format_action(Action a);
/// Parses a token's syntax only (no range checks); nullopt when it is not KIND<mb>.s<stage>.
std::optional<Action> parse_action(std::string_view token);

/// Dense index of an action: (mb * S + stage) * kNumActionKinds + kind. Use with `num_action_slots`.
using ActionId = StrongId<struct ActionTag>;
ActionId action_id(const Problem& p, Action a);
Action action_at(const Problem& p, ActionId id);
size_t num_action_slots(const Problem& p);
/// True when the token's microbatch and stage exist in the problem.
bool in_range(const Problem& p, Action a);

/// Messages the action exchanges with other ranks: a forward receives its input from the previous
/// stage and sends its output to the next one, a backward (B or BW) the gradients the other way,
/// each counted when that stage runs on another rank; a W and an R none.
int32_t messages_of(const Problem& p, Action a);
/// The fixed time the action pays beyond its work: `action_overhead` plus `message_overhead` for
/// each of its messages (a fused BW pays the action overhead once, a B and its W twice).
double overhead_of(const Problem& p, Action a);
/// Duration of one action: its work (BW = B + W of its stage, R = `cost.R`, else F) plus its overhead.
double cost_of(const Problem& p, Action a);
/// Duration of an overlapped F&B unit made of forward `f` and backward `b`: `FB` of the forward's
/// stage plus both members' overheads (each still launches and posts its own messages), or the
/// sum of their costs when `FB` is not given.
double overlap_cost(const Problem& p, Action f, Action b);
/// Activation-memory delta of one action (BW = -F of its stage). An F whose R is in the schedule
/// is checkpointed: it keeps only `memory.input`, and its R adds the rest (F - input); every other
/// F keeps all of `memory.F`. This form is an F that is not checkpointed.
double memory_delta(const Problem& p, Action a);
double memory_delta(const Problem& p, Action a, bool checkpointed);
/// The rank that must run the action.
inline RankId rank_of(const Problem& p, Action a) { return p.rank_of(a.mb, a.stage); }

}  // namespace schedc::ir
