#include "solver/synth/local_search.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <random>

#include "ir/order_sim.h"

namespace schedc::solver {

std::string_view move_name(int move) {
  switch (move) {
    case 0: return "w-gap";
    case 1: return "swap";
    case 2: return "shift";
    case 3: return "chain";
    case 4: return "pair";
    case 5: return "unpair";
  }
  return "?";
}

bool overlap_moves_apply(const ir::Problem& p) { return p.cost.FB.has_value(); }

namespace {

using Clock = std::chrono::steady_clock;
using Orders = std::vector<std::vector<int32_t>>;

class Annealer {
 public:
  Annealer(const ir::Schedule& start, const LocalSearchOptions& o, LocalSearchStats& stats)
      : p_(start.problem), o_(o), stats_(stats), sim_(start), rng_(o.seed) {
    cur_ = sim_.initial_orders();
    units_ = sim_.initial_units();
    pairing_ = overlap_moves_apply(p_);
    pos_.assign(sim_.size(), 0);
    for (size_t r = 0; r < cur_.size(); ++r) reindex(r);
    node_of_.assign(ir::num_action_slots(p_), -1);
    for (size_t i = 0; i < sim_.size(); ++i)
      node_of_[ir::action_id(p_, sim_.action(static_cast<int32_t>(i))).index()] = static_cast<int32_t>(i);
    dmin_ = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < sim_.size(); ++i)
      if (sim_.duration(static_cast<int32_t>(i)) > 0) dmin_ = std::min(dmin_, sim_.duration(static_cast<int32_t>(i)));
    if (dmin_ == std::numeric_limits<int64_t>::max()) dmin_ = 1;
  }

  ir::Schedule run();

 private:
  double energy() const {
    double sum = 0;
    for (size_t r = 0; r < cur_.size(); ++r)
      sum += static_cast<double>(p_.objective == ir::Objective::Makespan ? sim_.rank_end(r) : sim_.rank_span(r));
    return static_cast<double>(sim_.objective(p_.objective)) + 0.1 * sum / static_cast<double>(cur_.size());
  }
  void reindex(size_t r) {
    for (size_t i = 0; i < cur_[r].size(); ++i) pos_[static_cast<size_t>(cur_[r][i])] = static_cast<int32_t>(i);
  }
  uint64_t pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  /// A rank that decides the objective (40 %) or any rank.
  size_t pick_rank() {
    size_t R = cur_.size();
    if (pick(10) < 4) return critical_;
    return static_cast<size_t>(pick(R));
  }
  /// Keeps rank r's order to undo the move (once per move).
  void save(size_t r) {
    if (std::find(touched_.begin(), touched_.end(), r) != touched_.end()) return;
    touched_.push_back(r);
    saved_.push_back(cur_[r]);
  }
  static void move_to(std::vector<int32_t>& order, size_t from, size_t to) {
    if (from < to)
      std::rotate(order.begin() + static_cast<long>(from), order.begin() + static_cast<long>(from) + 1,
                  order.begin() + static_cast<long>(to) + 1);
    else if (to < from)
      std::rotate(order.begin() + static_cast<long>(to), order.begin() + static_cast<long>(from),
                  order.begin() + static_cast<long>(from) + 1);
  }
  /// True when every same-rank dependency of `a` stands before position `at`.
  bool same_rank_pred_before(int32_t a, size_t at) const {
    for (int32_t k = 0; k < sim_.num_preds(a); ++k) {
      int32_t d = sim_.preds_begin(a)[k].node;
      if (sim_.rank(d) == sim_.rank(a) && static_cast<size_t>(pos_[static_cast<size_t>(d)]) >= at) return false;
    }
    return true;
  }
  bool propose(int move);
  bool move_w_gap();
  bool move_swap();
  bool move_shift();
  bool move_chain();
  bool move_pair();
  bool move_unpair();
  /// Sets node a's unit partner, logging the old one for undo.
  void set_unit(int32_t a, int32_t b) {
    unit_log_.push_back({a, units_[static_cast<size_t>(a)]});
    units_[static_cast<size_t>(a)] = b;
  }
  void pair(int32_t a, int32_t b) { set_unit(a, b), set_unit(b, a); }
  void unpair(int32_t a) {
    int32_t b = units_[static_cast<size_t>(a)];
    if (b < 0) return;
    set_unit(a, -1), set_unit(b, -1);
  }
  /// The step at position i of an order: [i, i], or the two positions of i's unit.
  std::pair<size_t, size_t> block_at(const std::vector<int32_t>& order, size_t i) const {
    int32_t b = units_[static_cast<size_t>(order[i])];
    if (b >= 0 && i + 1 < order.size() && order[i + 1] == b) return {i, i + 1};
    if (b >= 0 && i > 0 && order[i - 1] == b) return {i - 1, i};
    return {i, i};
  }
  /// Breaks the units on rank r whose members a move left apart.
  void break_separated(size_t r) {
    const auto& order = cur_[r];
    for (size_t i = 0; i < order.size(); ++i) {
      int32_t b = units_[static_cast<size_t>(order[i])];
      if (b < 0) continue;
      bool next_to = (i + 1 < order.size() && order[i + 1] == b) || (i > 0 && order[i - 1] == b);
      if (!next_to) unpair(order[i]);
    }
  }
  void undo_units() {
    for (size_t k = unit_log_.size(); k-- > 0;) units_[static_cast<size_t>(unit_log_[k].first)] = unit_log_[k].second;
    unit_log_.clear();
  }
  /// The rank that decides the objective of the committed orders.
  void find_critical() {
    for (size_t r = 0; r < cur_.size(); ++r) {
      int64_t v = p_.objective == ir::Objective::Makespan ? sim_.rank_end(r) : sim_.rank_span(r);
      if (r == 0 || v > crit_value_) crit_value_ = v, critical_ = r;
    }
  }

