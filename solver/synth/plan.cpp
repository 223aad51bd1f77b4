// solver::solve_plan (plan.h; docs/solver.md, "The plan").

#include "solver/synth/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/action.h"
#include "ir/lower_bound.h"
#include "solver/synth/budget.h"
#include "solver/synth/progress.h"
#include "support/numbers.h"

namespace schedc::solver {

namespace {

using Clock = std::chrono::steady_clock;
using Counts = std::vector<int32_t>;

// The branch and bound of the plan bound: partitions bounded by ir::lower_bound, then nodes (its
// share of the limit and its speed: budget.h).
constexpr int64_t kFullBounds = 3000;
constexpr int64_t kMaxNodes = 2'000'000;

}  // namespace

std::vector<int32_t> stages_per_rank_choices(ir::PlacementKind placement) {
  switch (placement) {
    case ir::PlacementKind::Looped: return {1, 2, 4};
    case ir::PlacementKind::VShape: return {2};
    case ir::PlacementKind::Wave: return {2, 4};
    case ir::PlacementKind::Custom: return {};
  }
  return {};
}

std::vector<PlanShape> plan_shapes(const PlanSpace& space) {
  using P = ir::PlacementKind;
  const int32_t stated = space.base.stages_per_rank;
  std::vector<PlanShape> out;
  auto add = [&](P placement) {
    if (space.vpp_auto) {
      for (int32_t v : stages_per_rank_choices(placement)) out.push_back({placement, v});
      return;
    }
    const bool fits = placement == P::Looped || placement == P::Custom || (placement == P::VShape && stated == 2) ||
                      (placement == P::Wave && stated >= 2);
    if (fits) out.push_back({placement, stated});
  };
  if (space.placement_auto) {
    for (P placement : {P::Looped, P::VShape, P::Wave}) add(placement);
  } else {
    add(space.base.placement);
  }
  return out;
}

namespace {

// A candidate: a number of stages per rank and (with a model) a partition.
struct Candidate {
  PlanShape shape;
  int32_t vpp = 1;
  Counts counts;
  ir::Problem problem;
  double bound = 0;
  std::optional<SolveResult> result;
  std::string skipped;
  bool solved() const { return result && result->schedule && result->status != SolveStatus::Infeasible; }
};

// Memory-aware partitions: with a cap, the early stages hold more microbatches in flight (about
// S - s of them for stage s, over the stages per rank v), so they may need fewer layers than the
// balanced partition gives. For each pressure theta, the partition with the least largest stage
// time among those whose stage s fits theta * (S - s) / v microbatches in its share of the rank's
// room (the cap less its static memory, cut evenly over its stages); filled from the last stage,
// so the early stages get what is left.
std::vector<Counts> memory_aware_partitions(const ir::Problem& q, const ir::Model& m) {
  std::vector<Counts> out;
  if (!q.memory.cap) return out;
  const int32_t S = q.num_stages(), L = m.num_layers(), v = q.stages_per_rank;
  auto kind = [&](int32_t i) -> const ir::LayerKind& {
    return m.kinds[static_cast<size_t>(m.layers[static_cast<size_t>(i)])];
  };
  for (double theta : {0.25, 0.5, 0.75, 1.0, 1.5, 2.0}) {
    // Greedy from the last stage: stage s takes layers while its time stays within t and its
    // in-flight activations and static memory within its share of the rank's cap.
    auto fill = [&](double t, Counts* counts) {
      int32_t end = L;  // layers [0, end) are left for stages 0..s
      for (int32_t s = S - 1; s >= 0; --s) {
        const double cap = q.stated_cap_of(q.rank_of(0, ir::StageId(s))).value_or(0) / v;
        const double flight = theta * std::max(1.0, static_cast<double>(S - s) / v);
        int32_t begin = end;
        auto fits = [&](int32_t b) {
          ir::StageSums x = ir::stage_sums(m, s, S, b, end - b);
          return x.F + x.B + x.W <= t && flight * x.memory + x.static_memory <= cap;
        };
        if (s == 0) {
          begin = 0;
          if (!fits(0)) return false;
        } else {
          while (begin > 0 && fits(begin - 1)) --begin;
          if (!fits(begin)) return false;  // even its fixed part does not fit
        }
        if (counts) (*counts)[static_cast<size_t>(s)] = end - begin;
        end = begin;
      }
      return end == 0;
    };
    double hi = 0;
    for (int32_t i = 0; i < L; ++i) hi += kind(i).F + kind(i).B + kind(i).W;
    for (int32_t s : {0, S - 1}) {
      ir::StageSums x = ir::stage_sums(m, s, S, 0, 0);
      hi += x.F + x.B + x.W;
    }
    if (!fill(hi, nullptr)) continue;
    double lo = 0;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2;
      (fill(mid, nullptr) ? hi : lo) = mid;
    }
    Counts c(static_cast<size_t>(S), 0);
    if (fill(hi, &c)) out.push_back(std::move(c));
  }
  return out;
}

class Planner {
 public:
  // Deterministic runs count the shares given (Budget::charge), not the clock; with a model the
  // plan bound's share is kept back from the searches.
  Planner(const PlanSpace& space, const SolveOptions& o)
      : space_(space), o_(o),
        budget_(o.time_limit_s * (space.model ? 1 - share::kPlanBound : 1), o.deterministic, o.stop) {}

