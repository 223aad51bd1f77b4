#pragma once
// Internal to the lower bound (ir/lower_bound.cpp): the bound's graph and durations, and the terms
// that apply only under a memory cap (docs/solver.md section 1, terms 3, 4, 6, 8, 9 and 10), which
// ir/lower_bound_cap.cpp holds.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ir/dep_graph.h"
#include "ir/problem.h"

namespace schedc::ir::bound {

// Sums over many actions can pass int64 (a path may hold 4e6 actions of up to 1e12 ticks; a
// memory integral multiplies that by memory values of up to 1e12 fixed-point units), so every
// term is summed in 128 bits and converted to double the way the simulator converts its ticks.
__extension__ typedef __int128 Wide;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

inline Wide floor_div(Wide a, Wide b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }

// The dependency graph of a problem (ir::DepGraph, canonical: the split backward B then W unless
// the problem is fused; a mixed problem's BW maps onto its B and W nodes, docs/solver.md section
// 1) with the microbatch-order edges, and the bound's own durations in fixed-point ticks. Every
// node carries two, because an overlapped F&B unit makes its members share one interval: `dur`,
// the least time from the node's start to its outputs (chains: heads, tails, the critical path),
// and `share`, the least busy time it adds to its rank (per-rank work).
struct Dag {
  DepGraph graph;
  std::vector<int64_t> dur, share;
  std::vector<int64_t> head, tail;

  Action act(size_t v) const { return graph.action(static_cast<int32_t>(v)); }
  size_t size() const { return graph.size(); }
};

inline int32_t node_of(const Problem& p, int32_t mb, int32_t s, ActionKind k) {
  return DepGraph::canonical_node(p, k, mb, s);
}

struct Costs {
  std::vector<int64_t> f, b, w, bw, fb;  // per stage; fb empty when FB is not declared
  // 1 when an undeclared unit's FB (the sum of its members' costs, rounded once) may round one
  // tick below the sum of the members' rounded costs: some cost is not a whole number of ticks.
  int64_t rounding = 0;
};

// Memory values of a rank's stages in the verifier's fixed point.
struct StageMemory {
  int64_t f = 0, b = 0, w = 0;
};

struct RankTerms {
  Wide work = 0;              // sum of work shares
  int64_t earliest = kNever;  // least head
  Wide idle_head = 0;         // before the first backward, beyond what forwards can fill
  Wide idle_tail = 0;         // after the last forward, beyond what pending backwards can fill
  Wide idle_head_span = 0;    // the same measured from the rank's first action
  bool disjoint = false;      // the cap forces a backward before the last forward
  bool throughput = false;    // the memory-throughput term applies
  Wide throughput_span = 0;   // least time from the rank's first start to its last end by it
  Wide fill = -1;             // forward work that fits before the first backward; -1: no limit
};

// One microbatch at a time (docs/solver.md section 1, term 6): when the cap leaves no room for a
// forward beside what any other microbatch still holds on r (and no microbatch ever holds less
// than nothing, so the others only add to it), their stays on r cannot overlap. In a
// split problem a microbatch holds F from its forward's start and F + B from its B's start until
// its W starts; if any of those amounts plus any forward of r exceeds the cap, another forward of r
// must come after that W in r's order, so after it ends (a W is never in a unit): the stays
// [F.start, W.end) are disjoint, each at least d(F) + L + d(B) + d(W). Where only two forwards
// cannot coexist (or the backward is fused or mixed, whose BW may share a unit with the next
// forward), the stays end at the backward's start: d(F) + L, and the last backward still runs.
// Returns the least span from the first stay's start to the end (0 when the cap leaves room).
struct OneAtATime {
  Wide span = 0;
  int64_t first = kNever;  // least head of r's forwards
  bool to_w = false;       // the stays end at W's end (else at the backward's start)
  // What can open r's first stay: by the symmetry, the first microbatch of a direction on one of
  // its stages of r. Its forward's head, and the least length of that stay.
  struct First {
    int32_t direction = 0, stage = 0;
    int64_t head = 0;
    Wide stay = 0;
  };
  std::vector<First> firsts;
};

// Who opens the stays (docs/solver.md section 1, term 9). Where ranks a and b each hold one
// microbatch at a time (term 6), every stay of a rank follows its first one, and term 6 starts that
// one at the least head of the rank's forwards. But the first microbatch X_a of a's first stay may
// pass through b on another (microbatch, stage) than b's own first stay X_b: that stay Y on b
// starts after b's first stay ended, and X_a's stay ends no earlier than the path from Y's forward
// back to it. So X_a's stay ends at least head(X_b) + stay(X_b) + path(Y, end of X_a's stay), and
// a's other stays follow. For each choice of the two first stays the bound is the largest of each
// rank's head + span and the two crossings; the least over the choices holds. Makespan only (the
// first stays are first microbatches by the symmetry). Returns 0 where no two ranks apply.
struct Opening {
  Wide value = 0;
  int32_t a = -1, b = -1;
};

// The fill/drain and memory-throughput terms of one rank under its cap (terms 3 and 4).
RankTerms memory_terms(const Problem& p, const Dag& g, const Costs& c, std::span<const int32_t> jobs,
                       const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap);
// One microbatch at a time on one rank (term 6).
OneAtATime one_at_a_time(const Problem& p, const Dag& g, std::span<const int32_t> jobs,
                         const std::vector<StageMemory>& mem, const std::vector<int64_t>& chains, int64_t cap);
// Which stay opens each of two one-at-a-time ranks (term 9), over every pair of them.
Opening who_opens(const Problem& p, const Dag& g, const std::vector<OneAtATime>& ones);
// Consecutive microbatches under the cap (term 8).
Wide consecutive_microbatches(const Problem& p, const Dag& g, std::span<const int32_t> jobs, int64_t cap);
// A window of microbatches fills the cap: the next forward waits for a round trip (term 10).
// `units_save`: whether some overlapped unit can save time (else no optimal schedule needs one).
Wide cap_windows(const Problem& p, const Dag& g, std::span<const int32_t> jobs, const std::vector<int64_t>& chains,
                 int64_t cap, bool units_save);

}  // namespace schedc::ir::bound
