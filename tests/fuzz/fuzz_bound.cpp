// libFuzzer target: the bytes decode into a small problem (1-4 ranks, 1-4 stages per rank on every
// placement that allows it, 1-8 microbatches, both directions, every backward mode, costs from a
// few profiles including 0, 1e-6 and 1e6, optional FB below or above the sums, comm, memory deltas
// of either sign, uniform or per-rank caps, both objectives). Problems ir::validate rejects are
// skipped. Every schedule schedc can make for it (each family, the greedy variants, a few random
// valid orders with and without overlapped units) is verified and simulated, and ir::lower_bound
// must not be above any valid one's objective (docs/solver.md section 1: the bound is a proof).
// A violation prints the problem and the schedule as JSON on stderr and aborts.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ir/json_io.h"
#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/greedy.h"
#include "solver/synth/instance.h"
#include "tests/common/random_schedule.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace schedc;
using namespace schedc::ir;

using fuzz::Bytes;

// Profiles: small integers and halves, then the extremes the model allows.
constexpr double kCosts[] = {1, 2, 0.5, 3, 0, 1e-6, 1e6, 0.1, 1.5, 4, 2.5, 1e-3, 7, 1e5, 0.3, 1};
constexpr double kComm[] = {0, 0.1, 0.5, 1, 1e-6, 2, 1e6, 0.25};
constexpr double kFbFactor[] = {0, 0.3, 0.5, 0.6, 0.75, 0.9, 1, 1.1, 1.5, 2};
constexpr double kMemF[] = {1, 0.5, 2, 0, 1e-6, 1e6, 3, 1};
constexpr double kMemB[] = {-0.5, 0, -1, 0.5, -2, -1e-6, 1, -0.25};
constexpr double kMemW[] = {-0.5, -1, 0, 0.5, -2, 1, -0.25, -1e6};
constexpr double kCapFrac[] = {0, 0.5, 0.25, 0.75};

PerStage costs(Bytes& in, int stages, const double (&table)[16]) {
  if (in.pick(3) != 0) return PerStage::of(in.from(table));
  std::vector<double> v;
  for (int s = 0; s < stages; ++s) v.push_back(in.from(table));
  return PerStage::list(v);
}

Problem decode(Bytes& in) {
  Problem p;
  p.ranks = 1 + in.pick(4);
  switch (in.pick(3)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = 1 + in.pick(4); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    default: p.placement = PlacementKind::Wave, p.stages_per_rank = 2 + in.pick(3); break;
  }
  const int dir_pick = in.pick(8);
  p.directions = dir_pick < 2 ? 2 : dir_pick == 2 ? 3 + in.pick(2) : 1;
  p.microbatches = p.directions > 1 ? p.directions * (1 + in.pick(4)) : 1 + in.pick(8);
  p.backward = static_cast<BackwardMode>(in.pick(3));
  const int S = p.num_stages();
  p.cost.F = costs(in, S, kCosts);
  p.cost.B = costs(in, S, kCosts);
  p.cost.W = costs(in, S, kCosts);
  p.cost.comm = in.from(kComm);
  // FB relative to what a unit competes with: F + B, or F + B + W (a BW), scaled below or above.
  if (int fb = in.pick(4); fb != 0) {
    const bool with_w = in.pick(2) == 1;
    auto fb_of = [&](int s) {
      auto i = static_cast<size_t>(s);
      double base = p.cost.F.at(i) + p.cost.B.at(i) + (with_w ? p.cost.W.at(i) : 0);
      return std::min(in.from(kFbFactor) * base, kMaxMagnitude);
    };
    if (fb == 1) {
      p.cost.FB = PerStage::of(fb_of(0));
    } else {
      std::vector<double> v;
      for (int s = 0; s < S; ++s) v.push_back(fb_of(s));
      p.cost.FB = PerStage::list(v);
    }
  }
  p.memory.F = in.pick(4) == 0 ? costs(in, S, kCosts) : PerStage::of(in.from(kMemF));
  p.memory.B = PerStage::of(in.from(kMemB));
  p.memory.W = PerStage::of(in.from(kMemW));
  // Caps in units of the largest forward activation, so that they bind without being infeasible.
  const double unit = std::max(p.memory.F.max(), 1e-6);
  auto cap_value = [&] { return unit * (1 + in.pick(8) + in.from(kCapFrac)); };
  switch (in.pick(4)) {
    case 0: break;
    case 1: p.memory.cap = PerStage::of(cap_value()); break;
    case 2: {
      std::vector<double> v;
      for (int r = 0; r < p.ranks; ++r) v.push_back(cap_value());
      p.memory.cap = PerStage::list(v);
      break;
    }
    default: p.memory.cap = PerStage::of(unit * p.ranks); break;
  }
  if (in.pick(4) == 0) p.objective = Objective::MaxSpan;
  // Recomputation one time in four (where no forward frees memory): `all` or `allowed`, a kept
  // input of 0..F in quarters, R's cost the forward's or drawn.
  bool forwards_add = true;
  for (int s = 0; s < S; ++s) forwards_add &= p.memory.F.at(static_cast<size_t>(s)) >= 0;
  if (in.pick(4) == 0 && forwards_add) {
    p.recompute = in.pick(3) == 0 ? Recompute::All : Recompute::Allowed;
    std::vector<double> input;
    for (int s = 0; s < S; ++s) input.push_back(p.memory.F.at(static_cast<size_t>(s)) * in.pick(5) / 4.0);
    p.memory.input = PerStage::list(input);
    if (in.pick(2) == 1) p.cost.R = costs(in, S, kCosts);
  }
  return p;
}

