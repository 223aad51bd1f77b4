#include "solver/synth/prove.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <z3++.h>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/encode.h"
#include "solver/synth/instance.h"
#include "support/numbers.h"

namespace schedc::solver {

namespace {

// A claim made by the solver came from a model under its 80 000-literal budget at a horizon no
// smaller than ours; this only keeps a hand-written claim on a huge problem from exhausting memory.
constexpr int64_t kMaxLiterals = 400'000;

// A backstop: Z3's own resource counter, far above what the wall-clock limit lets it reach.
constexpr unsigned kRlimit = 4'000'000'000u;

std::string objective_name(const ir::Problem& p) {
  return p.objective == ir::Objective::Makespan ? "makespan" : "max rank span";
}

unsigned timeout_ms(double seconds) {
  double ms = std::max(1.0, seconds * 1000);
  return ms >= 4e9 ? 4'000'000'000u : static_cast<unsigned>(ms);
}

// The literals the model would have: each action's window.
int64_t window_literals(const Instance& inst, int32_t horizon) {
  int64_t n = 0;
  for (size_t a = 0; a < inst.size(); ++a) n += std::max(0, horizon - inst.dur[a] - inst.tail[a] - inst.head[a]);
  return n;
}

// Is every value within a thousandth of a tick of a whole tick? Then sums of up to three of them
// round to the sum of their rounded ticks.
bool whole_ticks(const ir::PerStage& v, int32_t stages, int64_t scale) {
  for (int32_t s = 0; s < stages; ++s) {
    double x = v.at(static_cast<size_t>(s)) * static_cast<double>(scale);
    if (std::abs(x - std::round(x)) > 1e-3) return false;
  }
  return true;
}

class Prover {
 public:
  Prover(const ir::Schedule& s, const ProveOptions& o) : s_(s), p_(s.problem), o_(o) {}

  ProofCheck run();

 private:
  // Z3 on the exact grid, one step below the objective. Fills r_ (after the bound's facts).
  void exact_probe(int64_t objective_ticks);
  void unknown(const std::string& why) {
    r_.verdict = ProofVerdict::Unknown;
    r_.message = below_ + "; " + why;
  }

