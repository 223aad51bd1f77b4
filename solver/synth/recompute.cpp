// solver::synthesize for problems with recomputation (docs/solver.md, "Recomputation").
//
// The search (search.cpp) knows F, B and W. A problem whose forwards may be checkpointed is solved
// through problems it already knows: checkpointing a set of stages X is the problem P_X in which
// every F of X keeps only its input and every backward of X carries its R in front of it (its cost
// + R's, its memory delta + what R restores), each rank's cap lowered by the most that R restores
// above what its backward then frees on that rank (the moment between the two is the rank's
// peak). A schedule of P_X, with R(mb, s) put right before each backward of X, is a schedule of
// the problem that ends no later (R runs while its backward waits for the gradient) and fits the
// cap. Then, where recomputation is allowed rather than required, the R's whose forward fits whole
// are dropped (the checkpointing is decided per microbatch and stage), and the order-space local
// search (local_search.h) runs on the problem itself, R's among its actions: its shifts and swaps
// move them into idle time. Every candidate is verified against the problem itself, and the bound
// is the problem's own (ir::lower_bound counts recomputation), never a P_X's.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/synth/budget.h"
#include "solver/synth/local_search.h"
#include "solver/synth/search_impl.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"

namespace schedc::solver::detail {
namespace {

using Clock = std::chrono::steady_clock;
using StageSet = std::vector<char>;  // [stage]: checkpointed

// `p` without recomputation (what a schedule without R's is a schedule of).
ir::Problem without_recompute(const ir::Problem& p) {
  ir::Problem q = p;
  q.recompute = ir::Recompute::Off;
  q.cost.R.reset();
  q.memory.input.reset();
  return q;
}

// P_X for the checkpointed stages `ck`; nullopt when a rank's lowered cap is below zero.
std::optional<ir::Problem> glued_problem(const ir::Problem& p, const StageSet& ck) {
  ir::Problem q = without_recompute(p);
  const int32_t S = p.num_stages();
  std::vector<double> cost_b, mem_f, mem_b, lowered(static_cast<size_t>(p.ranks), 0);
  for (int32_t s = 0; s < S; ++s) {
    const auto z = static_cast<size_t>(s);
    const double f = p.memory.F.at(z), b = p.memory.B.at(z), in = p.memory.input->at(z);
    cost_b.push_back(p.cost.B.at(z));
    mem_f.push_back(f);
    mem_b.push_back(b);
    if (!ck[z]) continue;
    cost_b.back() += ir::cost_of(p, ir::R(0, s));  // R's work and its action overhead
    mem_f.back() = in;
    mem_b.back() = b + f - in;
    // After R the rank holds what the backward then frees above its after-backward value: B's
    // share (split), all of F (a fused BW frees at once; mixed may choose either).
    double peak = std::max(0.0, -b);
    if (p.backward != ir::BackwardMode::Split) peak = std::max(peak, f);
    for (int32_t d = 0; d < p.num_directions(); ++d) {
      double& l = lowered[p.rank_of(d, ir::StageId(s)).index()];
      l = std::max(l, peak);
    }
  }
  auto compact = [](std::vector<double> v) {
    bool uniform = std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
    return uniform ? ir::PerStage::of(v.front()) : ir::PerStage::list(std::move(v));
  };
  q.cost.B = compact(std::move(cost_b));
  q.memory.F = compact(std::move(mem_f));
  q.memory.B = compact(std::move(mem_b));
  if (p.memory.cap) {
    std::vector<double> cap;
    for (int32_t r = 0; r < p.ranks; ++r) {
      double c = p.memory.cap->at(static_cast<size_t>(r)) - lowered[static_cast<size_t>(r)];
      if (c < 0) return std::nullopt;
      cap.push_back(c);
    }
    q.memory.cap = compact(std::move(cap));
  }
  if (!ir::validate(q).empty()) return std::nullopt;
  return q;
}

// A schedule of P_X as one of `p`: R(mb, s) right before each backward of a checkpointed stage
// (before the whole overlapped unit when the backward is in one).
ir::Schedule expand(const ir::Problem& p, const ir::Schedule& s, const StageSet& ck) {
  ir::Schedule out;
  out.problem = p;
  out.ranks.resize(s.ranks.size());
  if (s.has_overlap()) out.overlap.resize(s.ranks.size());
  auto needs = [&](ir::Action a) { return ir::is_backward(a.kind) && ck[a.stage.index()]; };
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    auto& to = out.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      const auto at = static_cast<int32_t>(i);
      const bool starts = s.overlap_starts_at(r, at), second = at > 0 && s.overlap_starts_at(r, at - 1);
      if (!second)
        for (size_t k = i; k <= std::min(i + (starts ? 1 : 0), order.size() - 1); ++k)
          if (needs(order[k])) to.push_back(ir::R(order[k].mb.value, order[k].stage.value));
      if (starts) out.overlap[r].push_back(static_cast<int32_t>(to.size()));
      to.push_back(order[i]);
    }
  }
  return out;
}

