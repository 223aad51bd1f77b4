#include "solver/synth/instance.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/dep_graph.h"

namespace schedc::solver {

namespace {

// On a rank that holds one stage of one direction, under the symmetric order: after F(i) starts the
// rank holds a (i + 1) - b nB - w nW <= cap, and nW <= nB, so nB >= (a (i + 1) - cap) / (b + w): the
// backward of microbatch i - k must run before F(i). Edges only; the exact cap stays in the SAT model.
void add_memory_edges(Instance& inst) {
  const ir::Problem& p = *inst.problem;
  const ir::ActionKind bk = inst.fused ? ir::ActionKind::BW : ir::ActionKind::B;
  for (int32_t r = 0; r < p.ranks; ++r) {
    int64_t cap = inst.cap[static_cast<size_t>(r)];
    const auto& acts = inst.on_rank[static_cast<size_t>(r)];
    if (cap < 0 || acts.empty()) continue;
    const ir::Action first = inst.action[static_cast<size_t>(acts[0])];
    const int32_t dir = p.direction_of(first.mb);
    bool one_stage = std::all_of(acts.begin(), acts.end(), [&](int32_t a) {
      const ir::Action& x = inst.action[static_cast<size_t>(a)];
      return x.stage == first.stage && p.direction_of(x.mb) == dir;
    });
    if (!one_stage) continue;
    const int32_t s = first.stage.value;
    std::vector<int32_t> mbs;
    for (int32_t mb = 0; mb < p.microbatches; ++mb)
      if (p.direction_of(ir::MbId(mb)) == dir) mbs.push_back(mb);
    const int64_t a = inst.mem[static_cast<size_t>(inst.node(ir::ActionKind::F, mbs[0], s))];
    const int64_t b = -inst.mem[static_cast<size_t>(inst.node(bk, mbs[0], s))];
    const int64_t w = inst.fused ? 0 : -inst.mem[static_cast<size_t>(inst.node(ir::ActionKind::W, mbs[0], s))];
    if (a <= 0 || b < 0 || w < 0 || b + w <= 0) continue;
    for (size_t i = 0; i < mbs.size(); ++i) {
      int64_t need = a * static_cast<int64_t>(i + 1) - cap;
      if (need <= 0) continue;
      int64_t backwards = (need + b + w - 1) / (b + w);   // nB >= this
      if (backwards > static_cast<int64_t>(i)) continue;  // cannot be met; the SAT model says so
      int32_t from = inst.node(bk, mbs[static_cast<size_t>(backwards - 1)], s);
      int32_t to = inst.node(ir::ActionKind::F, mbs[i], s);
      inst.succ[static_cast<size_t>(from)].push_back({to, 0});
      inst.pred[static_cast<size_t>(to)].push_back({from, 0});
    }
  }
}

}  // namespace

int32_t Instance::node(ir::ActionKind kind, int32_t mb, int32_t stage) const {
  return ir::DepGraph::canonical_node(*problem, kind, mb, stage);
}

int64_t exact_grid(const ir::Problem& p) {
  const int64_t scale = ir::time_scale(p);
  int64_t g = 0;
  auto add = [&](double v) { g = std::gcd(g, ir::to_fixed(v, scale)); };
  for (int32_t s = 0; s < p.num_stages(); ++s) {
    auto i = static_cast<size_t>(s);
    add(p.cost.F.at(i));
    add(p.cost.B.at(i));
    add(p.cost.W.at(i));
  }
  add(p.cost.comm);
  add(p.cost.action_overhead);
  add(p.cost.message_overhead);
  return g == 0 ? 1 : g;
}

void normalize_memory(Instance& inst) {
  int64_t g = 0;
  for (int64_t d : inst.mem) g = std::gcd(g, d < 0 ? -d : d);
  if (g > 1) {
    for (int64_t& d : inst.mem) d /= g;
    for (int64_t& c : inst.cap)
      if (c >= 0) c /= g;  // floor: prefix sums are multiples of g
    inst.memory_unit *= g;
  }
  // The encoding sums a rank's deltas against its cap in 32-bit coefficients.
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max() / 2;
  std::vector<int64_t> total(inst.cap.size(), 0);
  for (size_t i = 0; i < inst.size(); ++i)
    total[static_cast<size_t>(inst.rank[i])] += inst.mem[i] < 0 ? -inst.mem[i] : inst.mem[i];
  inst.memory_fits_pb = true;
  for (size_t r = 0; r < inst.cap.size(); ++r)
    if (inst.cap[r] >= 0 && (total[r] > kLimit || inst.cap[r] > kLimit)) inst.memory_fits_pb = false;
}

int64_t fitting_grid(const ir::Problem& p, int64_t grid) {
  // Every start and end of a valid schedule is at most the total work plus one comm lag per
  // dependency (the sequential schedule); heads, tails and the SAT horizon are below that too.
  // Each action may gain up to one step by rounding, and every action takes at least one.
  const int64_t scale = ir::time_scale(p);
  const int32_t S = p.num_stages();
  long double total = 0;
  for (int32_t s = 0; s < S; ++s) {
    auto i = static_cast<size_t>(s);
    long double per = static_cast<long double>(ir::to_fixed(p.cost.F.at(i), scale)) +
                      static_cast<long double>(ir::to_fixed(p.cost.B.at(i), scale)) +
                      static_cast<long double>(ir::to_fixed(p.cost.W.at(i), scale)) +
                      4.0L * static_cast<long double>(ir::to_fixed(p.cost.comm, scale)) +
                      3.0L * static_cast<long double>(ir::to_fixed(p.cost.action_overhead, scale)) +
                      4.0L * static_cast<long double>(ir::to_fixed(p.cost.message_overhead, scale));
    total += per * p.microbatches;
  }
  const long double actions = 3.0L * S * p.microbatches;
  constexpr long double kLimit = static_cast<long double>(int64_t{1} << 30);
  grid = std::max<int64_t>(1, grid);
  if (total / static_cast<long double>(grid) + 2 * actions <= kLimit) return grid;
  auto factor = static_cast<int64_t>(std::ceil(total / (static_cast<long double>(grid) * (kLimit - 2 * actions))));
  return grid * std::max<int64_t>(2, factor);
}

Instance build_instance(const ir::Problem& p, const InstanceOptions& o) {
  Instance inst;
  inst.problem = &p;
  inst.fused = p.backward == ir::BackwardMode::Fused;
  // The nodes, ranks, memory deltas and dependency edges of the problem, with the microbatch-order
  // edges when symmetry is on: the solver's instance only rounds times to its grid.
  const ir::DepGraph g(p, {.microbatch_order = o.symmetry});
  inst.time_scale = g.time_scale();
  inst.memory_scale = g.memory_scale();
  inst.ticks_per_step = fitting_grid(p, o.ticks_per_step > 0 ? o.ticks_per_step : exact_grid(p));
  const int64_t step = inst.ticks_per_step;
  inst.rounded_down = o.round_down;
  auto steps = [&](int64_t t) {
    if (t % step != 0) inst.exact = false;
    if (o.round_down) return static_cast<int32_t>(t / step);
    // Nearest step; a zero-cost action still takes one step so that a rank's order is well defined.
    int64_t s = (t + step / 2) / step;
    if (s == 0 && t > 0) inst.exact = false;
    return static_cast<int32_t>(s);
  };
  const size_t n = g.size();
  inst.action.resize(n);
  inst.rank.resize(n);
  inst.dur.resize(n);
  inst.mem.resize(n);
  inst.succ.assign(n, {});
  inst.pred.assign(n, {});
  inst.on_rank.assign(static_cast<size_t>(p.ranks), {});
  const int32_t comm = steps(ir::to_fixed(p.cost.comm, inst.time_scale));
  for (size_t id = 0; id < n; ++id) {
    const auto v = static_cast<int32_t>(id);
    inst.action[id] = g.action(v);
    inst.rank[id] = g.rank(v);
    int32_t d = steps(g.duration(v));
    if (d == 0 && !o.round_down) {  // one step, so that a rank's order is well defined
      inst.exact = false;
      d = 1;
    }
    inst.dur[id] = d;
    inst.mem[id] = g.memory(v);
  }
  for (int32_t r = 0; r < p.ranks; ++r) {
    auto nodes = g.on_rank(r);
    inst.on_rank[static_cast<size_t>(r)].assign(nodes.begin(), nodes.end());
  }
  // A lag is 0 or the comm latency, rounded like it.
  for (size_t id = 0; id < n; ++id) {
    const auto v = static_cast<int32_t>(id);
    for (const ir::DepGraph::Edge& e : g.succs(v)) inst.succ[id].push_back({e.node, e.lag == 0 ? 0 : comm});
    for (const ir::DepGraph::Edge& e : g.preds(v)) inst.pred[id].push_back({e.node, e.lag == 0 ? 0 : comm});
  }
  inst.symmetric = o.symmetry;
  inst.cap.assign(static_cast<size_t>(p.ranks), -1);
  for (int32_t r = 0; r < p.ranks; ++r)
    if (auto c = p.cap_of(ir::RankId(r))) inst.cap[static_cast<size_t>(r)] = ir::to_fixed(*c, inst.memory_scale);
  normalize_memory(inst);
  if (o.symmetry && o.memory_edges) add_memory_edges(inst);
  bool acyclic = compute_heads_tails(inst, o.rank_work);
  assert(acyclic && "the dependency graph of a problem is acyclic");
  (void)acyclic;
  return inst;
}

namespace {

// One-machine reasoning on top of the longest paths: every same-rank descendant of `a` runs after
// `a` ends, one at a time, so tail(a) >= their total duration + the least of their tails (and
// symmetrically for heads with ancestors). Reachability is tracked per rank as bitsets over that
// rank's actions, so memory stays O(N * N_r / 64) per rank.
// Word operations one tighten_with_rank_work may spend (each closure ORs a row of the rank's bitset
// per edge). Above it the rank-work terms are left out: they only narrow windows, and the heads and
// tails stay valid longest paths. pp 64, m 256 costs about 1.3e8 (0.5 s); at vpp 2 6e8 (2.5 s,
// more than the SAT models of that size can use); pp 256, m 512 about 8e9 (minutes).
constexpr double kRankWorkBudget = 2.5e8;

void tighten_with_rank_work(Instance& inst, const std::vector<int32_t>& order) {
  const size_t n = inst.size();
  double edges = 0, words_total = 0;
  for (const auto& s : inst.succ) edges += static_cast<double>(s.size());
  for (const auto& acts : inst.on_rank) words_total += static_cast<double>((acts.size() + 63) / 64);
  if (2 * edges * words_total > kRankWorkBudget) return;
  std::vector<int32_t> local(n, -1);
  for (const auto& acts : inst.on_rank)
    for (size_t k = 0; k < acts.size(); ++k) local[static_cast<size_t>(acts[k])] = static_cast<int32_t>(k);
  std::vector<uint64_t> bits;
  for (const auto& acts : inst.on_rank) {
    const size_t nr = acts.size(), words = (nr + 63) / 64;
    if (nr < 2) continue;
    const int32_t rank = inst.rank[static_cast<size_t>(acts[0])];
    auto summarize = [&](size_t node, int32_t& work, int32_t& min_head, int32_t& min_tail) {
      work = 0;
      min_head = min_tail = std::numeric_limits<int32_t>::max();
      const uint64_t* row = &bits[node * words];
      for (size_t w = 0; w < words; ++w)
        for (uint64_t x = row[w]; x; x &= x - 1) {
          auto b = static_cast<size_t>(acts[w * 64 + static_cast<size_t>(__builtin_ctzll(x))]);
          work += inst.dur[b];
          min_head = std::min(min_head, inst.head[b]);
          min_tail = std::min(min_tail, inst.tail[b]);
        }
    };
    // bits[a] := the actions of this rank reachable from a along `edges` (each row built from rows
    // finished before it, so `visit` must list an action after everything `edges` leads it to).
    auto close = [&](const auto& edges, auto visit) {
      std::fill(bits.begin(), bits.end(), 0);
      visit([&](size_t a) {
        uint64_t* row = &bits[a * words];
        for (const auto& e : edges[a]) {
          auto b = static_cast<size_t>(e.to);
          const uint64_t* src = &bits[b * words];
          for (size_t w = 0; w < words; ++w) row[w] |= src[w];
          if (inst.rank[b] == rank) row[static_cast<size_t>(local[b]) / 64] |= uint64_t{1} << (local[b] % 64);
        }
      });
    };
    bits.resize(n * words);
    // Descendants: reverse topological order.
    close(inst.succ, [&](auto&& f) {
      for (size_t k = n; k-- > 0;) f(static_cast<size_t>(order[k]));
    });
    for (int32_t a : acts) {
      int32_t work, min_head, min_tail;
      summarize(static_cast<size_t>(a), work, min_head, min_tail);
      if (work > 0) inst.tail[static_cast<size_t>(a)] = std::max(inst.tail[static_cast<size_t>(a)], work + min_tail);
    }
    // Ancestors: topological order.
    close(inst.pred, [&](auto&& f) {
      for (int32_t x : order) f(static_cast<size_t>(x));
    });
    for (int32_t a : acts) {
      int32_t work, min_head, min_tail;
      summarize(static_cast<size_t>(a), work, min_head, min_tail);
      if (work > 0) inst.head[static_cast<size_t>(a)] = std::max(inst.head[static_cast<size_t>(a)], min_head + work);
    }
  }
}

// Longest paths with the current heads and tails as starting values.
void propagate(Instance& inst, const std::vector<int32_t>& order) {
  for (int32_t a : order) {
    auto i = static_cast<size_t>(a);
    for (const auto& e : inst.succ[i])
      inst.head[static_cast<size_t>(e.to)] = std::max(inst.head[static_cast<size_t>(e.to)],
                                                      inst.head[i] + inst.dur[i] + e.lag);
  }
  for (size_t k = order.size(); k-- > 0;) {
    auto i = static_cast<size_t>(order[k]);
    for (const auto& e : inst.succ[i])
      inst.tail[i] = std::max(inst.tail[i],
                              e.lag + inst.dur[static_cast<size_t>(e.to)] + inst.tail[static_cast<size_t>(e.to)]);
  }
}

}  // namespace

bool compute_heads_tails(Instance& inst, bool rank_work) {
  const size_t n = inst.size();
  std::vector<int32_t> indeg(n, 0), order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) indeg[i] = static_cast<int32_t>(inst.pred[i].size());
  for (size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) order.push_back(static_cast<int32_t>(i));
  for (size_t k = 0; k < order.size(); ++k)
    for (const auto& e : inst.succ[static_cast<size_t>(order[k])])
      if (--indeg[static_cast<size_t>(e.to)] == 0) order.push_back(e.to);
  if (order.size() != n) return false;
  inst.head = inst.release.size() == n ? inst.release : std::vector<int32_t>(n, 0);
  inst.tail = inst.delivery.size() == n ? inst.delivery : std::vector<int32_t>(n, 0);
  propagate(inst, order);
  // Two rounds: the rank-work bounds feed the longest paths, which feed the next rank-work bounds.
  for (int round = 0; round < (rank_work ? 2 : 0); ++round) {
    tighten_with_rank_work(inst, order);
    propagate(inst, order);
  }
  return true;
}

ir::Schedule to_schedule(const Instance& inst, const std::vector<std::vector<int32_t>>& orders) {
  ir::Schedule s;
  s.problem = *inst.problem;
  for (const auto& o : orders) {
    std::vector<ir::Action> r;
    r.reserve(o.size());
    for (int32_t a : o) r.push_back(inst.action[static_cast<size_t>(a)]);
    s.ranks.push_back(std::move(r));
  }
  return s;
}

}  // namespace schedc::solver
