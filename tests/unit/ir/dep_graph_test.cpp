// ir::DepGraph against the reference semantics (ir::dependencies, ir::simulate, ir::verify) on
// random problems: its edges are exactly the dependencies with their lags, its heads and tails
// the longest paths over them, every simulated start is at or after its head, and a same-rank
// edge is exactly what ir::verify rejects when the two actions are swapped.

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "ir/dep_graph.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

using EdgeKey = std::tuple<ActionKind, int32_t, int32_t, int64_t>;  // kind, mb, stage, lag

EdgeKey key(Action a, int64_t lag) { return {a.kind, a.mb.value, a.stage.value, lag}; }

// What `a` waits for according to the reference rules, with lags in ticks, sorted.
std::vector<EdgeKey> reference_preds(const Problem& p, Action a, const ScheduleIndex& index) {
  std::vector<EdgeKey> out;
  for (Action d : dependencies(p, a, index)) out.push_back(key(d, to_fixed(dependency_lag(p, d, a), time_scale(p))));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<EdgeKey> graph_preds(const DepGraph& g, int32_t v) {
  std::vector<EdgeKey> out;
  for (const DepGraph::Edge& e : g.preds(v)) out.push_back(key(g.action(e.node), e.lag));
  std::sort(out.begin(), out.end());
  return out;
}

// A schedule holding exactly the graph's actions, each on its rank (order irrelevant here).
Schedule holding(const Problem& p, const DepGraph& g) {
  Schedule s;
  s.problem = p;
  s.ranks.resize(static_cast<size_t>(p.ranks));
  for (size_t v = 0; v < g.size(); ++v) {
    Action a = g.action(static_cast<int32_t>(v));
    s.ranks[rank_of(p, a).index()].push_back(a);
  }
  return s;
}

// Longest paths computed from ir::dependencies alone: heads forward, tails over the dependents.
struct ReferencePaths {
  std::map<Action, int64_t> head, tail;
};

ReferencePaths reference_paths(const Schedule& s) {
  const Problem& p = s.problem;
  const int64_t scale = time_scale(p);
  ScheduleIndex index(s);
  std::vector<Action> all;
  for (const auto& r : s.ranks) all.insert(all.end(), r.begin(), r.end());
  std::map<Action, std::vector<Action>> dependents;
  for (Action a : all)
    for (Action d : dependencies(p, a, index)) dependents[d].push_back(a);
  auto cost = [&](Action a) { return to_fixed(cost_of(p, a), scale); };
  auto lag = [&](Action from, Action to) { return to_fixed(dependency_lag(p, from, to), scale); };
  ReferencePaths out;
  auto head = [&](auto& self, Action a) -> int64_t {
    if (auto it = out.head.find(a); it != out.head.end()) return it->second;
    int64_t h = 0;
    for (Action d : dependencies(p, a, index)) h = std::max(h, self(self, d) + cost(d) + lag(d, a));
    return out.head[a] = h;
  };
  auto tail = [&](auto& self, Action a) -> int64_t {
    if (auto it = out.tail.find(a); it != out.tail.end()) return it->second;
    int64_t t = 0;
    for (Action b : dependents[a]) t = std::max(t, lag(a, b) + cost(b) + self(self, b));
    return out.tail[a] = t;
  };
  for (Action a : all) head(head, a), tail(tail, a);
  return out;
}

Problem draw(test::Rng& rng, int trial) {
  return trial % 2 ? test::random_wide_problem(rng) : test::random_problem(rng, {4, 6, true});
}

}  // namespace

TEST_CASE("the canonical graph holds every action of the problem's backward form with its rank, cost and memory") {
  test::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = draw(rng, trial);
    DepGraph g(p);
    const bool fused = p.backward == BackwardMode::Fused;
    REQUIRE(g.size() == static_cast<size_t>(p.microbatches * p.num_stages() * (fused ? 2 : 3)));
    CHECK(g.num_ranks() == p.ranks);
    size_t on_ranks = 0;
    for (int32_t r = 0; r < p.ranks; ++r) {
      auto nodes = g.on_rank(r);
      on_ranks += nodes.size();
      CHECK(std::is_sorted(nodes.begin(), nodes.end()));
      for (int32_t v : nodes) CHECK(g.rank(v) == r);
    }
    CHECK(on_ranks == g.size());
    for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
      Action a = g.action(v);
      CHECK(g.node_of(a) == v);
      CHECK(DepGraph::canonical_node(p, a.kind, a.mb.value, a.stage.value) == v);
      CHECK(g.rank(v) == rank_of(p, a).value);
      CHECK(g.duration(v) == to_fixed(cost_of(p, a), time_scale(p)));
      CHECK(g.memory(v) == to_fixed(memory_delta(p, a), memory_scale(p)));
      CHECK(g.missing_inputs(v) == 0);
      CHECK((a.kind == ActionKind::F || (a.kind == ActionKind::BW) == fused));
    }
    // The other backward form is absent.
    CHECK(g.node_of(fused ? B(0, 0) : BW(0, 0)) == -1);
    CHECK(DepGraph::canonical_node(p, fused ? ActionKind::W : ActionKind::BW, 0, 0) == -1);
  }
}