  const ir::Problem& p_;
  const LocalSearchOptions& o_;
  LocalSearchStats& stats_;
  ir::OrderSimulator sim_;
  std::mt19937_64 rng_;
  Orders cur_;
  ir::OrderSimulator::Units units_;
  std::vector<std::pair<int32_t, int32_t>> unit_log_;  // (node, old partner) of the current move
  bool pairing_ = false;
  std::vector<int32_t> pos_, node_of_;
  size_t critical_ = 0;
  int64_t crit_value_ = 0;
  int64_t dmin_ = 1;
  std::vector<size_t> touched_;
  std::vector<std::vector<int32_t>> saved_;
};

// A weight gradient moved into an idle gap of its rank: one of the next three W's after the gap.
bool Annealer::move_w_gap() {
  size_t r = pick_rank();
  const auto& order = cur_[r];
  if (order.size() < 3) return false;
  // Gaps: positions whose action starts after the previous one ended.
  size_t gaps = 0, chosen = 0;
  for (size_t i = 1; i < order.size(); ++i)
    if (sim_.start(order[i]) > sim_.end(order[i - 1])) {
      ++gaps;
      if (pick(gaps) == 0) chosen = i;  // reservoir sampling: uniform over gaps
    }
  if (gaps == 0) return false;
  size_t which = static_cast<size_t>(pick(3)), seen = 0;
  for (size_t i = chosen; i < order.size(); ++i) {
    int32_t a = order[i];
    if (sim_.action(a).kind != ir::ActionKind::W) continue;
    if (seen++ < which) continue;
    if (!same_rank_pred_before(a, chosen)) return false;
    save(r);
    move_to(cur_[r], i, chosen);
    return true;
  }
  return false;
}

// Swaps two neighbouring steps of a rank: an action, or an overlapped unit as a whole.
bool Annealer::move_swap() {
  size_t r = pick_rank();
  auto& order = cur_[r];
  if (order.size() < 2) return false;
  auto [a0, a1] = block_at(order, static_cast<size_t>(pick(order.size() - 1)));
  if (a1 + 1 >= order.size()) return false;
  auto [b0, b1] = block_at(order, a1 + 1);
  for (size_t y = b0; y <= b1; ++y)
    for (int32_t k = 0; k < sim_.num_preds(order[y]); ++k)
      for (size_t x = a0; x <= a1; ++x)
        if (sim_.preds_begin(order[y])[k].node == order[x]) return false;
  save(r);
  std::rotate(order.begin() + static_cast<long>(a0), order.begin() + static_cast<long>(b0),
              order.begin() + static_cast<long>(b1) + 1);
  return true;
}

// Moves one step (an action, or a unit as a whole) by up to 3pp slots.
bool Annealer::move_shift() {
  size_t r = pick_rank();
  auto& order = cur_[r];
  if (order.size() < 2) return false;
  const auto reach = static_cast<int64_t>(3 * p_.ranks);
  auto [a0, a1] = block_at(order, static_cast<size_t>(pick(order.size())));
  int64_t d = static_cast<int64_t>(pick(static_cast<uint64_t>(2 * reach))) - reach;
  if (d >= 0) ++d;
  const auto n = static_cast<int64_t>(order.size());
  const auto len = static_cast<int64_t>(a1 - a0);
  // The block's new first position.
  int64_t j = std::clamp<int64_t>(static_cast<int64_t>(a0) + d, 0, n - 1 - len);
  if (j == static_cast<int64_t>(a0)) return false;
  if (j < static_cast<int64_t>(a0))
    for (size_t x = a0; x <= a1; ++x)
      if (!same_rank_pred_before(order[x], static_cast<size_t>(j))) return false;
  save(r);
  auto it = order.begin();
  if (j < static_cast<int64_t>(a0)) std::rotate(it + j, it + static_cast<long>(a0), it + static_cast<long>(a1) + 1);
  else std::rotate(it + static_cast<long>(a0), it + static_cast<long>(a1) + 1, it + j + len + 1);
  return true;
}

// One microbatch's action of one kind, shifted by the same few slots on a run of consecutive
// stages: the coordinated change single-rank moves cannot build one step at a time.
bool Annealer::move_chain() {
  auto a = static_cast<int32_t>(pick(sim_.size()));
  ir::Action x = sim_.action(a);
  const int32_t S = p_.num_stages();
  int32_t len = 2 + static_cast<int32_t>(pick(static_cast<uint64_t>(std::max(1, std::min(S, 2 * p_.ranks) - 1))));
  int64_t d = static_cast<int64_t>(pick(3)) + 1;
  if (pick(2)) d = -d;
  bool any = false;
  for (int32_t u = x.stage.value; u < std::min(S, x.stage.value + len); ++u) {
    ir::Action y{x.kind, x.mb, ir::StageId(u)};
    int32_t node = node_of_[ir::action_id(p_, y).index()];
    if (node < 0) continue;
    auto r = static_cast<size_t>(sim_.rank(node));
    auto i = static_cast<int64_t>(pos_[static_cast<size_t>(node)]);
    if (std::find(touched_.begin(), touched_.end(), r) != touched_.end()) continue;  // positions stale
    int64_t j = std::clamp<int64_t>(i + d, 0, static_cast<int64_t>(cur_[r].size()) - 1);
    if (j == i) continue;
    save(r);
    move_to(cur_[r], static_cast<size_t>(i), static_cast<size_t>(j));
    any = true;
  }
  return any;
}

// A forward and a backward within a few slots of each other made one overlapped unit: the
// partner moves next to the chosen action (DualPipe's pairs, found one at a time).
bool Annealer::move_pair() {
  size_t r = pick_rank();
  auto& order = cur_[r];
  if (order.size() < 2) return false;
  size_t i = static_cast<size_t>(pick(order.size()));
  int32_t a = order[i];
  if (units_[static_cast<size_t>(a)] >= 0) return false;
  const auto reach = static_cast<int64_t>(std::max(2, p_.ranks));
  const auto lo = static_cast<size_t>(std::max<int64_t>(0, static_cast<int64_t>(i) - reach));
  const size_t hi = std::min(order.size() - 1, i + static_cast<size_t>(reach));
  size_t seen = 0, chosen = 0;
  for (size_t j = lo; j <= hi; ++j)
    if (j != i && units_[static_cast<size_t>(order[j])] < 0 && sim_.can_pair(a, order[j]) && pick(++seen) == 0)
      chosen = j;
  if (seen == 0) return false;
  int32_t b = order[chosen];
  if (chosen > i + 1 && !same_rank_pred_before(b, i + 1)) return false;
  save(r);
  if (chosen > i) move_to(order, chosen, i + 1);
  else if (chosen + 1 < i) move_to(order, chosen, i - 1);
  pair(a, b);
  return true;
}

bool Annealer::move_unpair() {
  size_t r = pick_rank();
  const auto& order = cur_[r];
  size_t seen = 0;
  int32_t chosen = -1;
  for (int32_t a : order)
    if (units_[static_cast<size_t>(a)] > a && pick(++seen) == 0) chosen = a;  // each unit once
  if (chosen < 0) return false;
  save(r);
  unpair(chosen);
  return true;
}

bool Annealer::propose(int move) {
  switch (move) {
    case 0: return move_w_gap();
    case 1: return move_swap();
    case 2: return move_shift();
    case 3: return move_chain();
    case 4: return move_pair();
    default: return move_unpair();
  }
}

ir::Schedule Annealer::run() {
  const auto t0 = Clock::now();
  bool ok = sim_.run(cur_, &units_);
  assert(ok && "the local search starts from a valid schedule");
  (void)ok;
  sim_.commit();
  find_critical();
  Orders best = cur_;
  ir::OrderSimulator::Units best_units = units_;
  int64_t best_obj = sim_.objective(p_.objective);
  double best_energy = energy(), cur_energy = best_energy;
  const double t_hi = 0.05 * static_cast<double>(dmin_), t_lo = 0.0005 * static_cast<double>(dmin_);
  const uint64_t stale_limit = std::max<uint64_t>(20'000, 20 * sim_.size());
  uint64_t stale = 0;
  double frac = 0;
  const bool timed = o_.deadline.timed();
  const double budget_s = timed ? std::chrono::duration<double>(o_.deadline.at - t0).count() : 0;
  // Look at the clock about every 2^16 timed actions, so large instances stop on time too.
  const uint64_t check_every = std::max<uint64_t>(1, (uint64_t{1} << 16) / std::max<size_t>(1, sim_.size()));
  for (uint64_t it = 0; stats_.evals < o_.max_evals && best_obj > o_.target; ++it) {
    if (it % check_every == 0) {
      if (o_.deadline.interrupted()) break;
      frac = static_cast<double>(stats_.evals) / static_cast<double>(std::max<uint64_t>(1, o_.max_evals));
      if (timed) {
        auto now = Clock::now();
        if (now >= o_.deadline.at) break;
        if (budget_s > 0) frac = std::max(frac, std::chrono::duration<double>(now - t0).count() / budget_s);
      }
    }
    // Weights: W into gaps 35 %, swap 25 %, shift 25 %, chain 15 %; with units, pair 12 % and
    // unpair 4 % of the whole, the others scaled down.
    uint64_t roll = pick(100);
    int move = roll < 35 ? 0 : roll < 60 ? 1 : roll < 85 ? 2 : 3;
    if (pairing_) {
      roll = pick(100);
      move = roll < 12 ? 4 : roll < 16 ? 5 : roll < 45 ? 0 : roll < 66 ? 1 : roll < 87 ? 2 : 3;
    }
    touched_.clear();
    saved_.clear();
    unit_log_.clear();
    bool changed = propose(move);
    if (!changed) {
      for (size_t k = 0; k < touched_.size(); ++k) cur_[touched_[k]] = saved_[k];
      undo_units();
      continue;
    }
    for (size_t r : touched_) break_separated(r);
    ++stats_.tried[static_cast<size_t>(move)];
    bool fits = std::all_of(touched_.begin(), touched_.end(), [&](size_t r) { return sim_.within_cap(r, cur_[r]); });
    bool accepted = false, ran = false;
    if (fits) {
      ++stats_.evals;
      ran = true;
      // Only the touched ranks changed: the simulator re-times what the move can reach.
      bool ok = o_.incremental ? sim_.rerun(cur_, &units_, touched_) : sim_.run(cur_, &units_);
      stats_.retimed += sim_.last_retimed();
      if (ok) {
        double e = energy();
        double temp = t_hi * std::pow(t_lo / t_hi, std::min(1.0, frac));
        double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
        if (e <= cur_energy || u < std::exp((cur_energy - e) / temp)) accepted = true;
        if (accepted) {
          cur_energy = e;
          ++stats_.accepted;
          sim_.commit();
          find_critical();
          int64_t obj = sim_.objective(p_.objective);
          if (obj < best_obj || (obj == best_obj && e < best_energy - 1e-9)) {
            if (obj < best_obj) ++stats_.improved_best[static_cast<size_t>(move)], stale = 0;
            best_obj = obj;
            best_energy = e;
            best = cur_;
            best_units = units_;
          }
        }
      }
    }
    if (accepted) {
      for (size_t r : touched_) reindex(r);
    } else {
      if (ran) sim_.discard();
      for (size_t k = 0; k < touched_.size(); ++k) cur_[touched_[k]] = saved_[k];
      undo_units();
    }
    if (++stale >= stale_limit) {  // restart from the best
      stale = 0;
      ++stats_.restarts;
      cur_ = best;
      units_ = best_units;
      for (size_t r = 0; r < cur_.size(); ++r) reindex(r);
      sim_.run(cur_, &units_);
      sim_.commit();
      find_critical();
      cur_energy = best_energy;
    }
  }
  stats_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  return sim_.to_schedule(best, &best_units);
}

}  // namespace

ir::Schedule local_search(const ir::Schedule& start, const LocalSearchOptions& options, LocalSearchStats& stats) {
  Annealer a(start, options, stats);
  ir::Schedule s = a.run();
  s.provenance = start.provenance;
  return s;
}

}  // namespace schedc::solver
