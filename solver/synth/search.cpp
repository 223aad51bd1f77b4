// The portfolio driver behind solver::synthesize (DESIGN.md section 7).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cmath>
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
#include "solver/families/families.h"
#include "solver/synth/encode.h"
#include "solver/synth/explain.h"
#include "solver/synth/fit_cap.h"
#include "solver/synth/greedy.h"
#include "solver/synth/instance.h"
#include "solver/synth/lns.h"
#include "solver/synth/local_search.h"
#include "solver/synth/pair_greedy.h"
#include "solver/synth/progress.h"
#include "solver/synth/prove.h"
#include "solver/synth/relax.h"
#include "solver/synth/steady.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"

namespace schedc::solver {

std::string_view to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::Optimal: return "optimal";
    case SolveStatus::Feasible: return "feasible";
    case SolveStatus::Infeasible: return "infeasible";
  }
  return "feasible";
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
      if (auto v = want_number(0.01, 86400)) o.time_limit_s = *v;
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

using Clock = std::chrono::steady_clock;

// Greedy work (actions × ranks scanned) per second on the 2-core CI machine, for the number of
// Zero Bubble variants deterministic mode runs.
constexpr double kGreedySlotsPerSecond = 4e7;
// Actions the order simulator times per second (one evaluation times every action), for the local
// search's evaluation budget in deterministic mode.
constexpr double kTimedActionsPerSecond = 2e7;

// Resource units per second of the time limit in deterministic mode (Z3's rlimit counts
// propagations and conflicts; about this many pass per second on the 2-core CI machine).
constexpr double kRlimitPerSecond = 4e6;

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

// Tighter versions of p's caps for the constructive phase, nearest first: every rank's cap rounded
// down to the grid of h (half of the most activations one microbatch leaves on a rank), then one
// step of h lower each, at most kLadderLevels of them, while every cap stays positive.
constexpr int kLadderLevels = 8;

std::vector<ir::Problem> cap_ladder(const ir::Problem& p, const std::vector<double>& below) {
  std::vector<ir::Problem> out;
  if (!p.memory.cap) return out;
  double most = 0;
  for (int32_t r = 0; r < p.ranks; ++r)
    for (int32_t d = 0; d < p.num_directions(); ++d) {
      double sum = 0;
      for (int32_t s = 0; s < p.num_stages(); ++s)
        if (p.rank_of(d, ir::StageId(s)).value == r) sum += std::max(0.0, p.memory.F.at(static_cast<size_t>(s)));
      most = std::max(most, sum);
    }
  const double h = most / 2;
  if (!(h > 0)) return out;
  std::vector<double> caps(static_cast<size_t>(p.ranks));
  for (int32_t r = 0; r < p.ranks; ++r) {
    double c = *p.cap_of(ir::RankId(r));
    if (static_cast<size_t>(r) < below.size()) c = std::min(c, below[static_cast<size_t>(r)]);
    double level = std::floor(c / h) * h;
    if (level >= c - 1e-9 * std::max(1.0, c)) level -= h;  // strictly below the cap itself
    caps[static_cast<size_t>(r)] = level;
  }
  for (int k = 0; k < kLadderLevels; ++k) {
    if (*std::min_element(caps.begin(), caps.end()) <= 1e-9) break;
    ir::Problem q = p;
    // The levels are activation caps; the problem states caps with the static memory beside them.
    std::vector<double> stated = caps;
    for (int32_t r = 0; r < p.ranks; ++r) stated[static_cast<size_t>(r)] += p.static_of(ir::RankId(r));
    bool uniform = std::all_of(stated.begin(), stated.end(), [&](double c) { return c == stated[0]; });
    q.memory.cap = uniform ? ir::PerStage::of(stated[0]) : ir::PerStage::list(stated);
    if (!ir::validate(q).empty()) break;
    out.push_back(std::move(q));
    for (double& c : caps) c -= h;
  }
  return out;
}

