// The lower bound's terms under a memory cap (docs/solver.md section 1): fill and drain, memory
// throughput, one microbatch at a time, which stay opens each rank, consecutive microbatches, the
// windows of microbatches that fill the cap.

#include <algorithm>
#include <unordered_map>

#include "ir/action.h"
#include "ir/lower_bound_terms.h"

namespace schedc::ir::bound {

// The memory terms of one rank under its cap: fill and drain (Zero Bubble appendix B,
// generalised) and the memory throughput (docs/solver.md section 1 derives both).
RankTerms memory_terms(const Problem& p, const Dag& g, const Costs& c, std::span<const int32_t> jobs,
                       const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap) {
  RankTerms t;
  const bool fused = p.backward == BackwardMode::Fused, split = p.backward == BackwardMode::Split;
  const int32_t S = p.num_stages();
  int64_t first_backward = kNever;
  std::vector<int64_t> f_costs;
  bool fill_bounded = true, drain_bounded = true, one_memory = true, flows = true;
  int64_t min_mem_f = kNever, min_chain = kNever, min_first = kNever, last_step = kNever;
  Wide fill = 0, drain_num = 0, drain_den = 1, integral = 0;
  auto more = [](Wide n1, Wide d1, Wide n2, Wide d2) { return n1 * d2 > n2 * d1; };  // n1/d1 > n2/d2
  for (int32_t i : jobs) {
    auto id = static_cast<size_t>(i);
    Action a = g.act(id);
    t.work += g.share[id];
    t.earliest = std::min(t.earliest, g.head[id]);
    if (a.kind != ActionKind::F) {
      if (a.kind != ActionKind::W) first_backward = std::min(first_backward, g.head[id]);
      if (a.kind == (split ? ActionKind::W : fused ? ActionKind::BW : ActionKind::B))
        last_step = std::min(last_step, g.dur[id]);
      continue;
    }
    auto z = a.stage.index();
    const StageMemory& sm = mem[z];
    int64_t f = c.f[z], b = c.b[z], w = c.w[z], bw = c.bw[z];
    if (!f_costs.empty() && sm.f != min_mem_f) one_memory = false;
    f_costs.push_back(f);
    min_mem_f = std::min(min_mem_f, sm.f);
    // Fill: forwards before the first backward run alone at their cost and all stay in memory.
    if (sm.f <= 0) fill_bounded = drain_bounded = false;
    else fill = std::max(fill, floor_div(Wide{cap} * f, sm.f));
    // Drain: after the last forward, the work left to in-flight microbatches is at most
    // (memory held) x (work per memory held); the held amounts must never be negative.
    bool held_ok = fused || (sm.f + sm.b >= 0 && sm.f + sm.b + sm.w >= 0 && (w == 0 || sm.f + sm.b > 0));
    if (!held_ok) drain_bounded = false;
    if (drain_bounded) {
      int64_t to_do = fused ? bw : split ? b + w : std::max(bw, b + w);
      if (more(to_do, sm.f, drain_num, drain_den)) drain_num = to_do, drain_den = sm.f;
      if (!fused && w > 0 && more(w, sm.f + sm.b, drain_num, drain_den)) drain_num = w, drain_den = sm.f + sm.b;
    }
    int64_t chain = chains[static_cast<size_t>(p.direction_of(a.mb) * S + a.stage.value)];
    min_chain = std::min(min_chain, chain);
    min_first = std::min(min_first, g.dur[id] + chain);
    // Throughput: memory F holds from F's start to its backward's start, F + B from B to W.
    if (sm.f < 0 || (!fused && (sm.f + sm.b < 0 || sm.f + sm.b + sm.w < 0))) flows = false;
    integral += Wide{sm.f} * (g.dur[id] + chain);
    if (split) {
      auto b_node = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, ActionKind::B));
      integral += Wide{sm.f + sm.b} * g.dur[b_node];
    }
  }
  if (f_costs.empty() || first_backward == kNever) return t;
  if (flows && cap > 0 && integral > 0 && last_step != kNever) {
    t.throughput = true;
    t.throughput_span = ceil_div(integral, cap) + last_step;
  }
  if (fill_bounded) {
    // One memory value (the usual case): only whole forwards fit, the dearest ones at most.
    if (one_memory) {
      auto k = static_cast<size_t>(cap / min_mem_f);
      std::sort(f_costs.rbegin(), f_costs.rend());
      Wide sum = 0;
      for (size_t i = 0; i < std::min(k, f_costs.size()); ++i) sum += f_costs[i];
      fill = std::min(fill, sum);
      t.disjoint = k < f_costs.size();
    }
    t.fill = fill;
    t.idle_head = std::max<Wide>(0, Wide{first_backward} - t.earliest - fill);
    t.idle_head_span = std::max<Wide>(0, Wide{min_first} - fill);
  }
  if (drain_bounded) {
    Wide pending = floor_div(std::max<Wide>(0, Wide{cap} - min_mem_f) * drain_num, drain_den);
    t.idle_tail = std::max<Wide>(0, Wide{min_chain} - pending);
  }
  return t;
}