  PlanResult run() {
    PlanResult out;
    ProgressReporter progress(o_.progress, o_.tty, budget_.start());
    progress_ = &progress;
    // The initial candidates: per shape (placement and stages per rank), the stated (or
    // balanced) partition and, with a model under a cap, the memory-aware ones.
    const std::vector<PlanShape> shapes = plan_shapes(space_);
    shapes_ = shapes.size();
    for (const PlanShape& shape : shapes) {
      const ir::Problem q = shaped(shape);
      std::vector<Counts> parts;
      if (space_.model) {
        parts.push_back(ir::balanced_partition(*space_.model, q.num_stages()));
        // Where the balanced partition's static memory is over the cap, one whose static fits.
        if (ir::with_partition(q, *space_.model, parts.back()).static_over_cap())
          if (ir::StaticFit fit = ir::fit_static(q, *space_.model); fit.counts) parts.push_back(std::move(*fit.counts));
        for (Counts& c : memory_aware_partitions(q, *space_.model))
          if (std::find(parts.begin(), parts.end(), c) == parts.end()) parts.push_back(std::move(c));
      } else {
        parts.emplace_back();
      }
      for (Counts& c : parts) add(shape, std::move(c), q);
    }
    // Screening, in the order of the bounds.
    std::vector<size_t> order(cands_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cands_[a].bound < cands_[b].bound; });
    const double limit = o_.time_limit_s;
    const bool moves = space_.model != nullptr;
    const double screen = limit * (moves ? share::kPlanScreen : 1.0);
    size_t valid = 0;
    for (const Candidate& c : cands_) valid += c.skipped.empty();
    for (size_t k = 0; k < order.size() && !interrupted_; ++k) {
      Candidate& c = cands_[order[k]];
      if (!c.skipped.empty()) continue;
      if (best_ && c.bound >= objective(*best_)) {
        c.skipped = "its bound " + format_number(c.bound) + " is no better than " + format_number(objective(*best_));
        continue;
      }
      solve(order[k], screen / static_cast<double>(std::max<size_t>(valid, 1)), {});
    }
    if (moves && best_ && !interrupted_) move_layers(limit * share::kPlanMoves);
    // The leftover to the best candidate while its gap is open: its search goes on from its
    // schedule (a warm start: never worse).
    if (best_ && !interrupted_ && cands_[*best_].result->status != SolveStatus::Optimal &&
        budget_.left() > share::kPlanLeftover * limit) {
      const size_t b = *best_;
      solve(b, budget_.left(), {{"plan", *cands_[b].result->schedule}});
    }
    return finish(out);
  }

 private:
  // The stated problem at a shape: with a model, only its stage count and placement change (the
  // partition's values come later); without one, the stated per-rank values cut evenly.
  ir::Problem shaped(const PlanShape& shape) const {
    ir::Problem q = space_.base;
    if (space_.vpp_auto && !space_.model) q = ir::with_stages_per_rank(space_.base, shape.stages_per_rank);
    q.stages_per_rank = shape.stages_per_rank;
    q.placement = shape.placement;
    return q;
  }

  double objective(size_t i) const { return cands_[i].result->objective; }

