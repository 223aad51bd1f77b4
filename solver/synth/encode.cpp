#include "solver/synth/encode.h"

#include <algorithm>
#include <string>

namespace schedc::solver {

uint64_t TimeIndexedModel::rlimit_count() const {
  const z3::stats st = solver_.statistics();
  for (unsigned i = 0; i < st.size(); ++i)
    if (st.key(i) == "rlimit count") return static_cast<uint64_t>(st.uint_value(i));
  return 0;
}

namespace {
// Z3 catches SIGINT during a check by default and only ends that check; schedc's own handler
// (tools/schedc/interrupt.cpp) must see it, and interrupts Z3 itself (search.cpp).
z3::solver make_solver(z3::context& ctx) {
  z3::solver s(ctx, "QF_FD");  // the finite-domain solver: SAT with cardinality and pseudo-Boolean constraints
  z3::params prm(ctx);
  prm.set("ctrl_c", false);
  s.set(prm);
  return s;
}
}  // namespace

int64_t estimate_literals(const Instance& inst, int32_t horizon) {
  int64_t n = 0;
  for (size_t a = 0; a < inst.size(); ++a) n += 2 * std::max(0, horizon - inst.dur[a] - inst.tail[a] - inst.head[a]);
  return n;
}

TimeIndexedModel::TimeIndexedModel(const Instance& inst, int32_t horizon, bool max_span, z3::context& ctx,
                                   const std::atomic<bool>* stop)
    : inst_(inst), horizon_(horizon), max_span_(max_span), ctx_(ctx), solver_(make_solver(ctx)), stop_(stop) {
  build();
}

z3::expr TimeIndexedModel::y(size_t a, int32_t t) const {
  if (t < early_[a]) return ctx_.bool_val(false);
  if (t >= late_[a]) return ctx_.bool_val(true);
  return y_[a][static_cast<size_t>(t - early_[a])];
}

z3::expr TimeIndexedModel::origin(size_t r, int32_t t) const {
  if (t < 0) return ctx_.bool_val(false);
  if (t >= horizon_) return ctx_.bool_val(true);
  return origin_[r][static_cast<size_t>(t)];
}

void TimeIndexedModel::build() {
  const size_t n = inst_.size();
  early_.resize(n);
  late_.resize(n);
  y_.resize(n);
  for (size_t a = 0; a < n; ++a) {
    // For max-span the makespan horizon is loose: windows come from heads and the horizon only.
    early_[a] = inst_.head[a];
    late_[a] = horizon_ - inst_.dur[a] - inst_.tail[a];
    if (early_[a] > late_[a]) {
      feasible_ = false;
      return;
    }
  }
  std::string name;
  for (size_t a = 0; a < n; ++a) {
    if (stopping()) return;
    auto& vars = y_[a];
    vars.reserve(static_cast<size_t>(late_[a] - early_[a]));
    for (int32_t t = early_[a]; t < late_[a]; ++t) {
      name = "y" + std::to_string(a) + "_" + std::to_string(t);
      vars.push_back(ctx_.bool_const(name.c_str()));
    }
    stats_.literals += static_cast<int64_t>(vars.size());
    for (size_t k = 0; k + 1 < vars.size(); ++k) {
      solver_.add(!vars[k] || vars[k + 1]);
      ++stats_.clauses;
    }
  }
  // Precedence: start(b) >= start(a) + dur(a) + lag.
  for (size_t a = 0; a < n; ++a) {
    if (stopping()) return;
    for (const auto& e : inst_.succ[a]) {
      auto b = static_cast<size_t>(e.to);
      int32_t delta = inst_.dur[a] + e.lag;
      for (int32_t t = early_[b]; t < late_[b]; ++t) {
        z3::expr before = y(a, t - delta);
        if (before.is_true()) continue;
        solver_.add(!y(b, t) || before);
        ++stats_.clauses;
      }
    }
  }
  // One running action per rank and step: running(a, t) = Y(a, t) && !Y(a, t - dur).
  for (size_t r = 0; r < inst_.on_rank.size(); ++r) {
    if (stopping()) return;
    const auto& acts = inst_.on_rank[r];
    int32_t lo = horizon_, hi = 0;
    for (int32_t a : acts) {
      lo = std::min(lo, early_[static_cast<size_t>(a)]);
      hi = std::max(hi, late_[static_cast<size_t>(a)] + inst_.dur[static_cast<size_t>(a)]);
    }
    // Actions that can run at step t, bucketed by step.
    std::vector<std::vector<int32_t>> at(static_cast<size_t>(std::max(0, hi - lo)));
    for (int32_t a : acts) {
      auto i = static_cast<size_t>(a);
      // A zero-step action (a rounded-down instance) occupies no step.
      for (int32_t t = early_[i]; t < late_[i] + inst_.dur[i] && inst_.dur[i] > 0; ++t)
        at[static_cast<size_t>(t - lo)].push_back(a);
    }
    for (int32_t t = lo; t < hi; ++t) {
      const auto& here = at[static_cast<size_t>(t - lo)];
      if (here.size() < 2) continue;
      z3::expr_vector running(ctx_);
      int compulsory = 0;
      for (int32_t a : here) {
        auto i = static_cast<size_t>(a);
        z3::expr started = y(i, t), finished = y(i, t - inst_.dur[i]);
        if (started.is_false() || finished.is_true()) continue;
        if (started.is_true() && finished.is_false()) {
          ++compulsory;
          continue;
        }
        name = "r" + std::to_string(a) + "_" + std::to_string(t);
        z3::expr run = ctx_.bool_const(name.c_str());
        ++stats_.literals;
        z3::expr clause = run;
        if (!started.is_true()) clause = clause || !started;
        if (!finished.is_false()) clause = clause || finished;
        solver_.add(clause);
        ++stats_.clauses;
        running.push_back(run);
      }
      if (compulsory > 1) {
        feasible_ = false;
        return;
      }
      if (compulsory == 1) {
        for (unsigned k = 0; k < running.size(); ++k) solver_.add(!running[k]);
        stats_.clauses += running.size();
      } else if (running.size() > 1) {
        solver_.add(z3::atmost(running, 1));
        ++stats_.cardinality;
      }
    }
  }
  // Memory: after every start of an action that adds memory, the rank's prefix sum is <= cap.
  for (size_t r = 0; r < inst_.on_rank.size(); ++r) {
    if (stopping()) return;
    if (inst_.cap[r] < 0 || memory_counters(r)) continue;
    const auto& acts = inst_.on_rank[r];
    std::vector<char> check(static_cast<size_t>(horizon_ + 1), 0);
    for (int32_t a : acts)
      if (inst_.mem[static_cast<size_t>(a)] > 0)
        for (int32_t t = early_[static_cast<size_t>(a)]; t <= late_[static_cast<size_t>(a)]; ++t)
          check[static_cast<size_t>(t)] = 1;
    for (int32_t t = 0; t <= horizon_; ++t) {
      if (!check[static_cast<size_t>(t)]) continue;
      z3::expr_vector lits(ctx_);
      std::vector<int> coeffs;
      int64_t constant = 0, max_positive = 0;
      for (int32_t a : acts) {
        auto i = static_cast<size_t>(a);
        int64_t d = inst_.mem[i];
        if (d == 0) continue;
        z3::expr started = y(i, t);
        if (started.is_false()) continue;
        if (started.is_true()) {
          constant += d;
          continue;
        }
        lits.push_back(started);
        coeffs.push_back(static_cast<int>(d));
        if (d > 0) max_positive += d;
      }
      int64_t limit = inst_.cap[r] - constant;
      if (max_positive <= limit) continue;
      if (lits.empty()) {
        if (limit < 0) feasible_ = false;
        continue;
      }
      solver_.add(z3::pble(lits, coeffs.data(), static_cast<int>(limit)));
      ++stats_.pseudo_boolean;
    }
  }
  if (max_span_) {
    // origin(r) <= t literals; every action on r starts at or after origin(r).
    origin_.resize(inst_.on_rank.size());
    for (size_t r = 0; r < inst_.on_rank.size(); ++r) {
      for (int32_t t = 0; t < horizon_; ++t) {
        name = "o" + std::to_string(r) + "_" + std::to_string(t);
        origin_[r].push_back(ctx_.bool_const(name.c_str()));
        if (t > 0) solver_.add(!origin_[r][static_cast<size_t>(t - 1)] || origin_[r][static_cast<size_t>(t)]);
      }
      for (int32_t a : inst_.on_rank[r])
        for (int32_t t = early_[static_cast<size_t>(a)]; t < late_[static_cast<size_t>(a)]; ++t)
          solver_.add(!y(static_cast<size_t>(a), t) || origin(r, t));
    }
  }
}

bool TimeIndexedModel::memory_counters(size_t r) {
  using ir::ActionKind;
  if (!inst_.symmetric) return false;
  const auto& acts = inst_.on_rank[r];
  if (acts.empty()) return true;
  const ir::Problem& p = *inst_.problem;
  const ir::Action first = inst_.action[static_cast<size_t>(acts[0])];
  const int32_t dir = p.direction_of(first.mb);
  // F, B (or BW) and W nodes of the rank's one stage, in microbatch order.
  std::vector<int32_t> f, b, w;
  for (int32_t a : acts) {
    const ir::Action& x = inst_.action[static_cast<size_t>(a)];
    if (x.stage != first.stage || p.direction_of(x.mb) != dir) return false;
    (x.kind == ActionKind::F ? f : x.kind == ActionKind::W ? w : b).push_back(a);
  }
  auto by_mb = [&](int32_t x, int32_t y) {
    return inst_.action[static_cast<size_t>(x)].mb < inst_.action[static_cast<size_t>(y)].mb;
  };
  std::sort(f.begin(), f.end(), by_mb);
  std::sort(b.begin(), b.end(), by_mb);
  std::sort(w.begin(), w.end(), by_mb);
  const int64_t a_mem = inst_.mem[static_cast<size_t>(f[0])];
  const int64_t b_free = -inst_.mem[static_cast<size_t>(b[0])];
  const int64_t w_free = w.empty() ? 0 : -inst_.mem[static_cast<size_t>(w[0])];
  if (a_mem <= 0 || b_free < 0 || w_free < 0) return false;
  // After F(i) starts at t: a (i + 1) - b nB(t) - w nW(t) <= cap, with nB(t) >= j <=> B(j-1) started
  // by t (they run in order). For each j: nB(t) >= j, or nW(t) >= the count that covers the rest.
  auto started = [&](const std::vector<int32_t>& list, int64_t count, int32_t t) -> z3::expr {
    if (count <= 0) return ctx_.bool_val(true);
    if (count > static_cast<int64_t>(list.size())) return ctx_.bool_val(false);
    return y(static_cast<size_t>(list[static_cast<size_t>(count - 1)]), t);
  };
  const int64_t cap = inst_.cap[r];
  for (size_t i = 0; i < f.size(); ++i) {
    const int64_t need = a_mem * static_cast<int64_t>(i + 1) - cap;  // b nB + w nW >= need
    if (need <= 0) continue;
    auto fi = static_cast<size_t>(f[i]);
    for (int32_t t = early_[fi]; t <= late_[fi]; ++t) {
      z3::expr go = y(fi, t);
      if (go.is_false()) continue;
      for (int64_t j = 0;; ++j) {
        // nB(t) <= j - 1 here: the weight gradients must cover need - b (j - 1).
        int64_t rest = need - b_free * (j - 1);
        if (j > 0 && rest <= 0) break;
        z3::expr by_b = started(b, j, t);
        z3::expr by_w = w_free > 0 ? started(w, (rest + w_free - 1) / w_free, t) : ctx_.bool_val(rest <= 0);
        if (by_b.is_true() || by_w.is_true()) {
          if (j > static_cast<int64_t>(b.size())) break;
          continue;
        }
        z3::expr clause = !go;
        if (!by_b.is_false()) clause = clause || by_b;
        if (!by_w.is_false()) clause = clause || by_w;
        solver_.add(clause);
        ++stats_.memory_clauses;
        if (j > static_cast<int64_t>(b.size())) break;
      }
    }
  }
  return true;
}

z3::expr TimeIndexedModel::deadline_literal(int32_t bound) {
  for (const auto& [b, lit] : deadlines_)
    if (b == bound) return lit;
  std::string name = "deadline" + std::to_string(bound);
  z3::expr d = ctx_.bool_const(name.c_str());
  const size_t n = inst_.size();
  if (!max_span_) {
    for (size_t a = 0; a < n; ++a) solver_.add(!d || y(a, bound - inst_.dur[a] - inst_.tail[a]));
  } else {
    // end(a) <= origin(rank(a)) + bound for every action: origin(r) <= t -> start(a) <= t + bound - dur.
    for (size_t a = 0; a < n; ++a) {
      auto r = static_cast<size_t>(inst_.rank[a]);
      for (int32_t t = 0; t < horizon_; ++t) {
        z3::expr later = y(a, t + bound - inst_.dur[a]);
        if (later.is_true()) break;
        solver_.add(!d || !origin(r, t) || later);
      }
    }
  }
  deadlines_.push_back({bound, d});
  return d;
}

z3::check_result TimeIndexedModel::probe(int32_t bound) {
  if (!feasible_) return z3::unsat;
  if (!max_span_)
    for (size_t a = 0; a < inst_.size(); ++a)
      if (bound - inst_.dur[a] - inst_.tail[a] < early_[a]) return z3::unsat;
  z3::expr_vector assumptions(ctx_);
  assumptions.push_back(deadline_literal(bound));
  return solver_.check(assumptions);
}

void TimeIndexedModel::forbid(int32_t bound) {
  if (!feasible_) return;
  solver_.add(!deadline_literal(bound));
}

std::vector<std::vector<int32_t>> TimeIndexedModel::orders(int32_t* makespan) const {
  z3::model model = solver_.get_model();
  const size_t n = inst_.size();
  // Read the model's constants once (evaluating literal by literal is slow on large models).
  std::vector<std::vector<char>> truth(n);
  for (size_t a = 0; a < n; ++a) truth[a].assign(y_[a].size(), 2);  // 2: not in the model
  for (unsigned i = 0; i < model.num_consts(); ++i) {
    z3::func_decl d = model.get_const_decl(i);
    std::string name = d.name().str();
    if (name.size() < 4 || name[0] != 'y') continue;
    size_t us = name.find('_');
    if (us == std::string::npos) continue;
    size_t a = std::stoul(name.substr(1, us - 1));
    int32_t t = std::stoi(name.substr(us + 1));
    if (a >= n || t < early_[a] || t >= late_[a]) continue;
    truth[a][static_cast<size_t>(t - early_[a])] = model.get_const_interp(d).is_true() ? 1 : 0;
  }
  std::vector<int32_t> start(n);
  for (size_t a = 0; a < n; ++a) {
    int32_t t = early_[a];
    for (; t < late_[a]; ++t) {
      char v = truth[a][static_cast<size_t>(t - early_[a])];
      if (v == 2) v = model.eval(y_[a][static_cast<size_t>(t - early_[a])], true).is_true() ? 1 : 0;
      if (v == 1) break;
    }
    start[a] = t;
  }
  if (makespan) {
    *makespan = 0;
    for (size_t a = 0; a < n; ++a) *makespan = std::max(*makespan, start[a] + inst_.dur[a]);
  }
  std::vector<std::vector<int32_t>> out(inst_.on_rank.size());
  for (size_t r = 0; r < out.size(); ++r) {
    out[r] = inst_.on_rank[r];
    std::stable_sort(out[r].begin(), out[r].end(), [&](int32_t a, int32_t b) {
      return start[static_cast<size_t>(a)] < start[static_cast<size_t>(b)];
    });
  }
  return out;
}

}  // namespace schedc::solver