OneAtATime one_at_a_time(const Problem& p, const Dag& g, std::span<const int32_t> jobs,
                         const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap) {
  OneAtATime out;
  const bool split = p.backward == BackwardMode::Split;
  const int32_t S = p.num_stages();
  int64_t min_f = kNever, min_held = kNever;
  for (int32_t i : jobs) {
    Action a = g.act(static_cast<size_t>(i));
    if (a.kind != ActionKind::F) continue;
    const StageMemory& m = mem[a.stage.index()];
    // Every other (mb, s) of r must hold a non-negative amount at all times, finished ones too:
    // one that frees more than it took makes room for another forward.
    if (m.f < 0 || (p.backward != BackwardMode::Fused && (m.f + m.b < 0 || m.f + m.b + m.w < 0))) return out;
    min_f = std::min(min_f, m.f);
    min_held = std::min(min_held, split ? std::min(m.f, m.f + m.b) : m.f);
  }
  if (min_f == kNever || min_f <= 0) return out;
  const bool to_w = split && min_held > 0 && Wide{min_held} + min_f > cap;
  if (!to_w && Wide{min_f} + min_f <= cap) return out;
  out.to_w = to_w;
  int64_t last = kNever;  // the least time r still runs after its last stay ends
  for (int32_t i : jobs) {
    auto id = static_cast<size_t>(i);
    Action a = g.act(id);
    if (a.kind != ActionKind::F) continue;
    out.first = std::min(out.first, g.head[id]);
    const int32_t d = p.direction_of(a.mb);
    const bool opens = a.mb.value == p.first_microbatch(d);
    const ActionKind bk = p.backward == BackwardMode::Fused ? ActionKind::BW : ActionKind::B;
    auto b = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, bk));
    Wide stay = Wide{g.dur[id]} + chains[static_cast<size_t>(d * S + a.stage.value)];
    if (to_w) {
      auto w = static_cast<size_t>(node_of(p, a.mb.value, a.stage.value, ActionKind::W));
      stay += Wide{g.dur[b]} + g.dur[w];
      last = 0;
    } else {
      last = std::min(last, g.dur[b]);
    }
    out.span += stay;
    if (opens) out.firsts.push_back({d, a.stage.value, g.head[id], stay});
  }
  out.span += last == kNever ? 0 : last;
  return out;
}