// The objective of a valid schedule of its problem, or nullopt.
std::optional<double> value_of(const ir::Schedule& s) {
  ir::SimResult sim;
  ir::VerifyOptions vo;
  vo.simulation = &sim;
  if (!ir::verify(s, vo).empty() || !sim.timeline) return std::nullopt;
  return sim.timeline->metrics.objective_value(s.problem.objective);
}

struct Found {
  ir::Schedule schedule;
  double value = 0;
  std::string name;
  SolveResult result;  // the sub-solve's, for its counters
  // After the refinement: its objective before, what it did.
  double before = 0;
  int dropped = 0;
  LocalSearchStats searched;
};

// The pass over a candidate: with `allowed`, drop each R whose forward then fits whole and the
// objective does not grow; then the order-space local search. Evaluations are counted
// (deterministic); the clock also stops them.
class Refiner {
 public:
  Refiner(Found& c, uint64_t budget, Clock::time_point deadline, bool use_clock)
      : c_(c), budget_(budget), deadline_(deadline), use_clock_(use_clock) {}

  void run() {
    if (allowed()) drop_pass();
  }

  // The order-space local search (local_search.h) on the problem itself, its R's among the
  // actions: its swaps and shifts move them, and what is around them, until the time limit; then
  // the R's that became unnecessary are dropped.
  LocalSearchStats search(double time_limit_s, const std::atomic<bool>* stop, int64_t target) {
    LocalSearchOptions lo;
    lo.deadline.stop = stop;
    if (use_clock_) lo.deadline.at = deadline_;
    const double work = std::max(1.0, static_cast<double>(c_.schedule.num_actions()));
    // Deterministic: the search's evaluation budget for the time (search.cpp); else the clock.
    lo.max_evals = use_clock_ ? UINT64_MAX
                              : static_cast<uint64_t>(std::min(1e15, time_limit_s * rate::kTimedActions / work));
    lo.target = target;
    LocalSearchStats stats;
    ir::Schedule t = local_search(c_.schedule, lo, stats);
    if (auto v = value_of(t); v && *v <= c_.value) {
      c_.schedule = std::move(t);
      c_.value = *v;
    }
    if (allowed()) drop_pass();
    return stats;
  }

  int dropped = 0;

 private:
  bool allowed() const { return c_.schedule.problem.recompute == ir::Recompute::Allowed; }
  bool out_of_time() const { return evals_ >= budget_ || (use_clock_ && Clock::now() >= deadline_); }

  std::optional<double> eval(const ir::Schedule& s) {
    ++evals_;
    return value_of(s);
  }

  void drop_pass() {
    ir::Schedule& s = c_.schedule;
    for (size_t r = 0; r < s.ranks.size(); ++r)
      for (size_t i = 0; i < s.ranks[r].size() && !out_of_time(); ++i) {
        if (s.ranks[r][i].kind != ir::ActionKind::R) continue;
        ir::Schedule t = s;
        t.ranks[r].erase(t.ranks[r].begin() + static_cast<std::ptrdiff_t>(i));
        if (t.has_overlap())
          for (int32_t& u : t.overlap[r])
            if (u > static_cast<int32_t>(i)) --u;
        auto v = eval(t);
        if (!v || *v > c_.value) continue;
        s = std::move(t);
        c_.value = *v;
        ++dropped;
        --i;
      }
  }

  Found& c_;
  uint64_t budget_;
  Clock::time_point deadline_;
  bool use_clock_;
  uint64_t evals_ = 0;
};

}  // namespace

