// The portfolio search behind solver::synthesize (docs/design.md section 7): offers, the Z3 model,
// the relaxation, windows, the local search and the result; the constructive phase is in
// construct.cpp, the shared class in search_impl.h.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <mutex>
#include <ostream>
#include <sstream>
#include <thread>
#include <variant>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/encode.h"
#include "solver/synth/explain.h"
#include "solver/synth/instance.h"
#include "solver/synth/lns.h"
#include "solver/synth/local_search.h"
#include "solver/synth/progress.h"
#include "solver/synth/prove.h"
#include "solver/synth/relax.h"
#include "solver/synth/search_impl.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"

namespace schedc::solver {

std::string_view to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::Optimal: return ir::kStatusOptimal;
    case SolveStatus::Feasible: return ir::kStatusFeasible;
    case SolveStatus::Infeasible: return ir::kStatusInfeasible;
  }
  return ir::kStatusFeasible;
}

bool apply_solve_params(const ir::Params& params, SolveOptions& o, Diagnostics& diags) {
  bool ok = true;
  for (const ir::Param& p : params.items) {
    auto want_number = [&](double lo, double hi) -> std::optional<double> {
      if (p.is_number() && p.number() >= lo && p.number() <= hi) return p.number();
      diags.error(p.is_number() ? DiagKind::OutOfRange : DiagKind::WrongType, p.value_loc,
                  "solve option " + backtick(p.key) + " must be a number in " + format_number(lo) + ".." +
                      format_number(hi));
      ok = false;
      return std::nullopt;
    };
    auto want_bool = [&]() -> std::optional<bool> {
      if (p.is_string() && (p.string() == "true" || p.string() == "false")) return p.string() == "true";
      diags.error(DiagKind::WrongType, p.value_loc, "solve option " + backtick(p.key) + " must be `true` or `false`");
      ok = false;
      return std::nullopt;
    };
    if (p.key == "time_limit") {
      if (auto v = want_number(kMinTimeLimit, kMaxTimeLimit)) o.time_limit_s = *v;
    } else if (p.key == "deterministic") {
      if (auto v = want_bool()) o.deterministic = *v;
    } else if (p.key == "families") {
      if (auto v = want_bool()) o.use_families = *v;
    } else if (p.key == "greedy") {
      if (auto v = want_bool()) o.use_greedy = *v;
    } else if (p.key == "z3") {
      if (auto v = want_bool()) o.use_z3 = *v;
    } else if (p.key == "threads") {
      if (auto v = want_number(1, kMaxThreads)) {
        if (*v == std::floor(*v)) o.threads = static_cast<int>(*v);
        else {
          diags.error(DiagKind::WrongType, p.value_loc, "solve option `threads` must be a whole number");
          ok = false;
        }
      }
    } else if (p.key == "local") {
      if (auto v = want_bool()) o.use_local = *v;
    } else {
      diags.error(DiagKind::UnknownKey, p.loc,
                  "unknown solve option " + backtick(p.key) +
                      ", expected one of time_limit, deterministic, threads, families, greedy, z3, local");
      ok = false;
    }
  }
  return ok;
}

namespace {

// Interrupts Z3's running check (from a thread of its own: Z3 allows that) for as long as `stop`
// is true, so an interrupt ends a long probe at once instead of at its timeout.
class Z3Interrupter {
 public:
  Z3Interrupter(z3::context& ctx, const std::atomic<bool>* stop) {
    if (!stop) return;
    thread_ = std::thread([this, &ctx, stop] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!done_) {
        if (stop->load(std::memory_order_relaxed)) ctx.interrupt();
        wake_.wait_for(lock, std::chrono::milliseconds(20));
      }
    });
  }
  Z3Interrupter(const Z3Interrupter&) = delete;
  Z3Interrupter& operator=(const Z3Interrupter&) = delete;
  ~Z3Interrupter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

