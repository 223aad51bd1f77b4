#include "solver/synth/relax.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "solver/synth/encode.h"
#include "solver/synth/instance.h"
#include "solver/synth/prove.h"
#include "support/numbers.h"

namespace schedc::solver {
bool relaxation_applies(const ir::Problem& p) { return exact_model_complete(p, nullptr); }

Relaxation relaxed_bound(const ir::Problem& p, double lower, double upper, z3::context& ctx, const RelaxOptions& o) {
  Relaxation out;
  if (!relaxation_applies(p) || !(upper > lower)) return out;
  const int64_t scale = ir::time_scale(p);
  const int64_t ub = ir::to_fixed(upper, scale), lb = ir::to_fixed(lower, scale);
  // The grid of the durations alone (comm, usually far shorter, rounds down to nothing there: the
  // bound loses at most the comm on the critical chain), coarser when the model would not fit the
  // budget (each action then loses up to a step, and a grid beyond the durations proves little).
  ir::Problem no_comm = p;
  no_comm.cost.comm = 0;
  // (in p's ticks: dropping the comm may make the problem's fixed-point scale coarser; both are
  // powers of ten)
  int64_t grid = exact_grid(no_comm) * std::max<int64_t>(1, scale / ir::time_scale(no_comm));
  std::optional<Instance> inst;
  int32_t horizon = 0;
  for (int attempt = 0; attempt < 12; ++attempt) {
    if (o.deadline.passed()) return out;
    InstanceOptions io;
    io.ticks_per_step = grid;
    io.round_down = true;
    inst = build_instance(p, io);
    grid = inst->ticks_per_step;
    horizon = static_cast<int32_t>(ub / grid);  // the incumbent's image ends by then
    int64_t estimate = estimate_literals(*inst, horizon);
    if (estimate <= o.max_literals) break;
    grid *= std::max<int64_t>(
        2, static_cast<int64_t>(std::ceil(std::sqrt(double(estimate) / double(o.max_literals)) * 1.2)));
    inst.reset();
  }
  if (!inst || !inst->memory_fits_pb || o.deadline.passed()) return out;
  out.grid = grid;
  // Only a probe at H >= floor(lower / g) can raise the bound: an unsat there proves (H + 1) g.
  int32_t lo = static_cast<int32_t>(lb / grid), hi = horizon - 1;
  if (lo > hi) return out;
  if (o.may_build && !o.may_build(estimate_literals(*inst, horizon))) return out;
  TimeIndexedModel model(*inst, horizon, /*max_span=*/false, ctx, o.deadline.stop);
  if (model.interrupted() || !model.feasible_horizon()) return out;  // cannot be: the incumbent's image fits
  int32_t proved = -1;                                               // the largest horizon shown to have no solution
  // The first probe at lo says whether the relaxation beats the bound at all; then steps that
  // double while unsat (a probe far above the optimum is sat quickly, one just below it is the
  // hard kind), and bisection once one was sat.
  int32_t probe = lo, step = 1;
  bool bisect = false;
  while (lo <= hi) {
    z3::params prm(ctx);
    if (o.limits && !o.limits(prm)) break;
    model.solver().set(prm);
    z3::check_result r = model.probe(probe);
    ++out.probes;
    if (o.used) o.used(model.rlimit_count());
    if (r == z3::unsat) {
      proved = probe;
      model.forbid(probe);
      lo = probe + 1;
    } else if (r == z3::sat) {
      hi = probe - 1;
      bisect = true;
    } else {
      break;  // the limits ran out
    }
    if (bisect) {
      probe = lo + (hi - lo) / 2;
    } else {
      probe = std::min(hi, lo + step - 1);
      step *= 2;
    }
  }
  if (proved < 0) return out;
  const double bound = static_cast<double>((static_cast<int64_t>(proved) + 1) * grid) / static_cast<double>(scale);
  if (!(bound > lower)) return out;
  out.bound = bound;
  out.reason = "Z3 proved that the problem with every duration and comm rounded down to a grid of " +
               format_number(static_cast<double>(grid) / static_cast<double>(scale)) + " has no schedule before " +
               format_number(bound);
  return out;
}

}  // namespace schedc::solver