TEST_CASE("the graph's edges are ir::dependencies with ir::dependency_lag, in both directions") {
  test::Rng rng(12);
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = draw(rng, trial);
    // The canonical graph, and the graph of a random valid schedule (mixed: BW or B and W per
    // microbatch and stage).
    DepGraph canonical(p);
    Schedule valid = test::random_valid(p, rng);
    DepGraph of_valid = DepGraph::of_schedule(valid);
    for (auto [g, s] : {std::pair{&canonical, holding(p, canonical)}, std::pair{&of_valid, valid}}) {
      ScheduleIndex index(s);
      size_t edges = 0;
      for (int32_t v = 0; v < static_cast<int32_t>(g->size()); ++v) {
        CHECK(graph_preds(*g, v) == reference_preds(p, g->action(v), index));
        CHECK(g->missing_inputs(v) == 0);
        CHECK(g->succs(v).size() <= 2);
        edges += g->preds(v).size();
        for (const DepGraph::Edge& e : g->succs(v)) {
          auto back = g->preds(e.node);
          CHECK(std::count_if(back.begin(), back.end(),
                              [&](const DepGraph::Edge& x) { return x.node == v && x.lag == e.lag; }) == 1);
          CHECK(g->lag(v, e.node) == e.lag);
        }
      }
      size_t succ_edges = 0;
      for (int32_t v = 0; v < static_cast<int32_t>(g->size()); ++v) succ_edges += g->succs(v).size();
      CHECK(succ_edges == edges);
    }
    // Positions of a schedule's graph.
    for (int32_t r = 0; r < p.ranks; ++r)
      for (int32_t i = 0; i < static_cast<int32_t>(valid.ranks[static_cast<size_t>(r)].size()); ++i) {
        int32_t v = of_valid.node_at(r, i);
        CHECK(of_valid.action(v) == valid.ranks[static_cast<size_t>(r)][static_cast<size_t>(i)]);
        CHECK(of_valid.position(v).rank == r);
        CHECK(of_valid.position(v).index == i);
      }
  }
}

TEST_CASE("an action missing from the graph is counted where ir::dependencies waits for it") {
  test::Rng rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = draw(rng, trial);
    Schedule s = test::random_valid(p, rng);
    std::vector<Action> all;
    for (const auto& r : s.ranks) all.insert(all.end(), r.begin(), r.end());
    all.erase(all.begin() + test::uniform(rng, 0, static_cast<int>(all.size()) - 1));
    DepGraph g(p, all);
    Schedule rest;
    rest.problem = p;
    rest.ranks = {all};
    ScheduleIndex index(rest);
    for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
      auto deps = dependencies(p, g.action(v), index);
      auto absent = std::count_if(deps.begin(), deps.end(), [&](Action d) { return !index.contains(d); });
      CHECK(g.missing_inputs(v) == absent);
      CHECK(g.preds(v).size() + static_cast<size_t>(absent) == deps.size());
    }
  }
}

TEST_CASE("heads and tails are the reference rules' longest paths; no simulated start is before its head") {
  test::Rng rng(14);
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = draw(rng, trial);
    Schedule s = test::random_valid(p, rng);
    DepGraph g = DepGraph::of_schedule(s);
    // Topological order: a permutation in which every edge goes forward.
    const std::vector<int32_t> topo = g.topological_order();
    REQUIRE(topo.size() == g.size());
    std::vector<size_t> at(g.size());
    for (size_t k = 0; k < topo.size(); ++k) at[static_cast<size_t>(topo[k])] = k;
    for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v)
      for (const DepGraph::Edge& e : g.succs(v)) CHECK(at[static_cast<size_t>(v)] < at[static_cast<size_t>(e.node)]);
    const std::vector<int64_t> head = g.heads(), tail = g.tails();
    const ReferencePaths ref = reference_paths(s);
    for (int32_t v = 0; v < static_cast<int32_t>(g.size()); ++v) {
      CHECK(head[static_cast<size_t>(v)] == ref.head.at(g.action(v)));
      CHECK(tail[static_cast<size_t>(v)] == ref.tail.at(g.action(v)));
    }
    SimResult sim = simulate(s);
    REQUIRE(sim.timeline);
    const Timeline& tl = *sim.timeline;
    int64_t makespan = 0;
    for (const auto& ends : tl.end)
      for (int64_t e : ends) makespan = std::max(makespan, e);
    for (int32_t r = 0; r < p.ranks; ++r)
      for (size_t i = 0; i < s.ranks[static_cast<size_t>(r)].size(); ++i) {
        auto v = static_cast<size_t>(g.node_at(r, static_cast<int32_t>(i)));
        CHECK(tl.start[static_cast<size_t>(r)][i] >= head[v]);
        CHECK(tl.end[static_cast<size_t>(r)][i] + tail[v] <= makespan);
      }
    // Custom durations: heads and tails scale with them.
    std::vector<int64_t> doubled = g.durations();
    for (int64_t& d : doubled) d *= 2;
    std::vector<int64_t> h2 = g.heads(doubled);
    if (p.cost.comm == 0)
      for (size_t v = 0; v < g.size(); ++v) CHECK(h2[v] == 2 * head[v]);
  }
}