Opening who_opens(const Problem& p, const Dag& g, const std::vector<OneAtATime>& ones) {
  Opening out;
  const int32_t S = p.num_stages(), D = p.num_directions();
  std::vector<int32_t> ranks;
  size_t work = 0;
  for (int32_t r = 0; r < p.ranks; ++r)
    if (ones[static_cast<size_t>(r)].span > 0 && !ones[static_cast<size_t>(r)].firsts.empty())
      ranks.push_back(r), work += ones[static_cast<size_t>(r)].firsts.size();
  // Pairs times choices times stages, at most 4e7 steps (1.7e7 at pp 256, vpp 4, two
  // directions); larger problems go without the term.
  if (ranks.size() < 2 || Wide{work} * work * static_cast<Wide>(S) / p.ranks > 40'000'000) return out;
  const ActionKind bk = p.backward == BackwardMode::Fused ? ActionKind::BW : ActionKind::B;
  // The first microbatch of each direction: its chain F_0 .. F_{S-1}, then its backwards from the
  // last stage, and the least time from the start of the chain's first node to each node's start
  // (chain durations and comm lags; every path within the microbatch runs along it).
  std::vector<std::vector<Wide>> along(static_cast<size_t>(D));
  std::vector<std::vector<int32_t>> chain(static_cast<size_t>(D));
  for (int32_t d = 0; d < D; ++d) {
    const int32_t mb = p.first_microbatch(d);
    auto& c = chain[static_cast<size_t>(d)];
    for (int32_t s = 0; s < S; ++s) c.push_back(node_of(p, mb, s, ActionKind::F));
    for (int32_t s = S - 1; s >= 0; --s) c.push_back(node_of(p, mb, s, bk));
    auto& t = along[static_cast<size_t>(d)];
    t.assign(c.size(), 0);
    for (size_t i = 1; i < c.size(); ++i)
      t[i] = t[i - 1] + g.dur[static_cast<size_t>(c[i - 1])] + g.graph.lag(c[i - 1], c[i]);
  }
  // The stages of each direction on each rank.
  std::vector<std::vector<int32_t>> stages_on(static_cast<size_t>(p.ranks * D));
  for (int32_t d = 0; d < D; ++d)
    for (int32_t s = 0; s < S; ++s) stages_on[static_cast<size_t>(p.rank_of(d, StageId(s)).value * D + d)].push_back(s);
  using First = OneAtATime::First;
  // The least end of a's first stay x given b's first stay y, plus a's other stays (0: no crossing).
  auto crossing = [&](int32_t a, const First& x, int32_t b, const First& y) -> Wide {
    const OneAtATime& oa = ones[static_cast<size_t>(a)];
    const auto dx = static_cast<size_t>(x.direction);
    const size_t back = static_cast<size_t>(2 * S - 1 - x.stage);  // x's backward on the chain
    Wide after = 0;                                                // from the backward's start to the stay's end
    if (oa.to_w) {
      const int32_t mb = p.first_microbatch(x.direction);
      after = Wide{g.dur[static_cast<size_t>(chain[dx][back])]} +
              g.dur[static_cast<size_t>(node_of(p, mb, x.stage, ActionKind::W))];
    }
    Wide path = -1;
    for (int32_t t : stages_on[static_cast<size_t>(b * D + x.direction)])
      if (x.direction != y.direction || t != y.stage)
        path = std::max(path, along[dx][back] - along[dx][static_cast<size_t>(t)] + after);
    if (path < 0) return 0;
    return Wide{y.head} + y.stay + path + (oa.span - x.stay);
  };
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = i + 1; j < ranks.size(); ++j) {
      const int32_t a = ranks[i], b = ranks[j];
      const OneAtATime &oa = ones[static_cast<size_t>(a)], &ob = ones[static_cast<size_t>(b)];
      Wide least = -1;
      for (const First& x : oa.firsts)
        for (const First& y : ob.firsts) {
          Wide v = std::max(
              {Wide{x.head} + oa.span, Wide{y.head} + ob.span, crossing(a, x, b, y), crossing(b, y, a, x)});
          least = least < 0 ? v : std::min(least, v);
        }
      if (least > out.value) out = {least, a, b};
    }
  return out;
}