namespace {

// The most activations each rank of s holds.
std::vector<double> activation_peaks(const ir::Schedule& s) {
  std::vector<double> out;
  for (const auto& order : s.ranks) {
    double cur = 0, peak = 0;
    for (ir::Action a : order) peak = std::max(peak, cur += ir::memory_delta(s.problem, a));
    out.push_back(peak);
  }
  return out;
}

struct Candidate {
  ir::Schedule schedule;
  double value = 0;  // objective, time units
  std::string name;
  /// Between equal values the lower priority wins: families by their registry place, so that the
  /// order they are tried in does not change the result; everything else comes later and loses.
  size_t priority = std::numeric_limits<size_t>::max();
};

/// Families built for this kind of problem (its backward, direction, placement and stages per
/// rank): tried first, since at scale only the first one or two fit the time limit.
bool native_family(const FamilyInfo& f, const ir::Problem& p) {
  bool split_like = p.backward != ir::BackwardMode::Fused;
  return (f.backward != ir::BackwardMode::Fused) == split_like && f.direction == p.direction &&
         f.placement == p.placement && (f.stages_per_rank == 0 || f.stages_per_rank == p.stages_per_rank);
}

class Search {
 public:
  Search(const ir::Problem& p, const SolveOptions& o)
      : p_(p), o_(o), start_(Clock::now()), reporter_(o.progress, o.tty, start_) {}

  SolveResult run();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// An interrupt (SolveOptions::stop) ends every phase as the time limit would.
  bool stopped() const { return o_.stop && o_.stop->load(std::memory_order_relaxed); }
  double remaining() const { return stopped() ? 0 : o_.time_limit_s - elapsed(); }
  bool out_of_budget() const {
    if (stopped()) return true;
    return o_.deterministic ? rlimit_used_ + lns_.rlimit >= rlimit_budget() : usable() <= 0;
  }
  /// The whole-instance model may use this share of the budget; windows get the rest.
  bool whole_model_out_of_budget() const {
    if (stopped()) return true;
    return o_.deterministic ? rlimit_used_ >= rlimit_budget() * 6 / 10 : elapsed() >= o_.time_limit_s * 0.6;
  }
  /// Saturates: a limit of `inf` (or 1e15 s) means no resource limit, never an overflowed cast.
  uint64_t rlimit_budget() const {
    constexpr double kMax = static_cast<double>(uint64_t{1} << 62);
    double units = o_.time_limit_s * kRlimitPerSecond;
    return units >= kMax ? uint64_t{1} << 62 : static_cast<uint64_t>(std::max(0.0, units));
  }
  /// A Z3 timeout in milliseconds (Z3 takes an unsigned; larger limits saturate).
  static unsigned timeout_ms(double seconds) {
    double ms = std::max(1.0, seconds * 1000);
    return ms >= 4e9 ? 4'000'000'000u : static_cast<unsigned>(ms);
  }

  /// `verified`: s passed ir::verify already (generate_family's contract), so it is only simulated.
  void offer(ir::Schedule s, const std::string& name, bool verified = false,
             size_t priority = std::numeric_limits<size_t>::max());
  /// What is left of the limit once the driver's own verification and output are set aside.
  double usable() const { return remaining() - reserve(); }
  /// Seconds kept back for what follows the search (the driver verifies, simulates and writes
  /// the schedule: about three simulations, or one lower bound's time, whichever is more), and
  /// while there is no incumbent yet, for the sequential fallback too.
  double reserve() const { return std::max(reserve_, bound_seconds_) + (best_ ? 0 : bound_seconds_); }
  /// Where long work gives up: the usable time (never the clock in deterministic mode), or an
  /// interrupt.
  Deadline work_deadline() const {
    Deadline d;
    d.stop = o_.stop;
    if (!o_.deterministic)
      d.at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(usable(), 0.0, 1e9)));
    return d;
  }
  void drop_bound(double value, const std::string& name);
  void collect_incumbents();
  void steady_state();
  void z3_search();
  void relax();
  void lns();
  void local(double share);
  void progress(bool final = false);
  /// Z3 threw in `phase`: the search goes on with what it has; the failure is recorded for the
  /// provenance and as a warning.
  void z3_failed(const char* phase, const z3::exception& e);
  ir::Provenance provenance(const SolveResult& r) const;

  const ir::Problem& p_;
  const SolveOptions& o_;
  Clock::time_point start_;
  std::optional<Candidate> best_;
  /// The best schedule without overlapped units: the local search's start when best_ has them.
  std::optional<Candidate> best_plain_;
  /// The few best incumbents of distinct values that the local search may start from (with
  /// units where the problem prices them, else without): its first run races them.
  std::vector<Candidate> starts_;
  static constexpr size_t kStarts = 3;
  void keep_start(const ir::Schedule& s, double v, const std::string& name, size_t priority);
  /// Local search chains from `start` for `evals` evaluations (deterministic mode) or `seconds`.
  void chains(const ir::Schedule& start, uint64_t evals, double seconds);
  std::string first_incumbent_;
  double first_incumbent_value_ = 0;
  double lower_ = 0;
  std::string bound_reason_;
  bool proved_ = false;
  bool bound_dropped_ = false;
  std::string bound_error_;
  uint64_t rlimit_used_ = 0;
  double reserve_ = 0;        // from the slowest verification or simulation seen (offer)
  double bound_seconds_ = 0;  // what the lower bound took: one pass over the problem
  int probes_ = 0;
  LnsStats lns_;
  LocalSearchStats local_;
  uint64_t local_budget_ = 0;  // evaluations in deterministic mode
  int local_runs_ = 0;
  size_t local_threads_ = 0;
  EncodingStats encoding_;
  std::string method_ = "none";
  std::string solver_error_;  // the last Z3 failure, for the provenance
  std::vector<std::string> warnings_;  // every Z3 failure, for SolveResult::warnings
  std::vector<std::pair<std::string, std::variant<uint64_t, double>>> z3_stats_;  // Z3's deterministic ones
  bool bound_known_ = false;  // lower_ holds the computed bound (progress lines show it)
  // Last: its timer thread stops before anything it could read goes away.
  ProgressReporter reporter_;
};

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