  // A new candidate (or the one already there); its index.
  size_t add(const PlanShape& shape, Counts counts, const ir::Problem& q) {
    for (size_t i = 0; i < cands_.size(); ++i)
      if (cands_[i].shape == shape && cands_[i].counts == counts) return i;
    Candidate c;
    c.shape = shape;
    c.vpp = shape.stages_per_rank;
    c.problem = space_.model ? ir::with_partition(q, *space_.model, counts) : q;
    c.counts = std::move(counts);
    if (auto errors = ir::validate(c.problem); !errors.empty()) c.skipped = errors.front().message;
    else c.bound = ir::lower_bound(c.problem).value;
    cands_.push_back(std::move(c));
    return cands_.size() - 1;
  }

  // Solves candidate i for `seconds` (at least a sliver), from the warm starts; a better result
  // than its last is kept, and the best candidate follows.
  void solve(size_t i, double seconds, std::vector<SolveOptions::WarmStart> warm) {
    Candidate& c = cands_[i];
    SolveOptions o = o_;
    o.progress = nullptr;
    o.time_limit_s = std::clamp(std::min(seconds, budget_.left()), kMinTimeLimit, kMaxTimeLimit);
    // A search's fixed work (incumbents, families) is not in its share: each is charged at least
    // share::kMinDeterministicCharge of the limit.
    budget_.charge(budget_.deterministic() ? std::max(o.time_limit_s, o_.time_limit_s * share::kMinDeterministicCharge)
                                           : o.time_limit_s);
    o.warm_starts = std::move(warm);
    if (c.result && c.result->schedule) o.warm_starts.push_back({"plan", *c.result->schedule});
    SolveResult r = synthesize(c.problem, o);
    if (r.interrupted) interrupted_ = true;
    const bool ok = r.schedule && r.status != SolveStatus::Infeasible;
    if (!c.result || (ok && (!c.solved() || r.objective < c.result->objective)) ||
        (ok && r.objective == c.result->objective && r.status == SolveStatus::Optimal))
      c.result = std::move(r);
    if (!c.solved()) return;
    if (!best_ || better(i, *best_)) best_ = i;
    ProgressState st;
    st.best = objective(*best_);
    st.found_by = "plan";
    st.unit = space_.base.time_unit;
    progress_->publish(st);
  }

  // A partition-space bound on the time tick every plan of the model is timed on (the layer
  // kinds' values and the problem's, its sums in doubles carry the last places' noise: 937.4 read
  // as 937.4000000000004): the nearest tick where it is that noise, else the tick below (lowering
  // a bound keeps it sound).
  double on_tick(double value, const ir::Problem& q) const {
    std::vector<double> values = ir::time_values(q);
    for (const ir::LayerKind& kind : space_.model->kinds) values.insert(values.end(), {kind.F, kind.B, kind.W});
    const auto scale = static_cast<double>(ir::exact_scale(values));
    const double ticks = value * scale, nearest = std::round(ticks);
    const double noise = 1e-9 * std::max(1.0, std::abs(ticks));
    return (std::abs(ticks - nearest) <= noise ? nearest : std::floor(ticks)) / scale;
  }

  // a's result beats b's: a smaller makespan, then fewer stages per rank, then the earlier one.
  bool better(size_t a, size_t b) const {
    const double x = objective(a), y = objective(b);
    if (x != y) return x < y;
    return cands_[a].vpp < cands_[b].vpp;
  }

  // Moves of one layer across one stage boundary, from the best candidate's partition: each
  // neighbour (skipped when its bound cannot beat the best) is searched from the best schedule
  // (same shape), the first that improves becomes the centre; until the share is used or no
  // neighbour improves.
  void move_layers(double seconds) {
    const double until = budget_.charged() + seconds;
    const auto t_end = Clock::now() + std::chrono::duration<double>(seconds);
    auto left = [&] {
      return budget_.deterministic() ? until - budget_.charged()
                                     : std::chrono::duration<double>(t_end - Clock::now()).count();
    };
    const double each = std::max(share::kMinNeighbourSeconds, o_.time_limit_s * share::kPlanNeighbour);
    bool improved = true;
    while (improved && !interrupted_ && left() > 0) {
      improved = false;
      const size_t centre = *best_;
      const Candidate base = cands_[centre];
      const ir::Problem q = shaped(base.shape);
      std::vector<size_t> next;
      const int32_t S = static_cast<int32_t>(base.counts.size());
      for (int32_t s = 0; s + 1 < S; ++s)
        for (int dir : {-1, 1}) {
          Counts c = base.counts;
          const auto from = static_cast<size_t>(dir < 0 ? s : s + 1), to = static_cast<size_t>(dir < 0 ? s + 1 : s);
          if (c[from] == 0) continue;
          --c[from];
          ++c[to];
          const size_t before = cands_.size();
          const size_t j = add(base.shape, std::move(c), q);
          if (j < before || !cands_[j].skipped.empty()) continue;  // seen, or invalid
          next.push_back(j);
        }
      std::stable_sort(next.begin(), next.end(), [&](size_t a, size_t b) { return cands_[a].bound < cands_[b].bound; });
      for (size_t j : next) {
        if (interrupted_ || left() <= 0) break;
        if (cands_[j].bound >= objective(*best_)) {
          cands_[j].skipped = "its bound " + format_number(cands_[j].bound) + " is no better than " +
                              format_number(objective(*best_));
          continue;
        }
        solve(j, std::min(each, left()), {{"plan", *cands_[centre].result->schedule}});
        if (*best_ != centre) {
          improved = true;
          break;
        }
      }
    }
  }

