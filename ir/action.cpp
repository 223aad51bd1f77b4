#include "ir/action.h"

#include <cassert>
#include <charconv>

namespace schedc::ir {

std::string_view to_string(ActionKind k) {
  switch (k) {
    case ActionKind::F: return "F";
    case ActionKind::B: return "B";
    case ActionKind::W: return "W";
    case ActionKind::BW: return "BW";
    case ActionKind::R: return "R";
  }
  return "F";
}

bool is_backward(ActionKind k) { return k == ActionKind::B || k == ActionKind::BW; }
bool is_forward(ActionKind k) { return k == ActionKind::F; }

std::string format_action(Action a) {
  std::string s(to_string(a.kind));
  s += std::to_string(a.mb.value);
  s += ".s";
  s += std::to_string(a.stage.value);
  return s;
}

namespace {

// Parses a non-negative decimal int32 with no sign and no leading '+'.
std::optional<int32_t> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int32_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Action> parse_action(std::string_view t) {
  Action a;
  if (t.starts_with("BW")) {
    a.kind = ActionKind::BW;
    t.remove_prefix(2);
  } else if (!t.empty() && (t[0] == 'F' || t[0] == 'B' || t[0] == 'W' || t[0] == 'R')) {
    a.kind = t[0] == 'F' ? ActionKind::F : t[0] == 'B' ? ActionKind::B : t[0] == 'W' ? ActionKind::W : ActionKind::R;
    t.remove_prefix(1);
  } else {
    return std::nullopt;
  }
  size_t dot = t.find(".s");
  if (dot == std::string_view::npos) return std::nullopt;
  auto mb = parse_index(t.substr(0, dot));
  auto st = parse_index(t.substr(dot + 2));
  if (!mb || !st) return std::nullopt;
  a.mb = MbId(*mb);
  a.stage = StageId(*st);
  return a;
}

ActionId action_id(const Problem& p, Action a) {
  assert(in_range(p, a) && "action out of range");
  int64_t id = (int64_t{a.mb.value} * p.num_stages() + a.stage.value) * kNumActionKinds + static_cast<int>(a.kind);
  return ActionId(static_cast<int32_t>(id));
}

Action action_at(const Problem& p, ActionId id) {
  int32_t kind = id.value % kNumActionKinds;
  int32_t rest = id.value / kNumActionKinds;
  return Action{static_cast<ActionKind>(kind), MbId(rest / p.num_stages()), StageId(rest % p.num_stages())};
}

size_t num_action_slots(const Problem& p) {
  return static_cast<size_t>(p.microbatches) * static_cast<size_t>(p.num_stages()) * kNumActionKinds;
}

bool in_range(const Problem& p, Action a) {
  return a.mb.value >= 0 && a.mb.value < p.microbatches && a.stage.value >= 0 && a.stage.value < p.num_stages();
}

int32_t messages_of(const Problem& p, Action a) {
  if (a.kind == ActionKind::W || a.kind == ActionKind::R) return 0;
  const int32_t s = a.stage.value, d = p.direction_of(a.mb);
  const RankId here = p.rank_of(d, a.stage);
  int32_t n = 0;
  for (int32_t t : {s - 1, s + 1})
    if (t >= 0 && t < p.num_stages() && p.rank_of(d, StageId(t)) != here) ++n;
  return n;
}

double overhead_of(const Problem& p, Action a) {
  if (!p.cost.has_overheads()) return 0;
  return p.cost.action_overhead + p.cost.message_overhead * messages_of(p, a);
}

double cost_of(const Problem& p, Action a) {
  size_t s = a.stage.index();
  double work = 0;
  switch (a.kind) {
    case ActionKind::F: work = p.cost.F.at(s); break;
    case ActionKind::B: work = p.cost.B.at(s); break;
    case ActionKind::W: work = p.cost.W.at(s); break;
    case ActionKind::BW: work = p.cost.B.at(s) + p.cost.W.at(s); break;
    case ActionKind::R: work = p.cost.R ? p.cost.R->at(s) : p.cost.F.at(s); break;
  }
  return work + overhead_of(p, a);
}

double overlap_cost(const Problem& p, Action f, Action b) {
  if (p.cost.FB) return p.cost.FB->at(f.stage.index()) + overhead_of(p, f) + overhead_of(p, b);
  return cost_of(p, f) + cost_of(p, b);
}

double memory_delta(const Problem& p, Action a) { return memory_delta(p, a, false); }

double memory_delta(const Problem& p, Action a, bool checkpointed) {
  size_t s = a.stage.index();
  const double kept = p.memory.input ? p.memory.input->at(s) : 0;
  switch (a.kind) {
    case ActionKind::F: return checkpointed ? kept : p.memory.F.at(s);
    case ActionKind::R: return p.memory.F.at(s) - kept;
    case ActionKind::B: return p.memory.B.at(s);
    case ActionKind::W: return p.memory.W.at(s);
    case ActionKind::BW: return -p.memory.F.at(s);
  }
  return 0;
}

}  // namespace schedc::ir