  const ir::Schedule& s_;
  const ir::Problem& p_;
  const ProveOptions& o_;
  ProofCheck r_;
  std::string below_;  // "the bound (...) is X, below the makespan Y"
};

ProofCheck Prover::run() {
  auto issues = ir::verify(s_);
  if (!issues.empty()) {
    r_.verdict = ProofVerdict::Refuted;
    r_.message = "the schedule is not valid: " + issues[0].message;
    return r_;
  }
  ir::SimResult sim = ir::simulate(s_);
  if (!sim.timeline) {  // verify accepted it, so this is ours
    r_.verdict = ProofVerdict::Internal;
    r_.message = "a verified schedule did not complete in simulation";
    return r_;
  }
  const ir::Timeline& t = *sim.timeline;
  r_.objective = t.metrics.objective_value(p_.objective);
  ir::LowerBound lb = ir::lower_bound(p_);
  r_.bound = lb.value;
  r_.bound_reason = lb.reason;
  const std::string what = objective_name(p_);
  const double tol = 1e-9 * std::max(1.0, std::abs(r_.objective));
  if (r_.bound > r_.objective + tol) {
    r_.verdict = ProofVerdict::Internal;
    r_.message = "the schedule's " + what + " " + format_number(r_.objective) + " is below the lower bound " +
                 format_number(r_.bound) + " (" + lb.reason + "), a bug in schedc's bound";
    return r_;
  }
  if (r_.bound >= r_.objective - tol) {
    r_.verdict = ProofVerdict::Holds;
    r_.argument = ProofArgument::Bound;
    r_.message = "the bound (" + lb.reason + ") equals the " + what + " " + format_number(r_.objective);
    return r_;
  }
  below_ = "the bound (" + lb.reason + ") is " + format_number(r_.bound) + ", below the " + what + " " +
           format_number(r_.objective);
  if (!o_.use_z3) {
    unknown("the claim does not rest on an exact model, so only the bound could re-derive it");
    return r_;
  }
  std::string why;
  if (!exact_model_complete(p_, &why)) {
    unknown("the exact model does not cover this problem: " + why);
    return r_;
  }
  int64_t ticks = 0;
  for (const auto& ends : t.end)
    for (int64_t e : ends) ticks = std::max(ticks, e);
  try {
    exact_probe(ticks);
  } catch (const z3::exception& e) {
    unknown(std::string("Z3 failed: ") + e.msg());
  }
  return r_;
}

void Prover::exact_probe(int64_t objective_ticks) {
  Instance inst = build_instance(p_, {0, /*symmetry=*/true});
  if (!inst.exact) {
    unknown("the exact grid is too fine for 32-bit step counts (or an action costs nothing), so no exact model exists");
    return;
  }
  if (!inst.memory_fits_pb) {
    unknown("the memory values exceed the SAT model's 32-bit coefficients, so no exact model exists");
    return;
  }
  const int64_t grid = inst.ticks_per_step;
  const double grid_units = static_cast<double>(grid) / static_cast<double>(inst.time_scale);
  // Every schedule's makespan is a whole number of steps on the exact grid: the largest one
  // strictly below the objective.
  const int64_t steps = (objective_ticks - 1) / grid;
  const double by = static_cast<double>(steps * grid) / static_cast<double>(inst.time_scale);
  const std::string grid_text = "(exact grid " + format_number(grid_units) + ")";
  const std::string shows = "Z3 shows no schedule finishes by " + format_number(by) + " " + grid_text;
  if (objective_ticks <= 0 || steps < 0) {  // an objective of 0 or less than one step
    r_.verdict = ProofVerdict::Holds;
    r_.argument = ProofArgument::ExactModel;
    r_.message = shows;
    return;
  }
  const auto horizon = static_cast<int32_t>(steps);
  if (int64_t n = window_literals(inst, horizon); n > kMaxLiterals) {
    unknown("the exact model would have " + std::to_string(n) + " literals, above the limit of " +
            std::to_string(kMaxLiterals));
    return;
  }
  z3::context ctx;
  TimeIndexedModel model(inst, horizon, /*max_span=*/false, ctx);
  z3::check_result res = z3::unsat;
  if (model.feasible_horizon()) {
    z3::params prm(ctx);
    prm.set("rlimit", kRlimit);
    prm.set("timeout", timeout_ms(o_.time_limit_s));
    model.solver().set(prm);
    res = model.probe(horizon);
  }
  if (res == z3::unsat) {
    r_.verdict = ProofVerdict::Holds;
    r_.argument = ProofArgument::ExactModel;
    r_.message = shows;
    return;
  }
  if (res == z3::unknown) {
    unknown("Z3 gave no answer within " + format_number(o_.time_limit_s) + " s (" + model.solver().reason_unknown() +
            ")");
    return;
  }
  // sat: a better schedule, re-simulated exactly.
  ir::Schedule better = to_schedule(inst, model.orders());
  auto issues = ir::verify(better);
  ir::SimResult sim = issues.empty() ? ir::simulate(better) : ir::SimResult{};
  double value = sim.timeline ? sim.timeline->metrics.makespan : 0;
  if (!sim.timeline || !(value < r_.objective)) {
    r_.verdict = ProofVerdict::Internal;
    std::string what = !issues.empty() ? "it is invalid: " + issues[0].message
                       : sim.timeline  ? "it simulates to " + format_number(value)
                                       : std::string("it deadlocks");
    r_.message = "Z3 found a schedule that finishes by " + format_number(by) + " " + grid_text + ", but " + what;
    return;
  }
  r_.verdict = ProofVerdict::Refuted;
  r_.argument = ProofArgument::ExactModel;
  r_.message = below_ + "; Z3 found a valid schedule with makespan " + format_number(value) + " " + grid_text;
}

}  // namespace

bool exact_model_complete(const ir::Problem& p, std::string* why) {
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (p.objective != ir::Objective::Makespan) return fail("the objective is not the makespan");
  if (p.cost.FB) return fail("`FB` makes overlapped units cheaper, and the model has no units");
  const int32_t S = p.num_stages();
  if (p.backward == ir::BackwardMode::Mixed && p.cost.action_overhead > 0)
    return fail("split orders do not dominate the mixed choice: a B and its W pay `action_overhead` twice, a BW once");
  if (p.backward == ir::BackwardMode::Mixed)
    for (int32_t s = 0; s < S; ++s) {
      auto i = static_cast<size_t>(s);
      if (p.memory.B.at(i) > 0 || std::abs(p.memory.B.at(i) + p.memory.W.at(i) + p.memory.F.at(i)) > 1e-12)
        return fail("split orders do not dominate the mixed choice on stage " + std::to_string(s) +
                    " (it needs `memory.B` <= 0 and `memory.B + memory.W` = -`memory.F`)");
    }
  const int64_t scale = ir::time_scale(p);
  if (!whole_ticks(p.cost.F, S, scale) || !whole_ticks(p.cost.B, S, scale) || !whole_ticks(p.cost.W, S, scale) ||
      !whole_ticks(ir::PerStage::of(p.cost.comm), 1, scale) ||
      !whole_ticks(ir::PerStage::of(p.cost.action_overhead), 1, scale) ||
      !whole_ticks(ir::PerStage::of(p.cost.message_overhead), 1, scale))
    return fail("a cost is not a whole number of ticks, so a unit or a BW may be one tick shorter than its parts");
  return true;
}

ProofCheck prove_optimal(const ir::Schedule& s, const ProveOptions& o) { return Prover(s, o).run(); }

}  // namespace schedc::solver