  PlanResult finish(PlanResult& out) {
    out.candidates.reserve(cands_.size());
    for (const Candidate& c : cands_) {
      PlanCandidate row;
      row.placement = c.shape.placement;
      row.stages_per_rank = c.vpp;
      row.layers_per_stage = c.counts;
      row.bound = c.bound;
      if (c.solved()) {
        row.makespan = c.result->objective;
        row.status = std::string(to_string(c.result->status));
      } else if (c.result) {
        row.status = "no schedule meets the cap";
      } else {
        row.status = c.skipped.empty() ? "not tried: the time was used" : "skipped: " + c.skipped;
      }
      out.candidates.push_back(std::move(row));
    }
    // Without a solved candidate: the first tried one's answer (an infeasible cap explained).
    std::optional<size_t> pick = best_;
    for (size_t i = 0; !pick && i < cands_.size(); ++i)
      if (cands_[i].result) pick = i;
    if (!pick) {
      for (const Candidate& c : cands_)
        if (!c.skipped.empty()) {
          out.error = c.skipped;
          break;
        }
      if (out.error.empty()) out.error = "no candidate was tried";
      out.problem = cands_.empty() ? space_.base : cands_.front().problem;
      return out;
    }
    Candidate& c = cands_[*pick];
    out.candidates[*pick].chosen = best_.has_value();
    out.problem = c.problem;
    out.stages_per_rank = c.vpp;
    out.layers_per_stage = c.counts;
    out.solve = *c.result;
    if (!best_) {
      // None fits: the first tried candidate's reason, said to be that plan's (a smaller cap may
      // suit another partition or shape, so its smallest cap is not the space's); where the space
      // is one stage a rank, a cap below what every partition needs is proved too small for all.
      if ((space_.model || cands_.size() > 1) && out.solve.infeasible) {
        Infeasibility& why = *out.solve.infeasible;
        std::string plan = std::string(ir::to_string(c.shape.placement)) + ", " + std::to_string(c.vpp) +
                           (c.vpp == 1 ? " stage" : " stages") + " per rank";
        if (!c.counts.empty()) {
          plan += ", layers";
          for (int32_t n : c.counts) plan += " " + std::to_string(n);
        }
        std::optional<double> least;
        if (space_.model && !space_.vpp_auto && !space_.placement_auto && c.vpp == 1)
          least = ir::least_cap_any_partition(c.problem, *space_.model);
        const double cap = c.problem.memory.cap ? c.problem.memory.cap->at(0) : 0;
        if (least && *least > cap) {
          why.explanation = "every partition of the model's " + std::to_string(space_.model->num_layers()) +
                            " layers needs at least " + format_number(*least) + c.problem.memory_unit +
                            " on some rank (a stage's static memory and one microbatch's whole activations when its "
                            "backward starts, which recomputation cannot lower), above the cap of " +
                            format_number(cap) + c.problem.memory_unit;
        } else {
          why.explanation = "none of the plan's " + std::to_string(cands_.size()) +
                            (cands_.size() == 1 ? " candidate" : " candidates") + " fits; with the first tried (" +
                            plan + "), " + why.explanation;
          if (why.smallest_cap > 0)
            why.explanation += " (that plan fits a cap of " + format_number(why.smallest_cap) + ")";
        }
        why.smallest_cap = 0;
      }
      return out;
    }
    out.candidate_bound = out.solve.lower_bound;
    // The plan bound: no plan of the space beats it. Per stages-per-rank value tried, the least
    // bound over every partition (a branch and bound) or its candidate's own proved bound.
    const double best = out.solve.objective;
    double bound = best;
    std::vector<PlanShape> seen;
    for (const Candidate& k : cands_) {
      if (std::find(seen.begin(), seen.end(), k.shape) != seen.end()) continue;
      seen.push_back(k.shape);
      if (!space_.model) {
        if (!k.skipped.empty() && !k.result) {
          // An invalid candidate is outside the space; one skipped by its bound is above it.
          if (k.bound > 0) bound = std::min(bound, k.bound);
          continue;
        }
        bound = std::min(bound, k.result ? k.result->lower_bound : k.bound);
        continue;
      }
      // Half the bound's share for ir::lower_bound on the best partitions and nodes (two calls
      // a partition, at about rate::kBoundActions), half for the nodes' cheap bounds.
      const double per_shape = o_.time_limit_s * share::kPlanBound / static_cast<double>(std::max<size_t>(shapes_, 1));
      const double actions = static_cast<double>(ir::num_action_slots(k.problem));
      const auto full = static_cast<int64_t>(std::clamp(
          per_shape / 2 * rate::kBoundActions / 2 / std::max(actions, 1.0), 4.0, static_cast<double>(kFullBounds)));
      const auto nodes = static_cast<int64_t>(
          std::max(1000.0, per_shape / 2 * rate::kNodeStages / std::max(1, k.problem.num_stages())));
      PartitionBound pb = partition_space_bound(shaped(k.shape), *space_.model, best, full, std::min(kMaxNodes, nodes));
      out.partitions_bounded += pb.leaves;
      out.bound_exhaustive = out.bound_exhaustive && pb.exhaustive;
      bound = std::min(bound, on_tick(pb.value, k.problem));
    }
    // A space of one candidate (no model to cut): the plan's bound is its own (what its search proved).
    if (!space_.model && cands_.size() == 1) bound = out.solve.lower_bound;
    SolveResult& r = out.solve;
    // A valid schedule below the plan bound is a bug: the bound is dropped, never clamped to it.
    r.lower_bound = bound;
    if (bound > r.objective + 1e-9 * std::max(1.0, std::abs(r.objective))) {
      r.bound_error = "a valid schedule (plan, " + format_number(r.objective) + ") is below the plan bound " +
                      format_number(bound) + "; this is a bug in schedc, and no bound is claimed";
      r.lower_bound = 0;
      r.bound_reason = "none (dropped: a valid schedule was below it)";
    }
    r.gap = relative_gap(r.objective, r.lower_bound);
    const bool proved = r.objective <= r.lower_bound + 1e-9 * std::max(1.0, std::abs(r.objective));
    r.status = proved ? SolveStatus::Optimal : SolveStatus::Feasible;
    if (!proved && r.bound_error.empty()) r.bound_reason = "the least bound over every plan of the space searched";
    r.seconds = budget_.elapsed();
    r.interrupted = interrupted_;
    // The document's record claims what the plan proved, not what its candidate did alone.
    if (r.schedule && r.schedule->provenance && r.schedule->provenance->solve) {
      ir::SolveRecord& rec = *r.schedule->provenance->solve;
      rec.status = std::string(to_string(r.status));
      rec.lower_bound = r.lower_bound;
      rec.gap = r.gap;
      rec.bound = r.bound_reason;
      if (!budget_.deterministic()) rec.seconds = std::round(r.seconds * 1000) / 1000;
      rec.interrupted = interrupted_;
    }
    ProgressState st;
    st.best = r.objective;
    st.found_by = "plan";
    st.bound = r.lower_bound;
    st.unit = space_.base.time_unit;
    progress_->publish(st, true);
    return out;
  }

  const PlanSpace& space_;
  const SolveOptions& o_;
  Budget budget_;
  std::vector<Candidate> cands_;
  std::optional<size_t> best_;
  size_t shapes_ = 0;
  bool interrupted_ = false;
  ProgressReporter* progress_ = nullptr;
};

}  // namespace

PlanResult solve_plan(const PlanSpace& space, const SolveOptions& options) {
  if (!space.vpp_auto && !space.placement_auto && !space.model) {
    PlanResult out;
    out.solve = synthesize(space.base, options);
    out.problem = space.base;
    out.stages_per_rank = space.base.stages_per_rank;
    out.candidate_bound = out.solve.lower_bound;
    return out;
  }
  return Planner(space, options).run();
}

}  // namespace schedc::solver
