#pragma once
// Small builders shared by the unit tests: orders and schedules from action tokens, and the
// uniform problems many tests start from.

#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "ir/schedule.h"
#include "ir/simulate.h"

namespace schedc::test {

/// Parses whitespace-separated tokens ("F0.s0 BW0.s0") into an order.
inline std::vector<ir::Action> order(const std::string& text) {
  std::vector<ir::Action> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) out.push_back(*ir::parse_action(text.substr(i, j - i)));
    i = j;
  }
  return out;
}

/// A schedule of `p` with one order of tokens per rank.
inline ir::Schedule schedule(const ir::Problem& p, std::initializer_list<std::string> ranks) {
  ir::Schedule s;
  s.problem = p;
  for (const auto& r : ranks) s.ranks.push_back(order(r));
  return s;
}

/// pp ranks, m microbatches, backward `b`, the same costs F, B, W on every stage (comm 0).
inline ir::Problem problem(int pp, int m, ir::BackwardMode b, double F = 1, double B = 1, double W = 1) {
  ir::Problem p;
  p.ranks = pp;
  p.microbatches = m;
  p.backward = b;
  p.cost.F = ir::PerStage::of(F);
  p.cost.B = ir::PerStage::of(B);
  p.cost.W = ir::PerStage::of(W);
  return p;
}

/// The same memory deltas F, B, W on every stage.
inline void set_memory(ir::Problem& p, double F, double B, double W) {
  p.memory.F = ir::PerStage::of(F);
  p.memory.B = ir::PerStage::of(B);
  p.memory.W = ir::PerStage::of(W);
}

/// Two directions, split backward, F = B = 2, W = 1, comm 0.1, memory F = 1, B = W = -0.5: the
/// bidirectional problems of the capped grid.
inline ir::Problem two_directions(int pp, int m) {
  ir::Problem p = problem(pp, m, ir::BackwardMode::Split, 2, 2, 1);
  p.directions = 2;
  p.cost.comm = 0.1;
  set_memory(p, 1, -0.5, -0.5);
  return p;
}

/// `p` with every time value (costs, comm, overheads) multiplied by `time` and every memory value
/// (deltas, static, input, cap) by `memory`: the same problem stated in another unit.
inline ir::Problem scaled(ir::Problem p, double time, double memory) {
  auto scale = [](ir::PerStage& v, double k) {
    v.uniform *= k;
    for (double& x : v.values) x *= k;
  };
  scale(p.cost.F, time), scale(p.cost.B, time), scale(p.cost.W, time);
  if (p.cost.FB) scale(*p.cost.FB, time);
  if (p.cost.R) scale(*p.cost.R, time);
  p.cost.comm *= time, p.cost.action_overhead *= time, p.cost.message_overhead *= time;
  scale(p.memory.F, memory), scale(p.memory.B, memory), scale(p.memory.W, memory);
  scale(p.memory.static_memory, memory);
  if (p.memory.input) scale(*p.memory.input, memory);
  if (p.memory.cap) scale(*p.memory.cap, memory);
  return p;
}

/// The objective value of s (its problem's objective), or infinity when it deadlocks.
inline double objective_of(const ir::Schedule& s) {
  const ir::SimResult sim = ir::simulate(s);
  return sim.timeline ? sim.timeline->metrics.objective_value(s.problem.objective)
                      : std::numeric_limits<double>::infinity();
}

}  // namespace schedc::test
