// The constructive phase of the portfolio search (search_impl.h): every family, the families
// fitted under the cap, the pair and greedy variants, the Zero Bubble sweep and the cap ladder
// (passes 3-8 of solver/README.md).

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/explain.h"
#include "solver/synth/fit_cap.h"
#include "solver/synth/greedy.h"
#include "solver/synth/instance.h"
#include "solver/synth/pair_greedy.h"
#include "solver/synth/search_impl.h"
#include "support/numbers.h"

namespace schedc::solver {

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

bool same_shape(const ir::Problem& a, const ir::Problem& b, std::string* why) {
  auto differ = [&](std::string_view what, std::string x, std::string y) {
    if (why) *why = std::string(what) + " " + x + ", not " + y;
    return false;
  };
  using std::to_string;
  if (a.ranks != b.ranks) return differ("ranks", to_string(a.ranks), to_string(b.ranks));
  if (a.stages_per_rank != b.stages_per_rank)
    return differ("stages per rank", to_string(a.stages_per_rank), to_string(b.stages_per_rank));
  if (a.microbatches != b.microbatches)
    return differ("microbatches", to_string(a.microbatches), to_string(b.microbatches));
  if (a.directions != b.directions)
    return differ("direction", ir::direction_name(a.directions), ir::direction_name(b.directions));
  if (a.backward != b.backward)
    return differ("backward", std::string(ir::to_string(a.backward)), std::string(ir::to_string(b.backward)));
  // The stage-to-rank map decides which orders are valid, whatever the placement is called.
  for (int32_t d = 0; d < a.num_directions(); ++d)
    for (int32_t st = 0; st < a.num_stages(); ++st)
      if (a.rank_of(d, ir::StageId(st)) != b.rank_of(d, ir::StageId(st)))
        return differ("placement", std::string(ir::to_string(a.placement)),
                      std::string(ir::to_string(b.placement)) + " (stage " + to_string(st) + " is on another rank)");
  return true;
}

namespace detail {

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
/// Families built for this kind of problem (its backward, direction, placement and stages per
/// rank): tried first, since at scale only the first one or two fit the time limit.
// Whether every rank's peak activations in s's orders stay within p's cap (as the families'
// registry checks it: activations against the cap less static memory, in fixed point).
bool within_caps(const ir::Schedule& s, const ir::Problem& p) {
  if (!p.memory.cap) return true;
  const std::vector<double> peaks = ir::peak_memory(s);
  const int64_t scale = ir::memory_scale(p);
  for (int32_t r = 0; r < p.ranks; ++r)
    if (ir::to_fixed(peaks[static_cast<size_t>(r)], scale) > ir::to_fixed(*p.cap_of(ir::RankId(r)), scale))
      return false;
  return true;
}

bool native_family(const FamilyInfo& f, const ir::Problem& p) {
  bool split_like = p.backward != ir::BackwardMode::Fused;
  return (f.backward != ir::BackwardMode::Fused) == split_like &&
         (f.directions == p.directions || (f.any_directions && p.directions >= 2)) && f.placement == p.placement &&
         (f.stages_per_rank == 0 || f.stages_per_rank == p.stages_per_rank);
}
}  // namespace

// The caller's schedules, re-timed under this problem: offered as they are when valid, fitted
// under the cap when only the cap is broken, skipped with a warning otherwise.
void Search::warm_starts() {
  for (const SolveOptions::WarmStart& w : o_.warm_starts) {
    if (stopped()) break;
    std::string why;
    if (!same_shape(w.schedule.problem, p_, &why)) {
      warnings_.push_back("warm start " + w.name + " is not for this problem (" + why + "); not used");
      continue;
    }
    ir::Schedule s = w.schedule;
    s.problem = p_;
    s.provenance.reset();
    if (!p_.cost.FB) s.overlap.clear();  // unpriced units run their pairs one after the other
    const std::vector<ir::VerifyIssue> issues = ir::verify(s);
    if (issues.empty()) {
      offer(std::move(s), w.name, /*verified=*/true);
      continue;
    }
    const bool only_cap = std::all_of(issues.begin(), issues.end(),
                                      [](const ir::VerifyIssue& i) { return i.kind == DiagKind::MemoryCap; });
    if (only_cap) {
      const Deadline deadline = work_deadline();
      if (auto fitted = defer_to_cap(s, p_, &deadline)) {
        if (ir::verify(*fitted).empty()) {  // the fitted orders can wait on each other in a cycle
          o_.debug.print("warm start %s: fitted under the cap", w.name.c_str());
          offer(std::move(*fitted), w.name + "-fitted", /*verified=*/true);
          continue;
        }
      }
      warnings_.push_back("warm start " + w.name + " goes over the memory cap and does not fit under it; not used");
      continue;
    }
    warnings_.push_back("warm start " + w.name + " is not a valid schedule of this problem (" + issues.front().message +
                        "); not used");
  }
}

void Search::collect_incumbents() {
  // Seconds of the slowest family so far (generating, verifying, simulating): at pp 1024, m 1302
  // each takes seconds, so a family that would end past the limit is not started.
  double slowest = 0;
  // The families' orders, for fitting under caps below their own peaks (fit_cap.h), with a cap
  // or without: at most 4e6 actions kept in all.
  std::vector<std::pair<std::string, ir::Schedule>> templates;
  size_t kept_actions = 0;
  warm_starts();
  auto keep_template = [&](const std::string& name, const ir::Schedule& s) {
    if (kept_actions + s.num_actions() > 4'000'000) return;
    kept_actions += s.num_actions();
    templates.emplace_back(name, s);
  };
  if (o_.use_families) {
    const std::vector<FamilyInfo>& all = families();
    std::vector<size_t> order(all.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) { return native_family(all[i], p_); });
    // With a cap, each family is generated without it (a family's orders never depend on the
    // cap; the registry only checks it afterwards) and checked here: one that meets the cap is
    // offered as it is, one that goes over it is fitted under it at once (fit_cap.h), so an order
    // that needs a little more memory than the cap keeps its structure (two directions, pp 16,
    // m 64: dualpipe holds 17 microbatches' activations; fitted under a cap of 16 it gives 346.6
    // where the best greedy variant reached 398.5). Generated once, not again for the fitting:
    // at pp 1024 each generation takes seconds.
    ir::Problem open = p_;
    open.memory.cap.reset();
    for (size_t i : order) {
      // Until a schedule is in hand the native families run whatever the clock or an interrupt
      // says: they are the cheap, good incumbents, so the answer is never worse than a native
      // family that fits (pp 512, m 1024, limit 3 s: zb-h1 meets the bound in 1.3 s; before, the
      // bound's 1.2 s used the limit up and the answer was the sequential schedule, 293x longer).
      const bool floor = !best_ && native_family(all[i], p_);
      if (stopped() && !floor) break;
      // Once one family met the bound nothing beats it; near the limit the best so far is kept.
      if (best_ && best_->value <= lower_ + 1e-9) break;
      if (budget_.clock_short(usable(), slowest) && !floor) break;
      const double t0 = elapsed();
      Diagnostics scratch;
      const Deadline deadline = floor ? Deadline{} : work_deadline();
      auto s = generate_family(all[i].name, open, {}, SourceLoc{}, scratch, &deadline);
      if (s) {
        keep_template(all[i].name, *s);
        if (within_caps(*s, p_)) {
          s->problem = p_;  // valid under p_: the same orders, and the cap holds
          offer(std::move(*s), all[i].name, /*verified=*/true, i);
        } else {
          auto fitted = defer_to_cap(*s, p_, &deadline);
          o_.debug.print("%s-fitted: %s", all[i].name.c_str(), fitted ? "fits" : "does not fit");
          if (fitted) offer(std::move(*fitted), all[i].name + "-fitted");
        }
      }
      o_.debug.print("family %s: %s in %.2f s", all[i].name.c_str(), s ? "generated" : "declined", elapsed() - t0);
      slowest = std::max(slowest, elapsed() - t0);
    }
  }
  // Every family fitted under caps below its own peak (three levels of the ladder's grid), with or
  // without a stated cap: fewer forwards in flight can run the backwards sooner (two directions,
  // pp 16, m 64, cap 24: dualpipe 350.7 at its peak of 17; fitted under 16.5, 345.6).
  for (const auto& [name, t] : templates) {
    if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;
    if (budget_.clock_short(usable(), slowest) || budget_.clock_past(share::kFittedFamilies)) break;
    const std::vector<double> peaks = activation_peaks(t);
    ir::Problem capped = p_;  // without a cap, the levels start below the family's own peak
    if (!capped.memory.cap) {
      double top = 0;
      for (int32_t r = 0; r < p_.ranks; ++r)
        top = std::max(top, peaks[static_cast<size_t>(r)] + p_.static_of(ir::RankId(r)));
      capped.memory.cap = ir::PerStage::of(top);
    }
    std::vector<ir::Problem> levels = cap_ladder(capped, peaks);
    for (size_t k = 0; k < std::min<size_t>(3, levels.size()); ++k) {
      const Deadline deadline = work_deadline();
      auto fitted = defer_to_cap(t, levels[k], &deadline);
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
      if (budget_.clock_past(share::kFittedFamilies)) break;
      const Deadline deadline = work_deadline();
      if (auto s = pair_greedy(p_, v, &deadline)) offer(std::move(*s), v.name());
    }
  // Nothing constructive can beat a family that meets the bound, and at scale the greedy phase is
  // the slow part; past the time limit (or an interrupt) the families' best is the incumbent.
  const bool bound_met = best_ && best_->value <= lower_ + 1e-9;
  if (o_.use_greedy && !bound_met && !stopped() && !budget_.clock_short(usable(), slowest)) {
    const double sweep_seconds = budget_.limit() * share::kGreedySweep;
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
      if (budget_.deterministic()) {
        double per_variant = static_cast<double>(inst.size()) * static_cast<double>(p_.ranks) / rate::kGreedySlots;
        runs_budget = sweep_seconds / std::max(1e-9, per_variant);
        sweep_count = static_cast<size_t>(std::clamp(runs_budget, 8.0, double(sweep.size())));
      }
      size_t classic = variants.size();
      variants.insert(variants.end(), sweep.begin(),
                      sweep.begin() + static_cast<long>(std::min(sweep_count, sweep.size())));
      for (size_t k = 0; k < variants.size(); ++k) {
        const GreedyVariant& v = variants[k];
        if (stopped() || (best_ && best_->value <= lower_ + 1e-9)) break;  // nothing beats the bound
        if (k > 0 &&
            (k >= classic ? budget_.clock_past(share::kGreedySweep) : budget_.clock_short(usable(), slowest_run)))
          break;
        ++runs_used;
        const double t0 = elapsed();
        const Deadline deadline = work_deadline();
        if (auto orders = greedy_orders(inst, v, &deadline)) {
          ir::Schedule sched = to_schedule(inst, *orders);
          sched.problem = p_;  // valid under q's caps, so under p's, which are no tighter
          if (o_.debug.enabled()) {
            auto sim = ir::simulate(sched);
            o_.debug.print("%s%s -> %s", v.name().c_str(), tag.c_str(),
                           sim.timeline ? format_number(sim.timeline->metrics.objective_value(p_.objective)).c_str()
                                        : "deadlock");
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
      if (budget_.deterministic() ? static_cast<double>(runs_used + per_cap) > runs_budget
                                  : budget_.clock_past(share::kGreedySweep))
        break;
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
}  // namespace detail

}  // namespace schedc::solver