SolveResult synthesize_recompute(const ir::Problem& p, const SolveOptions& options) {
  const Budget budget(options.time_limit_s, options.deterministic, options.stop);
  const int32_t S = p.num_stages();

  // The candidates' problems: without recomputation (when it is only allowed), every stage
  // checkpointed, and the first stages checkpointed (they hold the most microbatches in flight).
  struct Plan {
    std::string name;
    StageSet ck;  // empty: no recomputation
  };
  std::vector<Plan> plans;
  if (p.recompute == ir::Recompute::Allowed) plans.push_back({"no recomputation", {}});
  plans.push_back({"every stage checkpointed", StageSet(static_cast<size_t>(S), 1)});
  // The first half, three quarters or quarter of the stages (a sweep of every count measured no
  // better on bench/solver/recompute_bench: the time it splits costs each sub-solve more).
  const std::vector<int32_t> firsts{S / 2, (3 * S) / 4, S / 4};
  if (p.recompute == ir::Recompute::Allowed)
    for (int32_t k : firsts) {
      if (k <= 0 || k >= S) continue;
      StageSet ck(static_cast<size_t>(S), 0);
      std::fill(ck.begin(), ck.begin() + k, 1);
      if (std::any_of(plans.begin(), plans.end(), [&](const Plan& x) { return x.ck == ck; })) continue;
      plans.push_back({"stages 0.." + std::to_string(k - 1) + " checkpointed", std::move(ck)});
    }

  // Time: each sub-solve an equal share of what is left, the last share for the refinement.
  std::vector<Found> found;
  std::vector<std::string> warnings;
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    std::optional<ir::Problem> q = plan.ck.empty() ? without_recompute(p) : glued_problem(p, plan.ck);
    if (!q) continue;
    SolveOptions o = options;
    o.progress = nullptr;
    o.warm_starts.clear();
    if (plan.ck.empty())  // a warm start without R is a schedule of the problem without recomputation
      for (const SolveOptions::WarmStart& w : options.warm_starts) {
        bool has_r = false;
        for (const auto& order : w.schedule.ranks)
          for (ir::Action a : order) has_r |= a.kind == ir::ActionKind::R;
        if (has_r) continue;
        SolveOptions::WarmStart x = w;
        x.schedule.problem = *q;
        o.warm_starts.push_back(std::move(x));
      }
    // Deterministic mode: fixed shares (the sub-solves' budgets follow from their limits).
    const double left = budget.deterministic() ? budget.limit() * static_cast<double>(plans.size() - i + 1) /
                                                     static_cast<double>(plans.size() + 1)
                                               : budget.limit() - budget.elapsed();
    o.time_limit_s = std::max(kMinTimeLimit, left / static_cast<double>(plans.size() - i + 1));
    if (budget.stopped()) break;
    SolveResult sub = synthesize(*q, o);
    options.debug.print("recompute: %s: %s at %.2f s", plan.name.c_str(),
                        sub.schedule ? format_number(sub.objective).c_str() : "no schedule", budget.elapsed());
    for (const std::string& w : sub.warnings) warnings.push_back(plan.name + ": " + w);
    if (!sub.schedule) continue;
    ir::Schedule s = plan.ck.empty() ? *sub.schedule : expand(p, *sub.schedule, plan.ck);
    s.problem = p;
    s.provenance.reset();
    auto v = value_of(s);
    if (!v) continue;  // the lowered cap is a sufficient condition; a unit's order may still not fit
    Found f;
    f.schedule = std::move(s);
    f.value = *v;
    f.name = plan.name;
    f.result = std::move(sub);
    found.push_back(std::move(f));
  }
  // Warm starts with recomputation, as given.
  for (const SolveOptions::WarmStart& w : options.warm_starts) {
    ir::Schedule s = w.schedule;
    s.problem = p;
    s.provenance.reset();
    if (auto v = value_of(s)) {
      Found f;
      f.schedule = std::move(s);
      f.value = *v;
      f.name = "warm start " + w.name;
      found.push_back(std::move(f));
    }
  }

  SolveResult r;
  if (found.empty()) {
    r.status = SolveStatus::Infeasible;
    Infeasibility inf;
    inf.explanation =
        "none of the candidates fits, with or without recomputation (a recomputed forward is whole on its rank "
        "until its backward); this cap is not provably infeasible";
    r.infeasible = inf;
    r.warnings = std::move(warnings);
    r.seconds = budget.elapsed();
    return r;
  }
  // The two best candidates (the first of equals first), each refined and searched with half of
  // what is left of the time (less a twentieth for the driver's verification and output): the
  // best before the search is not always the best after it.
  const ir::LowerBound lb = ir::lower_bound(p);
  std::vector<size_t> order(found.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return found[a].value < found[b].value; });
  const size_t tries = std::min<size_t>(2, found.size());
  const double from = budget.elapsed(), until = share::kRecomputeEnd * budget.limit();
  for (size_t t = 0; t < tries; ++t) {
    Found& x = found[order[t]];
    x.before = x.value;
    const double end = from + std::max(0.0, until - from) * static_cast<double>(t + 1) / static_cast<double>(tries);
    const auto deadline = budget.start() +
                          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(end));
    // Deterministic: as many evaluations (each a whole verification) as share::kRecomputeDrops of
    // the time buys, shared between the candidates and the two drop passes.
    const double work = std::max(1.0, static_cast<double>(x.schedule.num_actions()));
    const auto evals = static_cast<uint64_t>(
        std::min(1e15, share::kRecomputeDrops * budget.limit() * rate::kVerifiedActions / work /
                           static_cast<double>(2 * tries)));
    Refiner refine(x, budget.deterministic() ? evals : UINT64_MAX, deadline, !budget.deterministic());
    refine.run();
    if (x.value > lb.value + 1e-9 * std::max(1.0, lb.value) && !budget.stopped())
      x.searched = refine.search(budget.limit() / static_cast<double>(tries), options.stop,
                                 ir::to_fixed(lb.value, ir::time_scale(p)));
    x.dropped = refine.dropped;
    options.debug.print("recompute: %s refined from %s to %s (%d R's dropped, %llu local search evaluations) at %.2f s",
                        x.name.c_str(), format_number(x.before).c_str(), format_number(x.value).c_str(), x.dropped,
                        static_cast<unsigned long long>(x.searched.evals), budget.elapsed());
  }
  size_t best = order[0];
  for (size_t t = 1; t < tries; ++t)
    if (found[order[t]].value < found[best].value) best = order[t];
  Found& c = found[best];
  const double before = c.before;
  const LocalSearchStats& searched = c.searched;

  r = std::move(c.result);
  r.warnings = std::move(warnings);
  r.objective = c.value;
  r.incumbent = c.name;
  r.incumbent_value = before;
  r.lower_bound = lb.value;
  r.bound_reason = lb.reason;
  r.bound_error.clear();
  if (c.value < lb.value - 1e-9 * std::max(1.0, lb.value)) {
    r.bound_error = "a valid schedule (" + c.name + ", " + format_number(c.value) + ") is below the lower bound " +
                    format_number(lb.value) + " (" + lb.reason + "); this is a bug in schedc, and no bound is claimed";
    r.lower_bound = 0;
    r.bound_reason = "none (dropped: a valid schedule was below it)";
  }
  const bool proved = r.bound_error.empty() && c.value <= r.lower_bound + 1e-9 * std::max(1.0, c.value);
  r.status = proved ? SolveStatus::Optimal : SolveStatus::Feasible;
  if (proved) r.lower_bound = c.value;
  r.gap = relative_gap(r.objective, r.lower_bound);
  r.seconds = budget.elapsed();
  r.interrupted = budget.stopped();
  ir::Schedule s = std::move(c.schedule);
  // The provenance: the sub-solve's counters, this problem's claim.
  ir::Provenance prov = ir::Provenance::of("solve");
  ir::SolveRecord rec;
  if (r.schedule && r.schedule->provenance && r.schedule->provenance->solve) rec = *r.schedule->provenance->solve;
  rec.status = std::string(to_string(proved ? SolveStatus::Optimal : SolveStatus::Feasible));
  rec.objective = r.objective;
  rec.lower_bound = r.lower_bound;
  rec.gap = r.gap;
  rec.bound = r.bound_reason;
  rec.incumbent = c.name + " (" + format_number(before) + ")";
  rec.incumbent_value = before;
  rec.found_by = (rec.found_by.empty() ? std::string() : rec.found_by + ", ") + c.name + ", " +
                 std::to_string(c.dropped) + " of its R's dropped" + (searched.evals > 0 ? ", local search" : "");
  rec.local_search.threads = searched.evals > 0 ? 1 : 0;
  rec.local_search.evaluations = searched.evals;
  rec.local_search.accepted = searched.accepted;
  rec.local_search.restarts = searched.restarts;
  rec.local_search.moves.clear();
  for (int m = 0; m < (overlap_moves_apply(p) ? kNumMoves : 4); ++m)
    rec.local_search.moves.push_back({std::string(move_name(m)), searched.tried[static_cast<size_t>(m)],
                                      searched.improved_best[static_cast<size_t>(m)]});
  // The exact model (if any) ran on the candidate's own problem, not on this one.
  if (!rec.method.empty() && rec.method != "none") rec.method += ", on the problem with " + c.name;
  rec.seconds = budget.deterministic() ? std::nullopt : std::optional<double>(r.seconds);
  rec.deterministic = budget.deterministic();
  rec.interrupted = r.interrupted;
  prov.solve = rec;
  s.provenance = std::move(prov);
  r.schedule = std::move(s);
  return r;
}

}  // namespace schedc::solver::detail