// Whether every (mb, s) of rank r holds a non-negative amount at all times, finished ones too
// (F >= 0, F + B >= 0 and F + B + W >= 0, or F + BW >= 0 when fused), so that the other microbatches
// only add to what a rank holds (terms 8 and 10).
static bool never_negative(const Problem& p, const Dag& g, std::span<const int32_t> jobs) {
  const bool fused = p.backward == BackwardMode::Fused;
  auto memory = [&](int32_t mb, int32_t st, ActionKind k) { return g.graph.memory(node_of(p, mb, st, k)); };
  for (int32_t i : jobs) {
    Action a = g.act(static_cast<size_t>(i));
    if (a.kind != ActionKind::F) continue;
    int64_t f = g.graph.memory(i);
    int64_t held = f + memory(a.mb.value, a.stage.value, fused ? ActionKind::BW : ActionKind::B);
    int64_t left = fused ? held : held + memory(a.mb.value, a.stage.value, ActionKind::W);
    if (f < 0 || held < 0 || left < 0) return false;
  }
  return true;
}

// Consecutive microbatches under the cap (docs/solver.md section 1, term 8). Take two
// microbatches k and k + 1 of one direction, in order on every stage (symmetry), and rank r. Along
// r's order the pair of their started sets (A, B) moves from nothing to everything on r, one
// action (or a unit of one of each) at a time; with every other microbatch holding a non-negative
// amount, each pair of sets on the way holds at most the cap. For a forward Y of r, the sets A that
// can stand beside B when Y(k + 1) starts tell which of k's actions must have started by then: so
// Y(k + 1)'s step ends at least E_k + c after Y(k)'s (E_k), where c is the least over those A of a
// one-machine bound on what runs between them (k's actions reachable from Y(k), released at their
// path length from Y(k)'s end; k + 1's own earlier actions of r, released where their own sets A
// say; then Y itself). Chained over the direction's microbatches, between the first Y's head and
// the last one's tail. Split and fused problems (a mixed one may turn any BW into B;W: skipped).
// Makespan only: the symmetry may not keep a rank's span. Returns 0 where it does not apply.
Wide consecutive_microbatches(const Problem& p, const Dag& g, std::span<const int32_t> jobs, int64_t cap) {
  Wide out = 0;
  if (p.backward == BackwardMode::Mixed || cap < 0) return out;
  const bool fused = p.backward == BackwardMode::Fused;
  const int32_t S = p.num_stages();
  auto node = [&](int32_t mb, int32_t st, ActionKind k) { return static_cast<size_t>(node_of(p, mb, st, k)); };
  auto memory = [&](size_t v) { return g.graph.memory(static_cast<int32_t>(v)); };
  if (!never_negative(p, g, jobs)) return out;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  for (int32_t d = 0; d < p.num_directions(); ++d) {
    const int32_t mb0 = p.first_microbatch(d);
    const int32_t count = p.microbatches_of(d);
    if (count < 2) continue;
    // The actions of microbatch mb0 on r, as (stage, kind); the same indices name mb0 + 1's.
    std::vector<std::pair<int32_t, ActionKind>> life;
    for (int32_t i : jobs) {
      Action a = g.act(static_cast<size_t>(i));
      if (a.mb.value == mb0) life.push_back({a.stage.value, a.kind});
    }
    const size_t n = life.size();
    if (n == 0 || n > 16) continue;
    auto at = [&](int32_t mb, size_t i) { return node(mb, life[i].first, life[i].second); };
    // Longest paths within one microbatch from each action's end to each action's start (chain
    // durations and lags; kNone where there is no path), in its topological order: forwards by
    // stage, then backwards from the last stage, each followed by its W.
    std::vector<size_t> topo;
    for (int32_t st = 0; st < S; ++st) topo.push_back(node(mb0, st, ActionKind::F));
    for (int32_t st = S - 1; st >= 0; --st) {
      topo.push_back(node(mb0, st, fused ? ActionKind::BW : ActionKind::B));
      if (!fused) topo.push_back(node(mb0, st, ActionKind::W));
    }
    std::vector<std::vector<int64_t>> path(n, std::vector<int64_t>(n, kNone));
    {
      const auto base = static_cast<size_t>(node_of(p, mb0, 0, ActionKind::F));
      const size_t per_mb = topo.size();
      auto local = [&](size_t v) { return v - base; };  // canonical ids of one microbatch are contiguous
      std::vector<int64_t> dist(per_mb);
      for (size_t i = 0; i < n; ++i) {
        std::fill(dist.begin(), dist.end(), kNone);
        const size_t u = at(mb0, i);
        for (const DepGraph::Edge& e : g.graph.succs(static_cast<int32_t>(u)))
          if (g.act(static_cast<size_t>(e.node)).mb.value == mb0)
            dist[local(static_cast<size_t>(e.node))] = std::max(dist[local(static_cast<size_t>(e.node))], e.lag);
        for (size_t v : topo) {
          int64_t dv = dist[local(v)];
          if (dv == kNone) continue;
          for (const DepGraph::Edge& e : g.graph.succs(static_cast<int32_t>(v)))
            if (g.act(static_cast<size_t>(e.node)).mb.value == mb0)
              dist[local(static_cast<size_t>(e.node))] = std::max(dist[local(static_cast<size_t>(e.node))],
                                                                  dv + g.dur[v] + e.lag);
        }
        for (size_t j = 0; j < n; ++j) path[i][j] = dist[local(at(mb0, j))];
      }
    }
    std::vector<uint32_t> preds(n, 0);
    std::vector<int64_t> delta(n);
    for (size_t j = 0; j < n; ++j) {
      delta[j] = memory(at(mb0, j));
      for (size_t i = 0; i < n; ++i)
        if (path[i][j] != kNone) preds[j] |= uint32_t{1} << i;
    }
    // Where two microbatches' peaks (at most their positive deltas) fit side by side the cap
    // orders nothing: c would be Y's own step.
    Wide peak = 0;
    for (size_t i = 0; i < n; ++i) peak += std::max<int64_t>(0, delta[i]);
    if (2 * peak <= cap) continue;
    // The pairs of started sets along r's order: reachable from (nothing, nothing) within the cap
    // and able to reach (everything, everything).
    const uint32_t full = n == 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1;
    auto key = [&](uint32_t a, uint32_t b) { return uint64_t{a} << 32 | b; };
    std::vector<std::pair<uint32_t, uint32_t>> states{{0, 0}};
    std::vector<Wide> holds{0};
    std::unordered_map<uint64_t, size_t> index{{key(0, 0), 0}};
    struct Step {
      size_t from, to;
      int added_b;  // the index k + 1 started here, -1 when none
    };
    std::vector<Step> steps;
    auto kind = [&](size_t i) { return life[i].second; };
    auto may_add_a = [&](uint32_t a, size_t i) { return !(a >> i & 1) && (preds[i] & ~a) == 0; };
    // k + 1's action comes after k's of the same stage and kind (W's are not assumed in order).
    auto may_add_b = [&](uint32_t a, uint32_t b, size_t j) {
      return !(b >> j & 1) && (preds[j] & ~b) == 0 && (kind(j) == ActionKind::W || (a >> j & 1));
    };
    for (size_t q = 0; q < states.size(); ++q) {
      auto [a, b] = states[q];
      const Wide h = holds[q];
      auto go = [&](uint32_t a2, uint32_t b2, Wide h2, int added) {
        if (h2 > cap) return;
        auto [it, fresh] = index.emplace(key(a2, b2), states.size());
        if (fresh) states.push_back({a2, b2}), holds.push_back(h2);
        steps.push_back({q, it->second, added});
      };
      for (size_t i = 0; i < n; ++i)
        if (may_add_a(a, i)) go(a | uint32_t{1} << i, b, h + delta[i], -1);
      for (size_t j = 0; j < n; ++j)
        if (may_add_b(a, b, j)) go(a, b | uint32_t{1} << j, h + delta[j], static_cast<int>(j));
      // A unit: a forward of one microbatch with a backward (B or BW) of the other.
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
          bool fb = (kind(i) == ActionKind::F && is_backward(kind(j))) ||
                    (is_backward(kind(i)) && kind(j) == ActionKind::F);
          if (fb && may_add_a(a, i) && may_add_b(a, b, j))
            go(a | uint32_t{1} << i, b | uint32_t{1} << j, h + delta[i] + delta[j], static_cast<int>(j));
        }
      if (states.size() > 200'000) break;  // never near this: at most 35 sets a side at vpp 4
    }
    if (states.size() > 200'000) continue;
    auto last = index.find(key(full, full));
    if (last == index.end()) continue;  // no pair passes r under the cap: leave it to the others
    std::vector<char> live(states.size(), 0);
    live[last->second] = 1;
    for (bool changed = true; changed;) {
      changed = false;
      for (const Step& st : steps)
        if (live[st.to] && !live[st.from]) live[st.from] = 1, changed = true;
    }
    for (size_t y = 0; y < n; ++y) {
      if (kind(y) != ActionKind::F) continue;
      // Releases relative to E_k = Y(k)'s end: k's actions reachable from Y(k) at their path
      // length. An action j of k + 1 started no earlier than any of k's started before it, and
      // after Y(k)'s step when Y(k) had started (a forward never shares a unit with a forward).
      auto rel_a = [&](uint32_t a, size_t j) {  // kNone when nothing bounds it
        int64_t r = (a >> y & 1) && kind(j) == ActionKind::F ? 0 : kNone;
        for (size_t i = 0; i < n; ++i)
          if ((a >> i & 1) && path[y][i] != kNone) r = std::max(r, path[y][i]);
        return r;
      };
      // k + 1's earlier actions: released at the least, over the steps that start them, of the
      // latest release among k's actions started by then.
      std::vector<int64_t> rel_b(n, std::numeric_limits<int64_t>::max());
      for (const Step& st : steps)
        if (st.added_b >= 0 && live[st.from] && live[st.to]) {
          auto j = static_cast<size_t>(st.added_b);
          rel_b[j] = std::min(rel_b[j], rel_a(states[st.to].first, j));
        }
      const int64_t y_share = g.share[at(mb0 + 1, y)], y_dur = g.dur[at(mb0 + 1, y)];
      Wide c = -1;
      for (const Step& st : steps) {
        if (st.added_b != static_cast<int>(y) || !live[st.from] || !live[st.to]) continue;
        auto [a, b] = states[st.to];
        std::vector<std::pair<int64_t, int64_t>> work;  // (release, share)
        for (size_t i = 0; i < n; ++i)
          if ((a >> i & 1) && path[y][i] != kNone) work.push_back({path[y][i], g.share[at(mb0, i)]});
        for (size_t j = 0; j < n; ++j)
          if (j != y && (b >> j & 1) && rel_b[j] != kNone && rel_b[j] != std::numeric_limits<int64_t>::max())
            work.push_back({rel_b[j], g.share[at(mb0 + 1, j)]});
        std::sort(work.rbegin(), work.rend());
        Wide best = 0, sum = 0;
        for (auto [release, share] : work) {
          sum += share;
          best = std::max(best, Wide{release} + sum);
        }
        Wide here = std::max<Wide>(best + y_share, y_dur);
        c = c < 0 ? here : std::min(c, here);
      }
      if (c <= 0) continue;
      const size_t y_last = at(mb0 + count - 1, y);
      Wide end = 0;  // of the last Y's step
      for (int32_t j = 0; j < count; ++j)
        end = std::max(end, Wide{g.head[at(mb0 + j, y)]} + y_dur + Wide{count - 1 - j} * c);
      out = std::max(out, end + g.tail[y_last]);
    }
  }
  return out;
}

// A window of microbatches fills the cap (docs/solver.md section 1, term 10). On rank r take the
// first stage s of a direction on r; each microbatch holds at least a = mem.F_s on r from its
// forward F_s's start until its backward X (B, or BW when fused) of s starts, at least
// h2 = mem.F_s + mem.B_s from then until its W starts, and hf >= 0 after (every (mb, s) of r
// holding a non-negative amount, as in terms 6 and 8). With k the least count such that k
// microbatches holding a leave no room for one more forward (k a + a > cap), when F_s of the
// (j + k)-th microbatch starts, the k before it have all started their F_s, so enough of their
// X's and W's must have started before it in r's order to free the room: x X's and w W's (each W
// after its own X) with (k - x) a + (x - w) h2 + w hf + a <= cap. They all run on r, one after
// another, none before the first X can start (d(F) + L after F_s of j, the round trip), and the
// forward starts after the last one ends, or with it when the last is an X sharing a unit with it
// (where units can save; where none can, some optimal schedule has none). So F_s(j + k) starts at
// least P = d(F) + L + least over (x, w) of x d(X) + w d(W) (less one d(X) when x > w and units
// save) after F_s(j), and the direction's last microbatch still runs its tail. Split and
// fused problems, makespan only (a mixed BW may become B;W). Returns 0 where it does not apply.
Wide cap_windows(const Problem& p, const Dag& g, std::span<const int32_t> jobs, const std::vector<int64_t>& chains,
                 int64_t cap, bool units_save) {
  Wide out = 0;
  if (p.backward == BackwardMode::Mixed || cap < 0) return out;
  const bool split = p.backward == BackwardMode::Split;
  const ActionKind xk = split ? ActionKind::B : ActionKind::BW;
  const int32_t S = p.num_stages();
  auto node = [&](int32_t mb, int32_t st, ActionKind k) { return static_cast<size_t>(node_of(p, mb, st, k)); };
  auto memory = [&](size_t v) { return g.graph.memory(static_cast<int32_t>(v)); };
  if (!never_negative(p, g, jobs)) return out;
  for (int32_t d = 0; d < p.num_directions(); ++d) {
    const int32_t mb0 = p.first_microbatch(d), count = p.microbatches_of(d);
    int32_t first = -1;
    for (int32_t i : jobs) {
      Action a = g.act(static_cast<size_t>(i));
      if (a.kind == ActionKind::F && a.mb.value == mb0 && (first < 0 || a.stage.value < first)) first = a.stage.value;
    }
    if (first < 0) continue;
    const size_t f0 = node(mb0, first, ActionKind::F), x0 = node(mb0, first, xk);
    const Wide a = memory(f0), h2 = a + memory(x0);
    const Wide hf = split ? h2 + memory(node(mb0, first, ActionKind::W)) : h2;
    if (a <= 0 || a > cap) continue;
    const Wide k = floor_div(Wide{cap} - a, a) + 1;
    if (k >= count) continue;
    const Wide d_x = g.dur[x0], d_w = split ? g.dur[node(mb0, first, ActionKind::W)] : 0;
    // For each x the fewest W's that make room (more only cost time and take the unit away).
    Wide least = -1;
    for (Wide x = 1; x <= k; ++x) {
      Wide over = (k - x) * a + x * h2 + a - cap, w = 0;
      if (over > 0) {
        if (!split || h2 <= hf) continue;
        w = ceil_div(over, h2 - hf);
        if (w > x) continue;
      }
      Wide cost = x * d_x + w * d_w - (units_save && x > w ? d_x : 0);
      least = least < 0 ? cost : std::min(least, cost);
    }
    if (least < 0) continue;
    const Wide period = Wide{g.dur[f0]} + chains[static_cast<size_t>(d * S + first)] + least;
    std::vector<Wide> start(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
      const size_t f = node(mb0 + i, first, ActionKind::F);
      Wide s = g.head[f];
      if (i > 0) s = std::max(s, start[static_cast<size_t>(i - 1)]);
      if (i >= k) s = std::max(s, start[static_cast<size_t>(i - static_cast<int32_t>(k))] + period);
      start[static_cast<size_t>(i)] = s;
      out = std::max(out, s + g.dur[f] + g.tail[f]);
    }
  }
  return out;
}

}  // namespace schedc::ir::bound