void Search::collect_incumbents() {
  // Seconds of the slowest family so far (generating, verifying, simulating): at pp 1024, m 1302
  // each takes seconds, so a family that would end past the limit is not started.
  double slowest = 0;
  // The families' orders, for fitting under the tighter caps of the ladder below (fit_cap.h): at
  // most 4e6 actions kept in all.
  std::vector<std::pair<std::string, ir::Schedule>> templates;
  size_t kept_actions = 0;
  auto keep_template = [&](const std::string& name, const ir::Schedule& s) {
    if (!p_.memory.cap || kept_actions + s.num_actions() > 4'000'000) return;
    kept_actions += s.num_actions();
    templates.emplace_back(name, s);
  };
  if (o_.use_families) {
    const std::vector<FamilyInfo>& all = families();
    std::vector<size_t> order(all.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return native_family(all[i], p_); });
    std::vector<size_t> over_cap;  // families that gave no schedule under the cap
    for (size_t i : order) {
      if (stopped()) break;
      // Once one family met the bound nothing beats it; near the limit the best so far is kept.
      if (best_ && best_->value <= lower_ + 1e-9) break;
      if (!o_.deterministic && usable() <= slowest) break;
      const double t0 = elapsed();
      Diagnostics scratch;
      const Deadline deadline = work_deadline();
      auto s = generate_family(all[i].name, p_, {}, SourceLoc{}, scratch, &deadline);
      if (s) {
        keep_template(all[i].name, *s);
        offer(std::move(*s), all[i].name, /*verified=*/true, i);
      } else {
        over_cap.push_back(i);
      }
      slowest = std::max(slowest, elapsed() - t0);
    }
    // The families that do not meet the cap, fitted under it (fit_cap.h):
    // an order that needs a little more memory than the cap keeps its structure (two directions,
    // pp 16, m 64: dualpipe holds 17 microbatches' activations; fitted under a cap of 16 it gives
    // 346.6 where the best greedy variant reached 398.5).
    if (p_.memory.cap) {
      ir::Problem open = p_;
      open.memory.cap.reset();
      for (size_t i : over_cap) {
        if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;
        if (!o_.deterministic && usable() <= slowest) break;
        const double t0 = elapsed();
        Diagnostics scratch;
        const Deadline deadline = work_deadline();
        if (auto s = generate_family(all[i].name, open, {}, SourceLoc{}, scratch, &deadline)) {
          auto fitted = defer_to_cap(*s, p_);
          o_.debug.print("%s-fitted: %s", all[i].name.c_str(), fitted ? "fits" : "does not fit");
          if (fitted) offer(std::move(*fitted), all[i].name + "-fitted");
          keep_template(all[i].name, *s);
        }
        slowest = std::max(slowest, elapsed() - t0);
      }
    }
  }
  // Every family fitted under caps below its own peak (three levels of the ladder's grid): fewer
  // forwards in flight can run the backwards sooner (two directions, pp 16, m 64, cap 24:
  // dualpipe 350.7 at its peak of 17; fitted under 16, 346.6).
  for (const auto& [name, t] : templates) {
    if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;
    if (!o_.deterministic && (usable() <= slowest || elapsed() > o_.time_limit_s / 8)) break;
    std::vector<ir::Problem> levels = cap_ladder(p_, activation_peaks(t));
    for (size_t k = 0; k < std::min<size_t>(3, levels.size()); ++k) {
      auto fitted = defer_to_cap(t, levels[k]);
      if (!fitted) break;
      fitted->problem = p_;  // valid under p_'s caps, which are no tighter
      offer(std::move(*fitted), name + "-fitted@cap" + format_number(levels[k].memory.cap->max()));
    }
  }
  // Where units are priced below their members, orders built around them (a DualPipe-like
  // steady state the local search does not find on its own).
  if (o_.use_greedy)
    for (const PairVariant& v : pair_variants(p_)) {
      if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;
      if (!o_.deterministic && elapsed() > o_.time_limit_s / 8) break;
      const Deadline deadline = work_deadline();
      if (auto s = pair_greedy(p_, v, &deadline)) offer(std::move(*s), v.name());
    }
  // Nothing constructive can beat a family that meets the bound, and at scale the greedy phase is
  // the slow part; past the time limit (or an interrupt) the families' best is the incumbent.
  const bool bound_met = best_ && best_->value <= lower_ + 1e-9;
  if (o_.use_greedy && !bound_met && !stopped() && (o_.deterministic || usable() > slowest)) {
    const double sweep_seconds = o_.time_limit_s / 4;
    // Variant runs the quarter of the budget allows (deterministic mode: a count from the
    // problem's size instead of the clock); the cap ladder below gets what the cap's own runs leave.
    double runs_budget = 0;
    size_t runs_used = 0;
    double slowest_run = 0;  // seconds of the slowest variant run (with its verification)
    auto construct = [&](const ir::Problem& q, const std::string& tag) {
      const double built_at = elapsed();
      Instance inst = build_instance(q, {.ticks_per_step = 0, .symmetry = false, .rank_work = false});
      o_.debug.print("instance%s: %zu actions in %.2f s", tag.c_str(), inst.size(), elapsed() - built_at);
      std::vector<GreedyVariant> variants = greedy_variants(inst);
      // The Zero Bubble sweep: as many variants as a quarter of the budget allows.
      std::vector<GreedyVariant> sweep = zb_variants(inst);
      size_t sweep_count = sweep.size();
      if (o_.deterministic) {
        double per_variant = static_cast<double>(inst.size()) * static_cast<double>(p_.ranks) / kGreedySlotsPerSecond;
        runs_budget = sweep_seconds / std::max(1e-9, per_variant);
        sweep_count = static_cast<size_t>(std::clamp(runs_budget, 8.0, double(sweep.size())));
      }
      size_t classic = variants.size();
      variants.insert(variants.end(), sweep.begin(), sweep.begin() + static_cast<long>(std::min(sweep_count, sweep.size())));
      for (size_t k = 0; k < variants.size(); ++k) {
        const GreedyVariant& v = variants[k];
        if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;  // nothing beats the bound
        if (!o_.deterministic && k > 0 && (k >= classic ? elapsed() > sweep_seconds : usable() <= slowest_run)) break;
        ++runs_used;
        const double t0 = elapsed();
        const Deadline deadline = work_deadline();
        if (auto orders = greedy_orders(inst, v, &deadline)) {
          ir::Schedule sched = to_schedule(inst, *orders);
          sched.problem = p_;  // valid under q's caps, so under p's, which are no tighter
          if (o_.debug.enabled()) {
            auto sim = ir::simulate(sched);
            o_.debug.print("%s%s -> %s", v.name().c_str(), tag.c_str(),
                           sim.timeline ? format_number(sim.timeline->metrics.objective_value(p_.objective)).c_str() : "deadlock");
          }
          offer(std::move(sched), v.name() + tag);
        } else {
          o_.debug.print("%s%s -> stuck", v.name().c_str(), tag.c_str());
        }
        slowest_run = std::max(slowest_run, elapsed() - t0);
      }
      return variants.size();
    };
    const size_t per_cap = construct(p_, "");
    // The cap ladder (monotone in the cap): the same heuristics under tighter caps on a fixed grid
    // of half a microbatch's activations per rank, nearest first. A schedule found for a tighter
    // cap is valid under this one, so a user who relaxes the cap to a grid level never gets a worse
    // incumbent than that level's own.
    for (const ir::Problem& q : cap_ladder(p_)) {
      if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;
      if (o_.deterministic ? static_cast<double>(runs_used + per_cap) > runs_budget : elapsed() > sweep_seconds) break;
      construct(q, "@cap" + format_number(q.memory.cap->max()));
    }
  }
  // One microbatch at a time: slow, but it meets every cap that any schedule can meet (usually).
  if (!best_) offer(sequential_schedule(p_), "sequential");
  if (best_) {
    first_incumbent_ = best_->name;
    first_incumbent_value_ = best_->value;
  }
}

