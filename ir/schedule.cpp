#include "ir/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace schedc::ir {

bool Schedule::has_overlap() const {
  return std::any_of(overlap.begin(), overlap.end(), [](const auto& v) { return !v.empty(); });
}

bool Schedule::overlap_starts_at(size_t rank, int32_t i) const {
  if (rank >= overlap.size()) return false;
  return std::binary_search(overlap[rank].begin(), overlap[rank].end(), i);
}

size_t Schedule::num_actions() const {
  size_t n = 0;
  for (const auto& r : ranks) n += r.size();
  return n;
}

ScheduleIndex::ScheduleIndex(const Schedule& s) : problem_(&s.problem), pos_(num_action_slots(s.problem)) {
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].size(); ++i) {
      Action a = s.ranks[r][i];
      if (!in_range(s.problem, a)) continue;
      Pos& p = pos_[action_id(s.problem, a).index()];
      if (!p.found()) p = Pos{static_cast<int32_t>(r), static_cast<int32_t>(i)};
    }
}

Action ScheduleIndex::backward_of(MbId mb, StageId stage) const {
  Action b{ActionKind::B, mb, stage};
  Action bw{ActionKind::BW, mb, stage};
  if (contains(b)) return b;
  if (contains(bw)) return bw;
  return problem_->backward == BackwardMode::Fused ? bw : b;
}

llvm::SmallVector<Action, 3> dependencies(const Problem& p, Action a, const ScheduleIndex& index) {
  llvm::SmallVector<Action, 3> deps;
  int32_t s = a.stage.value;
  switch (a.kind) {
    case ActionKind::F:
      if (s > 0) deps.push_back(F(a.mb.value, s - 1));
      break;
    case ActionKind::B:
    case ActionKind::BW:
      deps.push_back(F(a.mb.value, s));
      if (s + 1 < p.num_stages()) deps.push_back(index.backward_of(a.mb, StageId(s + 1)));
      if (index.checkpointed(a.mb, a.stage)) deps.push_back(R(a.mb.value, s));
      break;
    case ActionKind::W: deps.push_back(B(a.mb.value, s)); break;
    case ActionKind::R: deps.push_back(F(a.mb.value, s)); break;
  }
  return deps;
}

double dependency_lag(const Problem& p, Action from, Action to) {
  return rank_of(p, from) == rank_of(p, to) ? 0.0 : p.cost.comm;
}

std::optional<int64_t> exact_scale_of(const std::vector<double>& values) {
  int64_t scale = 1;
  for (int k = 0; k <= kMaxScaleExponent; ++k, scale *= 10) {
    // An integer number of ticks up to the noise of reading a decimal into a double and scaling
    // it (a unit or two in the last place): no value is rounded onto a coarser tick. At this
    // tolerance a value needing more digits than a double holds (0.333333333333333333) has no tick.
    bool exact = std::all_of(values.begin(), values.end(), [&](double v) {
      double x = v * static_cast<double>(scale);
      return std::abs(x - std::round(x)) <= 3 * std::numeric_limits<double>::epsilon() * std::abs(x);
    });
    if (exact) return scale;
  }
  return std::nullopt;
}

int64_t exact_scale(const std::vector<double>& values) { return exact_scale_of(values).value_or(kMaxScale); }

namespace {

void append(std::vector<double>& out, const PerStage& v) {
  if (v.is_uniform()) out.push_back(v.uniform);
  out.insert(out.end(), v.values.begin(), v.values.end());
}

}  // namespace

std::vector<double> time_values(const Problem& p) {
  std::vector<double> v{p.cost.comm, p.cost.action_overhead, p.cost.message_overhead};
  append(v, p.cost.F);
  append(v, p.cost.B);
  append(v, p.cost.W);
  if (p.cost.FB) append(v, *p.cost.FB);
  if (p.cost.R) append(v, *p.cost.R);
  return v;
}

std::vector<double> memory_values(const Problem& p) {
  std::vector<double> v;
  append(v, p.memory.F);
  append(v, p.memory.B);
  append(v, p.memory.W);
  if (p.memory.cap) append(v, *p.memory.cap);
  append(v, p.memory.static_memory);
  if (p.memory.input) append(v, *p.memory.input);
  return v;
}

int64_t time_scale(const Problem& p) { return exact_scale(time_values(p)); }

int64_t memory_scale(const Problem& p) { return exact_scale(memory_values(p)); }

int64_t to_fixed(double value, int64_t scale) {
  return static_cast<int64_t>(std::llround(value * static_cast<double>(scale)));
}

}  // namespace schedc::ir