namespace detail {

void Search::offer(ir::Schedule s, const std::string& name, bool verified, size_t priority) {
  const double t0 = elapsed();
  ir::SimResult sim;
  if (verified) {
    sim = ir::simulate(s);
  } else {
    ir::VerifyOptions vo;
    vo.simulation = &sim;  // the verifier's deadlock check simulates: its timeline is reused
    if (!ir::verify(s, vo).empty()) return;
  }
  // The driver verifies and simulates the result, then writes it: about three simulations, or two
  // verifications (each simulates).
  reserve_ = std::max(reserve_, (verified ? 3 : 2) * (elapsed() - t0));
  if (!sim.timeline) return;
  double v = sim.timeline->metrics.objective_value(p_.objective);
  if (v < lower_ - 1e-9 * std::max(1.0, lower_)) drop_bound(v, name);
  auto better = [&](const std::optional<Candidate>& c) {
    return !c || v < c->value || (v == c->value && priority < c->priority);
  };
  if (!s.has_overlap() && better(best_plain_)) best_plain_ = Candidate{s, v, name, priority};
  if (overlap_moves_apply(p_) || !s.has_overlap()) keep_start(s, v, name, priority);
  if (!better(best_)) return;
  best_ = Candidate{std::move(s), v, name, priority};
  progress();
}

void Search::keep_start(const ir::Schedule& s, double v, const std::string& name, size_t priority) {
  auto before = [&](const Candidate& c) { return v < c.value || (v == c.value && priority < c.priority); };
  for (size_t i = 0; i < starts_.size(); ++i)
    if (std::abs(starts_[i].value - v) <= 1e-9 * std::max(1.0, v)) {  // one start a value
      if (before(starts_[i])) starts_[i] = Candidate{s, v, name, priority};
      return;
    }
  if (starts_.size() == kStarts && !before(starts_.back())) return;
  auto at = std::find_if(starts_.begin(), starts_.end(), before);
  starts_.insert(at, Candidate{s, v, name, priority});
  if (starts_.size() > kStarts) starts_.pop_back();
}

// A valid schedule below the bound is a bug in schedc: the bound is dropped (never raised or
// clamped to meet the schedule), nothing is claimed, and the result says why.
void Search::drop_bound(double value, const std::string& name) {
  bound_error_ = "a valid schedule (" + name + ", " + format_number(value) + ") is below the lower bound " +
                 format_number(lower_) + " (" + bound_reason_ + "); this is a bug in schedc, and no bound is claimed";
  lower_ = 0;
  bound_reason_ = "none (dropped: a valid schedule was below it)";
  bound_dropped_ = true;
  proved_ = false;
}
void Search::z3_failed(const char* phase, const z3::exception& e) {
  solver_error_ = std::string("Z3: ") + e.msg();
  warnings_.push_back(std::string("Z3 failed in ") + phase + " (" + e.msg() +
                      "); the schedule is the best one found without it");
}

void Search::progress(bool final) {
  if (!o_.progress) return;
  ProgressState state;
  if (best_) {
    state.best = best_->value;
    state.found_by = best_->name;
  }
  if (bound_known_) state.bound = lower_;
  state.unit = p_.time_unit;
  reporter_.publish(state, final);
}

void Search::z3_search() {
  // Past the limit even building the model (seconds at pp 1024) would overshoot it.
  // Building the instance alone takes a few passes over the problem (seconds at pp 1024).
  if (stopped() || no_time_for_z3()) return;
  const bool makespan = p_.objective == ir::Objective::Makespan;
  // Proofs need an exact, complete model (one rule, shared with `verify --optimal`): the exact
  // grid, split orders that dominate a mixed problem's fused choice, no cheaper overlapped units,
  // and costs in whole ticks (else a unit or a mixed BW may last a tick less than the model says).
  bool complete = exact_model_complete(p_, nullptr);
  if (o_.z3_fault == SolveOptions::Z3Fault::Error) throw z3::exception("injected failure (SolveOptions::z3_fault)");

  // The exact grid when its model fits the budget, else the finest coarser grid that fits: Z3's
  // model handling grows faster than linearly past ~1e5 variables (docs/solver.md), so models stay
  // small. Orders from a coarse grid are re-simulated exactly; only an exact grid proves anything.
  const int64_t scale = ir::time_scale(p_);
  const int64_t grid0 = exact_grid(p_);
  std::optional<Instance> inst;
  int64_t grid = grid0;
  int32_t horizon = 0;
  long double mean_ticks = 0;  // of an action, on the first instance's grid
  for (int attempt = 0; attempt < 12; ++attempt) {
    if (attempt > 0 && !budget_.deterministic() && (whole_model_out_of_budget() || no_time_for_z3())) {
      inst.reset();
      break;
    }
    // A step longer than the mean action finds and proves nothing (every action takes at least
    // one, so the ranks' rounded work no longer fits the incumbent's horizon), and at pp 64, m 512
    // building such models took a quarter of the limit.
    if (attempt > 0 && static_cast<long double>(grid) > mean_ticks) break;
    inst = build_instance(p_, {grid, /*symmetry=*/true});
    grid = inst->ticks_per_step;  // coarser when the exact grid's step counts would overflow
    if (attempt == 0 && inst->size() > 0) {
      long double total = 0;
      for (int32_t d : inst->dur) total += d;
      mean_ticks = total * static_cast<long double>(grid) / static_cast<long double>(inst->size());
    }
    int64_t ub = ir::to_fixed(best_->value, scale);
    horizon = static_cast<int32_t>((ub + grid - 1) / grid);
    if (!makespan) {
      int32_t spread = 0;
      for (int32_t h : inst->head) spread = std::max(spread, h);
      horizon += spread;
    }
    int64_t estimate = estimate_literals(*inst, horizon);
    if (estimate <= o_.max_literals) break;
    int64_t factor = std::max<int64_t>(
        2, static_cast<int64_t>(std::ceil(std::sqrt(double(estimate) / double(o_.max_literals)) * 1.2)));
    grid *= factor;
    inst.reset();
  }
  if (inst && static_cast<long double>(grid) > mean_ticks) inst.reset();
  if (!inst) {
    method_ = "incumbent (no SAT model fits the size budget)";
    return;
  }
  if (!inst->memory_fits_pb) {
    method_ = "incumbent (the memory values exceed the SAT model's 32-bit coefficients)";
    return;
  }
  complete = complete && inst->exact;
  method_ = complete ? "time-indexed SAT, exact"
                     : "time-indexed SAT, grid " + format_number(double(grid) / double(scale));

  auto steps_floor = [&](double v) { return static_cast<int32_t>(ir::to_fixed(v, scale) / grid); };
  auto steps_ceil = [&](double v) { return static_cast<int32_t>((ir::to_fixed(v, scale) + grid - 1) / grid); };
  int32_t lo = complete ? steps_ceil(lower_) : steps_floor(lower_);
  int32_t hi = complete ? steps_floor(best_->value) - 1 : steps_ceil(best_->value) - 1;
  if (makespan) horizon = std::min(horizon, hi);
  if (hi < lo || out_of_budget()) return;
  // Building the model is not interruptible by the clock: one whose build would outlast the
  // usable time is not started (a 0.3 s limit took 2.3 s with a 70k-literal model).
  const int64_t literals = estimate_literals(*inst, horizon);
  // Deterministic runs count the building in resource units (lns.h: Z3 does not count it), and
  // do not start a model whose building alone would exceed the model's share of them (at pp 4,
  // m 16 a 68k-literal model took 1.5 s of a 0.05 s deterministic limit before).
  const double model_share = complete ? 1.0 : share::kCoarseModel;
  const uint64_t build_units = rate::kZ3UnitsPerModelLiteral * static_cast<uint64_t>(std::max<int64_t>(literals, 0));
  if (budget_.deterministic() ? static_cast<double>(build_units) > static_cast<double>(z3_units()) * model_share
                              : static_cast<double>(literals) / rate::kModelLiterals > usable()) {
    o_.debug.print("model of about %lld literals not built: %.2f s left", (long long)literals, usable());
    method_ = "incumbent (no time left to build the SAT model)";
    return;
  }
  if (budget_.deterministic()) rlimit_used_ += build_units;
  const uint64_t used_before = rlimit_used_;
  const double build_start = elapsed();
  z3::context ctx;
  Z3Interrupter interrupter(ctx, o_.stop);
  TimeIndexedModel model(*inst, horizon, !makespan, ctx, o_.stop);
  if (model.interrupted()) return;  // half built: it says nothing
  encoding_ = model.stats();
  // Freeing the model after the search takes about a fifth of its building (pp 4, m 16: built in
  // 1.24 s, released in 0.24 s past a 3 s limit), so the probes leave that much of the limit.
  const double release_seconds = share::kModelRelease * (elapsed() - build_start);
  o_.debug.print("model (estimate %lld literals) built in %.2f s", (long long)literals, elapsed() - build_start);
  o_.debug.print("model built in %.2f s: %lld literals, %lld clauses, %lld pb, horizon %d, lo %d, grid %lld", elapsed(),
                 (long long)encoding_.literals, (long long)encoding_.clauses, (long long)encoding_.pseudo_boolean,
                 horizon, lo, (long long)grid);
  if (!model.feasible_horizon()) {
    if (complete) {
      lower_ = best_->value;
      proved_ = true;
    }
    return;
  }
  // Binary search between the bound and the incumbent. On a coarse grid an unsat probe only steers
  // the search: it proves nothing about the real problem.
  // An exact model may use the whole budget (it can prove); a coarse one leaves 40% to the windows.
  auto stop = [&] { return complete ? out_of_budget() : whole_model_out_of_budget(); };
  while (lo <= hi && !stop()) {
    int32_t probe = lo + (hi - lo) / 2;
    z3::params prm(ctx);
    if (budget_.deterministic()) {
      const uint64_t model_units = z3_units(model_share);
      prm.set("rlimit", Budget::z3_units(model_units - std::min(model_units, rlimit_used_)));
    } else {
      prm.set("timeout",
              Budget::z3_timeout_ms(budget_.limit() * model_share - elapsed() - reserve() - release_seconds));
    }
    model.solver().set(prm);
    z3::check_result r = model.probe(probe);
    ++probes_;
    o_.debug.print("probe %d -> %s at %.2f s", probe,
                   r == z3::sat     ? "sat"
                   : r == z3::unsat ? "unsat"
                                    : "unknown",
                   elapsed());
    rlimit_used_ = used_before + model.rlimit_count();
    if (r == z3::sat) {
      int32_t model_makespan = probe;
      ir::Schedule s = to_schedule(*inst, model.orders(&model_makespan));
      if (o_.z3_fault == SolveOptions::Z3Fault::InvalidModel && !s.ranks.empty() && !s.ranks[0].empty())
        s.ranks[0].pop_back();
      auto issues = ir::verify(s);
      if (!issues.empty()) {
        solver_error_ = "internal: a Z3 model gave an invalid schedule: " + issues[0].message;
        warnings_.push_back("a Z3 model gave an invalid schedule (a bug in schedc), so the whole-instance model was "
                            "dropped and the search went on without it: " +
                            issues[0].message);
        return;
      }
      offer(std::move(s), "z3");
      hi = complete ? std::min(probe, steps_floor(best_->value)) - 1 : std::min(probe, model_makespan) - 1;
    } else if (r == z3::unsat) {
      model.forbid(probe);
      lo = probe + 1;
      if (!complete) continue;
      double bound = static_cast<double>(static_cast<int64_t>(lo) * grid) / static_cast<double>(scale);
      if (bound > lower_) {
        lower_ = bound;
        bound_reason_ = "Z3 proved that no schedule finishes before " + format_number(bound);
      }
    } else {
      break;  // the limits ran out
    }
    progress();
  }
  if (complete && lo > hi) proved_ = true;
  o_.debug.print("search ended at %.2f s", elapsed());
  z3::stats st = model.solver().statistics();
  for (unsigned i = 0; i < st.size(); ++i) {
    std::string key = st.key(i);
    // Time, memory and allocation counts differ between runs; everything kept here is deterministic.
    if (key == "memory" || key == "max memory" || key == "num allocs" || key.find("time") != std::string::npos)
      continue;
    std::variant<uint64_t, double> value = st.is_uint(i) ? std::variant<uint64_t, double>(uint64_t{st.uint_value(i)})
                                                         : std::variant<uint64_t, double>(st.double_value(i));
    auto same = std::find_if(z3_stats_.begin(), z3_stats_.end(), [&](const auto& kv) { return kv.first == key; });
    if (same != z3_stats_.end()) same->second = value;
    else z3_stats_.emplace_back(key, value);
  }
}

// The rounded-down relaxation (relax.h): a bound where the closed-form terms are weak, for at most
// share::kRelaxation of the budget (its share of the deterministic resource limit alike).
void Search::relax() {
  if (stopped() || no_time_for_z3()) return;
  if (!relaxation_applies(p_)) return;
  const double until = std::min(elapsed() + budget_.limit() * share::kRelaxation, budget_.limit());
  const uint64_t budget = z3_units(share::kRelaxation);
  uint64_t spent = 0, built = 0;  // Z3's count; the models' building, which Z3 does not count
  z3::context ctx;
  Z3Interrupter interrupter(ctx, o_.stop);
  RelaxOptions ro;
  ro.max_literals = 4 * o_.max_literals;  // no schedule is read back: a larger model pays
  ro.limits = [&](z3::params& prm) {
    if (stopped()) return false;
    if (budget_.deterministic()) {
      if (spent >= budget) return false;
      prm.set("rlimit", Budget::z3_units(budget - spent));
      return true;
    }
    double left = std::min(until - elapsed(), usable());
    if (left <= 0) return false;
    prm.set("timeout", Budget::z3_timeout_ms(left));
    return true;
  };
  ro.used = [&](uint64_t count) { spent = count + built; };
  ro.deadline = work_deadline();
  // A model whose building would outlast the share is not started: by the clock, or in
  // deterministic mode by its size against the share's units (a model of 4x the window's
  // literals took 8 s of a 0.15 s deterministic limit before the building was counted).
  ro.may_build = [&](int64_t literals) {
    const auto cost = rate::kZ3UnitsPerModelLiteral * static_cast<uint64_t>(std::max<int64_t>(literals, 0));
    const bool fits = budget_.deterministic() ? spent + cost <= budget
                                              : static_cast<double>(literals) / rate::kModelLiterals <=
                                                    std::min(until - elapsed(), usable());
    if (!fits) o_.debug.print("relaxation model of about %lld literals not built", (long long)literals);
    if (fits) built += cost, spent += cost;
    return fits;
  };
  Relaxation rx = relaxed_bound(p_, lower_, best_->value, ctx, ro);
  probes_ += rx.probes;
  rlimit_used_ += spent;
  o_.debug.print("relaxation on grid %lld: %d probes, bound %s at %.2f s", (long long)rx.grid, rx.probes,
                 format_number(rx.bound).c_str(), elapsed());
  if (rx.bound > lower_) {
    lower_ = rx.bound;
    bound_reason_ = rx.reason;
    progress();
  }
}

// Windows of about eight actions per rank slide over the incumbent; each asks Z3 for a reordering
// that ends the whole schedule earlier. Bigger windows once a pass finds nothing.
void Search::lns() {
  const int64_t scale = ir::time_scale(p_);
  const int64_t grid0 = exact_grid(p_);
  int64_t work = 0;
  size_t actions = 0;
  for (const auto& r : best_->schedule.ranks)
    for (ir::Action a : r) work += ir::to_fixed(ir::cost_of(p_, a), scale), ++actions;
  const int64_t avg = std::max<int64_t>(1, work / static_cast<int64_t>(std::max<size_t>(1, actions)));
  // The exact grid: a coarser one rounds comm lags and durations, and a window that cannot even
  // reproduce the incumbent's timing finds nothing.
  const int64_t grid = grid0;
  // Windows time their actions in 32-bit steps of the exact grid: not when those would overflow.
  if (fitting_grid(p_, grid0) != grid0) return;
  int64_t width = std::min<int64_t>(8 * avg, 120 * grid0);
  for (int round = 0; round < 3 && !out_of_budget(); ++round, width *= 2) {
    bool improved = true;
    while (improved && !out_of_budget()) {
      improved = false;
      z3::context ctx;  // fresh per pass: expressions of old windows do not pile up
      Z3Interrupter interrupter(ctx, o_.stop);
      ir::Timeline tl = *ir::simulate(best_->schedule).timeline;
      int64_t makespan = ir::to_fixed(tl.metrics.makespan, scale);
      // From the end backwards: the cool-down is where incumbents lose most, and an improvement
      // there does not shift the windows still to visit. The last window starts at 0.
      std::vector<int64_t> starts;
      for (int64_t t0 = std::max<int64_t>(0, makespan - width);; t0 = std::max<int64_t>(0, t0 - width / 2)) {
        starts.push_back(t0);
        if (t0 == 0) break;
      }
      for (int64_t t0 : starts) {
        if (out_of_budget() || static_cast<double>(makespan) / scale <= lower_ + 1e-9) return;
        // Asked for once the window's model is built: the building counts against the limit.
        auto limits = [&] {
          z3::params prm(ctx);
          if (budget_.deterministic()) {
            const uint64_t left = z3_units() - std::min(z3_units(), rlimit_used_ + lns_.rlimit);
            prm.set("rlimit", Budget::z3_units(std::max<uint64_t>(1, std::min(left, share::kWindowZ3Units))));
          } else {
            prm.set("timeout", Budget::z3_timeout_ms(std::clamp(usable(), 0.0, share::kWindowSeconds)));
          }
          return prm;
        };
        // In wall-clock mode a model is built only where building it (at the measured rate) takes at
        // most share::kWindowBuild of what is left.
        const int64_t max_literals = budget_.deterministic()
                                         ? o_.max_literals
                                         : std::min<int64_t>(o_.max_literals,
                                                             static_cast<int64_t>(usable() * share::kWindowBuild *
                                                                                  rate::kModelLiterals));
        auto s = improve_window(best_->schedule, tl, t0, t0 + width, makespan - 1, grid, ctx, limits, max_literals,
                                lns_);
        o_.debug.print("window [%lld, %lld) grid %lld: %s (%llu of %llu units)", (long long)t0, (long long)(t0 + width),
                       (long long)grid, s ? "schedule" : "-", (unsigned long long)(rlimit_used_ + lns_.rlimit),
                       (unsigned long long)z3_units());
        if (!s) continue;
        double before = best_->value;
        offer(std::move(*s), "lns");
        if (best_->value >= before) continue;
        improved = true;
        tl = *ir::simulate(best_->schedule).timeline;
        makespan = ir::to_fixed(tl.metrics.makespan, scale);
      }
    }
  }
}

// The order-space local search from the best schedule, for `fraction` of what is left of the budget
// (a share of the evaluation budget in deterministic mode), until the bound is met. The first run
// races the few best incumbents first (a tenth of its budget each): the best schedule is often a
// family's, whose basin can be poor (two directions at 1.5x of 1F1B's memory: from dualpipe 172.7
// the search stayed at 172.7, from a greedy start it reached 168.3), then goes on from the best.
void Search::local(double fraction) {
  if (!best_ || (!best_plain_ && !overlap_moves_apply(p_)) || best_->value <= lower_ + 1e-9 || stopped()) return;
  uint64_t evals = 0;
  double seconds = 0;
  if (budget_.deterministic()) {
    uint64_t left = local_budget_ - std::min(local_budget_, local_.evals);
    evals = static_cast<uint64_t>(static_cast<double>(left) * fraction);
    if (evals == 0) return;
  } else {
    seconds = std::max(0.0, usable() * fraction);
    if (usable() <= 0) return;
  }
  if (local_runs_ == 0 && starts_.size() > 1) {
    std::vector<Candidate> race = starts_;
    for (const Candidate& c : race) {
      if (best_->value <= lower_ + 1e-9 || stopped()) return;
      chains(c.schedule, static_cast<uint64_t>(static_cast<double>(evals) * share::kLocalRace),
             seconds * share::kLocalRace);
    }
    evals -= static_cast<uint64_t>(static_cast<double>(evals) * share::kLocalRace) * race.size();
    seconds *= 1 - share::kLocalRace * static_cast<double>(race.size());
    if (best_->value <= lower_ + 1e-9) return;
  }
  // Where units are priced (FB) the search pairs and unpairs them itself, so it starts from the
  // best schedule, units and all; elsewhere from the best one without units.
  const ir::Schedule start = overlap_moves_apply(p_) ? best_->schedule : best_plain_->schedule;
  chains(start, evals, seconds);
}

void Search::chains(const ir::Schedule& start, uint64_t evals, double seconds) {
  const int64_t scale = ir::time_scale(p_);
  LocalSearchOptions lo;
  lo.seed = static_cast<uint64_t>(++local_runs_);
  lo.target = static_cast<int64_t>(std::ceil(lower_ * static_cast<double>(scale) - 1e-6));
  lo.deadline = budget_.deadline_in(seconds);
  lo.max_evals = budget_.deterministic() ? evals : std::numeric_limits<uint64_t>::max();
  if (lo.max_evals == 0 || budget_.clock_short(seconds)) return;
  // Independent chains (seeds differ) from the same start, each with the whole budget; the best
  // wins, ties to the lowest thread, so a thread count gives one result.
  const size_t threads = static_cast<size_t>(
      o_.threads > 0 ? o_.threads : std::max(1u, std::min(std::thread::hardware_concurrency(), unsigned{kMaxThreads})));
  std::vector<std::optional<ir::Schedule>> found(threads);
  std::vector<LocalSearchStats> stats(threads);
  auto chain = [&](size_t k) {
    LocalSearchOptions mine = lo;
    mine.seed = lo.seed * 1000 + k;
    if (budget_.deterministic()) mine.max_evals = lo.max_evals / threads;
    found[k] = local_search(start, mine, stats[k]);
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k) pool.emplace_back(chain, k);
  chain(0);
  for (std::thread& t : pool) t.join();
  for (const LocalSearchStats& st : stats) local_ += st;
  local_threads_ = threads;
  for (size_t k = 0; k < threads; ++k) offer(std::move(*found[k]), "local");
}

ir::Provenance Search::provenance(const SolveResult& r) const {
  ir::Provenance p = ir::Provenance::of("solve");
  ir::SolveRecord& j = p.solve.emplace();
  j.status = to_string(r.status);
  j.objective = r.objective;
  j.lower_bound = r.lower_bound;
  j.gap = r.gap;
  j.bound = r.bound_reason;
  j.incumbent = r.incumbent;
  j.incumbent_value = r.incumbent_value;
  j.found_by = best_ ? best_->name : "";
  j.method = method_;
  if (!budget_.deterministic()) j.seconds = std::round(r.seconds * 1000) / 1000;
  j.deterministic = budget_.deterministic();
  j.interrupted = r.interrupted;  // ended by SIGINT/SIGTERM before its limits
  ir::SolveRecord::Z3& z3 = j.z3;
  z3.probes = probes_;
  z3.literals = encoding_.literals;
  z3.clauses = encoding_.clauses;
  z3.cardinality = encoding_.cardinality;
  z3.pseudo_boolean = encoding_.pseudo_boolean;
  z3.lns_windows = lns_.windows;
  z3.lns_models = lns_.models;
  z3.lns_improved = lns_.improved;
  z3.lns_largest_literals = lns_.largest.literals;
  z3.statistics = z3_stats_;
  z3.error = solver_error_;
  ir::SolveRecord::LocalSearch& ls = j.local_search;
  ls.threads = static_cast<int64_t>(local_threads_);
  ls.evaluations = local_.evals;
  ls.accepted = local_.accepted;
  ls.restarts = local_.restarts;
  // The unit moves only where they apply, so other problems' documents keep their form.
  for (int m = 0; m < (overlap_moves_apply(p_) ? kNumMoves : 4); ++m)
    ls.moves.push_back({std::string(move_name(m)), local_.tried[static_cast<size_t>(m)],
                        local_.improved_best[static_cast<size_t>(m)]});
  return p;
}

SolveResult Search::run() {
  SolveResult r;
  if (auto inf = explain_cap(p_)) {
    r.status = SolveStatus::Infeasible;
    r.infeasible = std::move(inf);
    r.seconds = elapsed();
    return r;
  }
  const double bound_start = elapsed();
  ir::LowerBound lb = ir::lower_bound(p_);
  bound_seconds_ = elapsed() - bound_start;
  o_.debug.print("bound %s in %.2f s (%s)", format_number(lb.value).c_str(), bound_seconds_, lb.reason.c_str());
  lower_ = lb.value;
  bound_reason_ = lb.reason;
  bound_known_ = true;
  progress();
  collect_incumbents();
  if (!best_) {
    r.status = SolveStatus::Infeasible;
    Infeasibility inf;
    inf.explanation = "no heuristic schedule meets the memory cap, and this cap is not provably infeasible";
    inf.smallest_cap = 0;
    r.infeasible = inf;
    return r;
  }
  if (best_->value <= lower_ + 1e-9) proved_ = true;
  if (!proved_ && o_.use_z3) {
    try {
      z3_search();
      o_.debug.print("z3 released at %.2f s", elapsed());
    } catch (const z3::exception& e) {
      z3_failed("the whole-instance model", e);
    }
  }
  if (!proved_ && o_.use_z3 && best_->value > lower_ + 1e-9) {
    try {
      relax();
    } catch (const z3::exception& e) {
      z3_failed("the relaxation", e);
    }
    if (best_->value <= lower_ + 1e-9) proved_ = true;
  }
  // Until the time limit or a proof: local search, Z3 windows over its result, local search again.
  {
    double work = std::max(1.0, static_cast<double>(best_->schedule.num_actions()));
    double evals = std::min(1e15, budget_.limit() * rate::kTimedActions / work);
    local_budget_ = static_cast<uint64_t>(evals);
  }
  if (!proved_ && o_.use_local) local(share::kFirstLocal);
  if (!proved_ && o_.use_z3 && p_.objective == ir::Objective::Makespan && !best_->schedule.has_overlap() &&
      best_->value > lower_ + 1e-9) {
    try {
      lns();
      if (lns_.windows > 0) method_ += method_.empty() ? "lns" : ", then windows (lns)";
    } catch (const z3::exception& e) {
      z3_failed("the windows (lns)", e);
    }
  }
  if (!proved_ && o_.use_local) local(1.0);
  if (local_.evals > 0) method_ += ", local search";
  if (best_->value <= lower_ + 1e-9) proved_ = true;
  if (bound_dropped_) proved_ = false;  // a bound found wrong proves nothing, Z3's included
  progress(true);
  // An interrupt ends the search early: what was proved before it stays proved, nothing more.
  r.interrupted = stopped();
  r.status = proved_ ? SolveStatus::Optimal : SolveStatus::Feasible;
  r.objective = best_->value;
  // Proved means the bound meets the objective, or the exact model left no better schedule (then
  // Z3's proof is the bound); otherwise the bound as computed, never moved towards the objective.
  r.lower_bound = proved_ ? best_->value : lower_;
  r.bound_reason = bound_reason_;
  r.bound_error = bound_error_;
  r.warnings = warnings_;
  r.gap = relative_gap(r.objective, r.lower_bound);
  r.incumbent = first_incumbent_;
  r.incumbent_value = first_incumbent_value_;
  r.seconds = elapsed();
  r.schedule = std::move(best_->schedule);
  r.schedule->provenance = provenance(r);
  return r;
}

}  // namespace detail

SolveResult synthesize(const ir::Problem& p, const SolveOptions& options) {
  if (p.recompute != ir::Recompute::Off) return detail::synthesize_recompute(p, options);
  return detail::Search(p, options).run();
}

}  // namespace schedc::solver