TEST_CASE("with one microbatch, ir::simulate starts every F, B and BW at its head") {
  // One microbatch's forwards and input-gradient backwards form a single chain, so when each rank
  // runs its share in head order, weight gradients last, nothing competes for a rank: the
  // execution is the unconstrained one, and the heads are its start times.
  test::Rng rng(17);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = draw(rng, trial);
    if (p.directions == 2) continue;
    p.microbatches = 1;
    DepGraph g(p);
    const std::vector<int64_t> head = g.heads();
    std::vector<size_t> at(g.size());
    const std::vector<int32_t> topo = g.topological_order();
    for (size_t k = 0; k < topo.size(); ++k) at[static_cast<size_t>(topo[k])] = k;
    Schedule s;
    s.problem = p;
    s.ranks.resize(static_cast<size_t>(p.ranks));
    for (int32_t r = 0; r < p.ranks; ++r) {
      auto span = g.on_rank(r);
      std::vector<int32_t> nodes(span.begin(), span.end());
      std::sort(nodes.begin(), nodes.end(), [&](int32_t x, int32_t y) {
        auto k = [&](int32_t v) {
          auto i = static_cast<size_t>(v);
          return std::tuple{g.action(v).kind == ActionKind::W, head[i], at[i]};
        };
        return k(x) < k(y);
      });
      for (int32_t v : nodes) s.ranks[static_cast<size_t>(r)].push_back(g.action(v));
    }
    SimResult sim = simulate(s);
    REQUIRE(sim.timeline);
    for (int32_t r = 0; r < p.ranks; ++r)
      for (size_t i = 0; i < s.ranks[static_cast<size_t>(r)].size(); ++i) {
        Action a = s.ranks[static_cast<size_t>(r)][i];
        if (a.kind == ActionKind::W) continue;
        CHECK(sim.timeline->start[static_cast<size_t>(r)][i] == head[static_cast<size_t>(g.node_of(a))]);
        ++checked;
      }
  }
  CHECK(checked > 1000);
}

TEST_CASE("ir::verify rejects swapping two adjacent actions exactly when the graph joins them") {
  test::Rng rng(15);
  int rejected = 0, kept = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = draw(rng, trial);
    Schedule s = test::random_valid(p, rng);
    DepGraph g = DepGraph::of_schedule(s);
    for (int k = 0; k < 4; ++k) {
      auto r = static_cast<size_t>(test::uniform(rng, 0, p.ranks - 1));
      if (s.ranks[r].size() < 2) continue;
      auto i = static_cast<size_t>(test::uniform(rng, 0, static_cast<int>(s.ranks[r].size()) - 2));
      int32_t a = g.node_at(static_cast<int32_t>(r), static_cast<int32_t>(i));
      int32_t b = g.node_at(static_cast<int32_t>(r), static_cast<int32_t>(i + 1));
      auto succ = g.succs(a);
      bool edge = std::any_of(succ.begin(), succ.end(), [&](const DepGraph::Edge& e) { return e.node == b; });
      Schedule swapped = s;
      std::swap(swapped.ranks[r][i], swapped.ranks[r][i + 1]);
      auto issues = verify(swapped, {.check_memory = false});
      bool order = std::any_of(issues.begin(), issues.end(),
                               [](const VerifyIssue& x) { return x.kind == DiagKind::DependencyOrder; });
      CHECK(order == edge);
      (edge ? rejected : kept) += 1;
    }
  }
  CHECK(rejected > 20);
  CHECK(kept > 20);
}

TEST_CASE("microbatch-order edges join consecutive microbatches of one direction on every stage") {
  test::Rng rng(16);
  for (int trial = 0; trial < 200; ++trial) {
    Problem p = draw(rng, trial);
    const bool weights = test::uniform(rng, 0, 1) == 1;
    DepGraph plain(p), ordered(p, {.microbatch_order = true, .order_weights = weights});
    REQUIRE(ordered.size() == plain.size());
    REQUIRE(ordered.topological_order().size() == ordered.size());
    for (int32_t v = 0; v < static_cast<int32_t>(plain.size()); ++v) {
      Action a = plain.action(v);
      auto extra = ordered.succs(v).size() - plain.succs(v).size();
      Action next{a.kind, MbId(a.mb.value + 1), a.stage};
      bool joined = a.mb.value + 1 < p.microbatches && p.direction_of(a.mb) == p.direction_of(next.mb) &&
                    (a.kind != ActionKind::W || weights);
      CHECK(extra == (joined ? 1u : 0u));
      if (!joined) continue;
      // The rule edges come first, the order edge last, with lag 0.
      auto succ = ordered.succs(v);
      for (size_t k = 0; k + 1 < succ.size(); ++k) CHECK(succ[k].node == plain.succs(v)[k].node);
      CHECK(succ.back().node == ordered.node_of(next));
      CHECK(succ.back().lag == 0);
    }
  }
}