// Steady-state decomposition (DESIGN section 7): with many microbatches, the same problem with
// 4 pp of them is solved first (a quarter of the budget), and its schedule's middle block repeated
// up to m (steady.h): one more incumbent, named `block`, that the local search polishes.
void Search::steady_state() {
  if (p_.direction != ir::Direction::Single || p_.backward == ir::BackwardMode::Mixed || p_.cost.FB) return;
  if (stopped() || !best_ || best_->value <= lower_ + 1e-9) return;
  const int32_t base = 4 * p_.ranks;
  if (p_.microbatches < 2 * base) return;
  for (int32_t period : {1, p_.ranks}) {
    if (period > 1 && p_.stages_per_rank == 1) break;
    // The smaller problem: about 4 pp microbatches, so that the rest is whole blocks.
    int32_t m_small = base - ((p_.microbatches - base) % period + period) % period;
    if (m_small < 2 * period) continue;
    ir::Problem small = p_;
    small.microbatches = m_small;
    SolveOptions o = o_;
    o.progress = nullptr;
    o.time_limit_s = std::max(kMinTimeLimit, o_.time_limit_s / 4);
    if (!o_.deterministic) o.time_limit_s = std::min(o.time_limit_s, std::max(kMinTimeLimit, usable() / 4));
    if (!o_.deterministic && usable() < 4 * kMinTimeLimit) return;
    SolveResult r = synthesize(small, o);
    if (!r.schedule || stopped()) return;
    if (auto s = extend_periodic(*r.schedule, p_, period)) {
      offer(std::move(*s), "block");
      return;
    }
  }
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
  if (stopped() || (!o_.deterministic && usable() <= 2 * bound_seconds_)) return;
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
    if (attempt > 0 && !o_.deterministic && (whole_model_out_of_budget() || usable() <= 2 * bound_seconds_)) {
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
    int64_t factor = std::max<int64_t>(2, static_cast<int64_t>(std::ceil(std::sqrt(double(estimate) / double(o_.max_literals)) * 1.2)));
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
  method_ = complete ? "time-indexed SAT, exact" : "time-indexed SAT, grid " + format_number(double(grid) / double(scale));

  auto steps_floor = [&](double v) { return static_cast<int32_t>(ir::to_fixed(v, scale) / grid); };
  auto steps_ceil = [&](double v) { return static_cast<int32_t>((ir::to_fixed(v, scale) + grid - 1) / grid); };
  int32_t lo = complete ? steps_ceil(lower_) : steps_floor(lower_);
  int32_t hi = complete ? steps_floor(best_->value) - 1 : steps_ceil(best_->value) - 1;
  if (makespan) horizon = std::min(horizon, hi);
  if (hi < lo || out_of_budget()) return;
  z3::context ctx;
  Z3Interrupter interrupter(ctx, o_.stop);
  TimeIndexedModel model(*inst, horizon, !makespan, ctx, o_.stop);
  if (model.interrupted()) return;  // half built: it says nothing
  encoding_ = model.stats();
  o_.debug.print("model built in %.2f s: %lld literals, %lld clauses, %lld pb, horizon %d, lo %d, grid %lld",
                 elapsed(), (long long)encoding_.literals, (long long)encoding_.clauses,
                 (long long)encoding_.pseudo_boolean, horizon, lo, (long long)grid);
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
  const double share = complete ? 1.0 : 0.6;
  while (lo <= hi && !stop()) {
    int32_t probe = lo + (hi - lo) / 2;
    z3::params prm(ctx);
    if (o_.deterministic) {
      uint64_t share_budget = static_cast<uint64_t>(static_cast<double>(rlimit_budget()) * share);
      uint64_t left = share_budget - std::min(share_budget, rlimit_used_);
      prm.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(left, 4'000'000'000u)));
    } else {
      prm.set("timeout", timeout_ms(o_.time_limit_s * share - elapsed() - reserve()));
    }
    model.solver().set(prm);
    z3::check_result r = model.probe(probe);
    ++probes_;
    o_.debug.print("probe %d -> %s at %.2f s", probe,
                   r == z3::sat ? "sat" : r == z3::unsat ? "unsat" : "unknown", elapsed());
    z3::stats st = model.solver().statistics();
    for (unsigned i = 0; i < st.size(); ++i)
      if (st.key(i) == "rlimit count") rlimit_used_ = static_cast<uint64_t>(st.uint_value(i));
    if (r == z3::sat) {
      int32_t model_makespan = probe;
      ir::Schedule s = to_schedule(*inst, model.orders(&model_makespan));
      if (o_.z3_fault == SolveOptions::Z3Fault::InvalidModel && !s.ranks.empty() && !s.ranks[0].empty()) s.ranks[0].pop_back();
      auto issues = ir::verify(s);
      if (!issues.empty()) {
        solver_error_ = "internal: a Z3 model gave an invalid schedule: " + issues[0].message;
        warnings_.push_back("a Z3 model gave an invalid schedule (a bug in schedc), so the whole-instance model was "
                            "dropped and the search went on without it: " + issues[0].message);
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
    if (key == "memory" || key == "max memory" || key == "num allocs" || key.find("time") != std::string::npos) continue;
    std::variant<uint64_t, double> value = st.is_uint(i) ? std::variant<uint64_t, double>(uint64_t{st.uint_value(i)})
                                                         : std::variant<uint64_t, double>(st.double_value(i));
    auto same = std::find_if(z3_stats_.begin(), z3_stats_.end(), [&](const auto& kv) { return kv.first == key; });
    if (same != z3_stats_.end()) same->second = value;
    else z3_stats_.emplace_back(key, value);
  }
}

// The rounded-down relaxation (relax.h): a bound where the closed-form terms are weak, for at most
// a sixth of the budget (its share of the deterministic resource limit alike).
void Search::relax() {
  if (stopped() || (!o_.deterministic && usable() <= 2 * bound_seconds_)) return;
  if (!relaxation_applies(p_)) return;
  constexpr double kShare = 1.0 / 6;
  const double until = std::min(elapsed() + o_.time_limit_s * kShare, o_.time_limit_s);
  const uint64_t budget = static_cast<uint64_t>(static_cast<double>(rlimit_budget()) * kShare);
  uint64_t spent = 0;
  z3::context ctx;
  Z3Interrupter interrupter(ctx, o_.stop);
  RelaxOptions ro;
  ro.max_literals = 4 * o_.max_literals;  // no schedule is read back: a larger model pays
  ro.limits = [&](z3::params& prm) {
    if (stopped()) return false;
    if (o_.deterministic) {
      if (spent >= budget) return false;
      prm.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(budget - spent, 4'000'000'000u)));
      return true;
    }
    double left = std::min(until - elapsed(), usable());
    if (left <= 0) return false;
    prm.set("timeout", timeout_ms(left));
    return true;
  };
  ro.used = [&](uint64_t count) { spent = count; };
  ro.stop = o_.stop;
  ro.deadline = work_deadline();
  Relaxation rx = relaxed_bound(p_, lower_, best_->value, ctx, ro);
  probes_ += rx.probes;
  rlimit_used_ += spent;
  o_.debug.print("relaxation on grid %lld: %d probes, bound %s at %.2f s", (long long)rx.grid,
                 rx.probes, format_number(rx.bound).c_str(), elapsed());
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
        z3::params prm(ctx);
        if (o_.deterministic) {
          uint64_t left = rlimit_budget() - std::min(rlimit_budget(), rlimit_used_ + lns_.rlimit);
          prm.set("rlimit", static_cast<unsigned>(std::min<uint64_t>(left, 3'000'000u)));
        } else {
          prm.set("timeout", timeout_ms(std::min(usable(), 3.0)));
        }
        auto s = improve_window(best_->schedule, tl, t0, t0 + width, makespan - 1, grid, ctx, prm, o_.max_literals, lns_);
        o_.debug.print("window [%lld, %lld) grid %lld: %s", (long long)t0, (long long)(t0 + width),
                       (long long)grid, s ? "schedule" : "-");
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

// The order-space local search from the best schedule, for `share` of what is left of the budget
// (a share of the evaluation budget in deterministic mode), until the bound is met. The first run
// races the few best incumbents first (a tenth of its budget each): the best schedule is often a
// family's, whose basin can be poor (two directions at 1.5x of 1F1B's memory: from dualpipe 172.7
// the search stayed at 172.7, from a greedy start it reached 168.3), then goes on from the best.
void Search::local(double share) {
  if (!best_ || (!best_plain_ && !overlap_moves_apply(p_)) || best_->value <= lower_ + 1e-9 || stopped()) return;
  uint64_t evals = 0;
  double seconds = 0;
  if (o_.deterministic) {
    uint64_t left = local_budget_ - std::min(local_budget_, local_.evals);
    evals = static_cast<uint64_t>(static_cast<double>(left) * share);
    if (evals == 0) return;
  } else {
    seconds = std::max(0.0, usable() * share);
    if (usable() <= 0) return;
  }
  if (local_runs_ == 0 && starts_.size() > 1) {
    constexpr double kRace = 0.1;  // of this run's budget, per start
    std::vector<Candidate> race = starts_;
    for (const Candidate& c : race) {
      if (best_->value <= lower_ + 1e-9 || stopped()) return;
      chains(c.schedule, static_cast<uint64_t>(static_cast<double>(evals) * kRace), seconds * kRace);
    }
    evals -= static_cast<uint64_t>(static_cast<double>(evals) * kRace) * race.size();
    seconds *= 1 - kRace * static_cast<double>(race.size());
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
  lo.stop = o_.stop;
  lo.seed = static_cast<uint64_t>(++local_runs_);
  lo.target = static_cast<int64_t>(std::ceil(lower_ * static_cast<double>(scale) - 1e-6));
  if (o_.deterministic) {
    lo.max_evals = evals;
  } else {
    lo.max_evals = std::numeric_limits<uint64_t>::max();
    lo.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(seconds, 1e9)));
  }
  if (lo.max_evals == 0 || (!o_.deterministic && seconds <= 0)) return;
  // Independent chains (seeds differ) from the same start, each with the whole budget; the best
  // wins, ties to the lowest thread, so a thread count gives one result.
  const size_t threads = static_cast<size_t>(
      o_.threads > 0 ? o_.threads : std::max(1u, std::min(std::thread::hardware_concurrency(), unsigned{kMaxThreads})));
  std::vector<std::optional<ir::Schedule>> found(threads);
  std::vector<LocalSearchStats> stats(threads);
  auto chain = [&](size_t k) {
    LocalSearchOptions mine = lo;
    mine.seed = lo.seed * 1000 + k;
    if (o_.deterministic) mine.max_evals = lo.max_evals / threads;
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
  if (!o_.deterministic) j.seconds = std::round(r.seconds * 1000) / 1000;
  j.deterministic = o_.deterministic;
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
  if (!proved_ && o_.use_steady) steady_state();
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
    double evals = std::min(1e15, o_.time_limit_s * kTimedActionsPerSecond / work);
    local_budget_ = static_cast<uint64_t>(evals);
  }
  if (!proved_ && o_.use_local) local(0.5);
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
  r.gap = r.objective > 0 ? (r.objective - r.lower_bound) / r.objective : 0;
  r.incumbent = first_incumbent_;
  r.incumbent_value = first_incumbent_value_;
  r.seconds = elapsed();
  r.schedule = std::move(best_->schedule);
  r.schedule->provenance = provenance(r);
  return r;
}

}  // namespace

SolveResult synthesize(const ir::Problem& p, const SolveOptions& options) { return Search(p, options).run(); }

}  // namespace schedc::solver