[[noreturn]] void report(const char* what, const std::string& name, const Schedule& s, const LowerBound* lb,
                         double value) {
  std::fprintf(stderr, "fuzz_bound: %s: %s\nproblem: %s\n", what, name.c_str(), problem_json(s.problem).c_str());
  if (lb) std::fprintf(stderr, "bound %.17g (%s), objective %.17g\n", lb->value, lb->reason.c_str(), value);
  std::fprintf(stderr, "%s\n", write_schedule_json(s, nullptr).c_str());
  std::abort();
}

// Verified schedules must simulate, and none may beat the bound (compared in ticks, exactly as the
// bound is computed). Schedules seen before (greedy variants often agree) are skipped.
class Checker {
 public:
  explicit Checker(const LowerBound& lb) : lb_(lb) {}

  void operator()(const Schedule& s, const std::string& name, bool must_be_valid) {
    const auto& units = s.has_overlap() ? s.overlap : kNoUnits;
    for (const auto& [ranks, overlap] : seen_)
      if (ranks == s.ranks && overlap == units) return;
    seen_.emplace_back(s.ranks, units);
    if (!verify(s).empty()) {
      if (must_be_valid) report("a family returned a schedule that ir::verify rejects", name, s, nullptr, 0);
      return;
    }
    SimResult sim = simulate(s);
    if (!sim.timeline) report("a verified schedule deadlocks in simulation", name, s, nullptr, 0);
    const double value = sim.timeline->metrics.objective_value(s.problem.objective);
    const int64_t scale = time_scale(s.problem);
    if (!std::isfinite(lb_.value) || lb_.value < 0 || to_fixed(lb_.value, scale) > to_fixed(value, scale))
      report("the lower bound is above a valid schedule's objective", name, s, &lb_, value);
  }

 private:
  inline static const std::vector<std::vector<int32_t>> kNoUnits;
  const LowerBound& lb_;
  std::vector<std::pair<std::vector<std::vector<Action>>, std::vector<std::vector<int32_t>>>> seen_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const Problem p = decode(in);
  if (!validate(p).empty()) return 0;
  const LowerBound lb = lower_bound(p);
  Checker check(lb);

  for (const solver::FamilyInfo& f : solver::families()) {
    Diagnostics scratch;
    if (auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, scratch)) check(*s, f.name, true);
  }

  const solver::Instance inst = solver::build_instance(p, {0, /*symmetry=*/false});
  std::vector<solver::GreedyVariant> variants = solver::greedy_variants(inst);
  // Zero Bubble rules with parameters from the input (solver::zb_variants builds ~350 and
  // deduplicates them by name, which would dominate the cost of an execution).
  for (int k = 0; k < 3; ++k) {
    solver::GreedyVariant v;
    v.zb = true;
    v.tol_f = in.pick(4) - 1;
    v.tol_w = in.pick(4) - 1;
    const int limit = in.pick(3);
    if (limit == 1) v.inflight_base = 1 + in.pick(3 * p.ranks * p.stages_per_rank), v.inflight_slope = 0.5 * in.pick(6);
    if (limit == 2) v.timed_warmup = in.pick(3);
    variants.push_back(v);
  }
  for (const solver::GreedyVariant& v : variants)
    if (auto orders = solver::greedy_orders(inst, v)) check(solver::to_schedule(inst, *orders), v.name(), false);

  // Random valid orders reach what no heuristic builds: mixed BW choices, overlapped units.
  test::Rng rng(in.seed());
  check(fuzz::random_order(p, rng, 0), "random", false);
  Schedule paired = fuzz::random_order(p, rng, 60);
  test::add_random_overlap(paired, rng);
  check(paired, "random with overlapped units", false);
  return 0;
}
