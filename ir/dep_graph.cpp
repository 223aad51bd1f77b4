#include "ir/dep_graph.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "support/internal_error.h"

namespace schedc::ir {

int32_t DepGraph::canonical_node(const Problem& p, ActionKind kind, int32_t mb, int32_t stage) {
  if (kind == ActionKind::R) return -1;  // the canonical graph has no recomputation
  const bool fused = p.backward == BackwardMode::Fused;
  if (fused ? (kind == ActionKind::B || kind == ActionKind::W) : kind == ActionKind::BW) return -1;
  const int32_t per = fused ? 2 : 3;
  const int32_t slot = kind == ActionKind::F ? 0 : (kind == ActionKind::W ? 2 : 1);
  return (mb * p.num_stages() + stage) * per + slot;
}

// What a node's rank, duration and memory depend on (its direction, stage and kind), computed
// once per problem: ir::rank_of, ir::cost_of and ir::memory_delta in fixed point.
struct DepGraph::Values {
  int32_t stages = 0;
  std::vector<int32_t> rank;      // [direction * S + stage]
  std::vector<int64_t> dur, mem;  // [stage * kNumActionKinds + kind]

  Values(const Problem& p, int64_t time_scale, int64_t memory_scale) : stages(p.num_stages()) {
    for (int32_t d = 0; d < p.num_directions(); ++d)
      for (int32_t s = 0; s < stages; ++s) rank.push_back(p.rank_of(d, StageId(s)).value);
    for (int32_t s = 0; s < stages; ++s)
      for (int k = 0; k < kNumActionKinds; ++k) {
        Action a{static_cast<ActionKind>(k), MbId(0), StageId(s)};
        dur.push_back(to_fixed(cost_of(p, a), time_scale));
        mem.push_back(to_fixed(memory_delta(p, a), memory_scale));
      }
  }
};

void DepGraph::add_node(const Problem& p, const Values& values, Action a) {
  auto v = static_cast<int32_t>(action_.size());
  int32_t& slot = node_of_[action_id(p, a).index()];
  if (slot < 0) slot = v;
  const size_t at = a.stage.index() * kNumActionKinds + static_cast<size_t>(a.kind);
  action_.push_back(a);
  rank_.push_back(values.rank[static_cast<size_t>(p.direction_of(a.mb) * values.stages) + a.stage.index()]);
  dur_.push_back(values.dur[at]);
  mem_.push_back(values.mem[at]);
}

int32_t DepGraph::node_of(Action a) const {
  if (a.mb.value < 0 || a.stage.value < 0 || a.stage.value >= stages_) return -1;
  size_t id = (static_cast<size_t>(a.mb.value) * static_cast<size_t>(stages_) + a.stage.index()) * kNumActionKinds +
              static_cast<size_t>(a.kind);
  return id < node_of_.size() ? node_of_[id] : -1;
}

// docs/design.md section 3: F(mb, s) after F(mb, s-1); B/BW(mb, s) after F(mb, s) and after the backward
// of (mb, s+1); W(mb, s) after B(mb, s). The edges are listed by microbatch and stage (the order
// every client's edge lists have always had); `finish` gives them their lags.
void DepGraph::add_rule_edges(const Problem& p, std::vector<RawEdge>& out) {
  const int32_t S = p.num_stages();
  auto node = [&](ActionKind k, int32_t mb, int32_t s) { return node_of(Action{k, MbId(mb), StageId(s)}); };
  auto backward = [&](int32_t mb, int32_t s) {
    int32_t b = node(ActionKind::B, mb, s);
    return b >= 0 ? b : node(ActionKind::BW, mb, s);
  };
  auto edge = [&](int32_t from, int32_t to) {
    if (to < 0) return;
    if (from >= 0) {
      out.push_back({from, to});
      return;
    }
    if (missing_.empty()) missing_.assign(size(), 0);
    ++missing_[static_cast<size_t>(to)];
  };
  for (int32_t mb = 0; mb < p.microbatches; ++mb)
    for (int32_t s = 0; s < S; ++s) {
      int32_t f = node(ActionKind::F, mb, s), b = backward(mb, s);
      if (s + 1 < S) {
        edge(f, node(ActionKind::F, mb, s + 1));
        edge(backward(mb, s + 1), b);
      }
      edge(f, b);
      edge(node(ActionKind::B, mb, s), node(ActionKind::W, mb, s));
      if (int32_t rc = node(ActionKind::R, mb, s); rc >= 0) {  // a recomputation: after F, before the backward
        edge(f, rc);
        edge(rc, b);
      }
    }
}

void DepGraph::finish(int32_t ranks, const std::vector<RawEdge>& edges) {
  const size_t n = size();
  // Stable counting sorts: each node's lists keep the order of `edges`.
  succ_off_.assign(n + 1, 0);
  pred_off_.assign(n + 1, 0);
  for (const RawEdge& e : edges) {
    ++succ_off_[static_cast<size_t>(e.from) + 1];
    ++pred_off_[static_cast<size_t>(e.to) + 1];
  }
  for (size_t i = 0; i < n; ++i) {
    succ_off_[i + 1] += succ_off_[i];
    pred_off_[i + 1] += pred_off_[i];
  }
  succ_.resize(edges.size());
  pred_.resize(edges.size());
  {
    std::vector<int32_t> s(succ_off_.begin(), succ_off_.end() - 1), q(pred_off_.begin(), pred_off_.end() - 1);
    for (const RawEdge& e : edges) {
      // A dependency between two ranks adds `comm` (microbatch-order edges stay on one rank).
      const int64_t lag = rank_[static_cast<size_t>(e.from)] == rank_[static_cast<size_t>(e.to)] ? 0 : comm_;
      succ_[static_cast<size_t>(s[static_cast<size_t>(e.from)]++)] = {e.to, lag};
      pred_[static_cast<size_t>(q[static_cast<size_t>(e.to)]++)] = {e.from, lag};
    }
  }
  on_rank_off_.assign(static_cast<size_t>(ranks) + 1, 0);
  for (int32_t r : rank_) ++on_rank_off_[static_cast<size_t>(r) + 1];
  for (size_t r = 0; r < static_cast<size_t>(ranks); ++r) on_rank_off_[r + 1] += on_rank_off_[r];
  on_rank_.resize(n);
  {
    std::vector<int32_t> at(on_rank_off_.begin(), on_rank_off_.end() - 1);
    for (size_t v = 0; v < n; ++v)
      on_rank_[static_cast<size_t>(at[static_cast<size_t>(rank_[v])]++)] = static_cast<int32_t>(v);
  }
}

// B(mb, s+1) -> B(mb, s) runs against the id order: an explicit topological order.
std::vector<int32_t> DepGraph::topological_order() const {
  const size_t n = size();
  std::vector<int32_t> indeg(n), order;
  order.reserve(n);
  for (size_t v = 0; v < n; ++v) {
    indeg[v] = pred_off_[v + 1] - pred_off_[v];
    if (indeg[v] == 0) order.push_back(static_cast<int32_t>(v));
  }
  for (size_t k = 0; k < order.size(); ++k)
    for (const Edge& e : succs(order[k]))
      if (--indeg[static_cast<size_t>(e.node)] == 0) order.push_back(e.node);
  assert(order.size() == n && "the dependency graph of a problem is acyclic");
  return order;
}

DepGraph::DepGraph(const Problem& p, const DepGraphOptions& o)
    : stages_(p.num_stages()), time_scale_(ir::time_scale(p)), memory_scale_(ir::memory_scale(p)),
      comm_(to_fixed(p.cost.comm, time_scale_)) {
  const bool fused = p.backward == BackwardMode::Fused;
  const int32_t S = p.num_stages(), m = p.microbatches;
  const size_t n = static_cast<size_t>(m) * static_cast<size_t>(S) * (fused ? 2 : 3);
  node_of_.assign(num_action_slots(p), -1);
  action_.reserve(n);
  rank_.reserve(n);
  dur_.reserve(n);
  mem_.reserve(n);
  const Values values(p, time_scale_, memory_scale_);
  for (int32_t mb = 0; mb < m; ++mb)
    for (int32_t s = 0; s < S; ++s) {
      add_node(p, values, F(mb, s));
      if (fused) {
        add_node(p, values, BW(mb, s));
      } else {
        add_node(p, values, B(mb, s));
        add_node(p, values, W(mb, s));
      }
    }
  std::vector<RawEdge> edges;
  edges.reserve(static_cast<size_t>(m) * static_cast<size_t>(S) * (o.microbatch_order ? 7 : 4));
  add_rule_edges(p, edges);
  if (o.microbatch_order) {
    const ActionKind bk = fused ? ActionKind::BW : ActionKind::B;
    for (int32_t mb = 0; mb + 1 < m; ++mb) {
      if (p.direction_of(MbId(mb)) != p.direction_of(MbId(mb + 1))) continue;
      for (int32_t s = 0; s < S; ++s)
        for (ActionKind k : {ActionKind::F, bk, ActionKind::W}) {
          if (k == ActionKind::W && (fused || !o.order_weights)) continue;
          edges.push_back({canonical_node(p, k, mb, s), canonical_node(p, k, mb + 1, s)});
        }
    }
  }
  finish(p.ranks, edges);
}

DepGraph::DepGraph(const Problem& p, std::span<const Action> actions)
    : stages_(p.num_stages()), time_scale_(ir::time_scale(p)), memory_scale_(ir::memory_scale(p)),
      comm_(to_fixed(p.cost.comm, time_scale_)) {
  node_of_.assign(num_action_slots(p), -1);
  action_.reserve(actions.size());
  rank_.reserve(actions.size());
  dur_.reserve(actions.size());
  mem_.reserve(actions.size());
  const Values values(p, time_scale_, memory_scale_);
  for (Action a : actions) add_node(p, values, a);
  // An F whose R is among the actions is checkpointed: it keeps only its input (ir::memory_delta).
  for (Action a : actions)
    if (a.kind == ActionKind::R)
      if (int32_t f = node_of(F(a.mb.value, a.stage.value)); f >= 0)
        mem_[static_cast<size_t>(f)] = to_fixed(memory_delta(p, action_[static_cast<size_t>(f)], true), memory_scale_);
  std::vector<RawEdge> edges;
  edges.reserve(actions.size() * 2);
  add_rule_edges(p, edges);
  finish(p.ranks, edges);
}

DepGraph DepGraph::of_schedule(const Schedule& s) {
  std::vector<Action> all;
  all.reserve(s.num_actions());
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (Action a : s.ranks[r]) {
      assert(rank_of(s.problem, a).index() == r && "every action of the schedule is on its own rank");
      all.push_back(a);
    }
  DepGraph g(s.problem, all);
  g.by_schedule_ = true;
  return g;
}

int64_t DepGraph::lag(int32_t from, int32_t to) const {
  for (const Edge& e : succs(from))
    if (e.node == to) return e.lag;
  SCHEDC_INTERNAL_ERROR("DepGraph::lag: no edge " + std::to_string(from) + " -> " + std::to_string(to));
}

std::span<const int32_t> DepGraph::on_rank(int32_t rank) const {
  auto r = static_cast<size_t>(rank);
  return {on_rank_.data() + on_rank_off_[r], static_cast<size_t>(on_rank_off_[r + 1] - on_rank_off_[r])};
}

DepGraph::Position DepGraph::position(int32_t v) const {
  assert(by_schedule_ && "positions exist in graphs of schedules only");
  int32_t r = rank(v);
  return {r, v - on_rank_off_[static_cast<size_t>(r)]};
}

std::vector<int64_t> DepGraph::heads(std::span<const int64_t> dur) const {
  std::vector<int64_t> head(size(), 0);
  for (int32_t a : topological_order()) {
    const int64_t end = head[static_cast<size_t>(a)] + dur[static_cast<size_t>(a)];
    for (const Edge& e : succs(a)) {
      int64_t& h = head[static_cast<size_t>(e.node)];
      h = std::max(h, end + e.lag);
    }
  }
  return head;
}

std::vector<int64_t> DepGraph::tails(std::span<const int64_t> dur) const {
  std::vector<int64_t> tail(size(), 0);
  const std::vector<int32_t> order = topological_order();
  for (size_t k = order.size(); k-- > 0;) {
    auto a = static_cast<size_t>(order[k]);
    for (const Edge& e : succs(order[k]))
      tail[a] = std::max(tail[a], e.lag + dur[static_cast<size_t>(e.node)] + tail[static_cast<size_t>(e.node)]);
  }
  return tail;
}

}  // namespace schedc::ir
