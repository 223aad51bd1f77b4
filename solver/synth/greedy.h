#pragma once
// The cap-aware greedy list scheduler (in the spirit of the Zero Bubble repo's heuristic): each
// free rank starts the best ready action; forwards only while memory allows, then backwards, with
// weight gradients filling the gaps. Several priority variants give the solver its incumbents.

#include <optional>
#include <string>
#include <vector>

#include "solver/synth/instance.h"

namespace schedc::solver {

struct GreedyVariant {
  std::string priority = "BFW";  // kinds by preference (B stands for BW in fused problems)
  bool breadth_first = false;    // forwards: all microbatches of a stage before the next stage
  int64_t cap_slack = 0;         // forwards keep this much memory (fixed point) below the cap
  bool lookahead = false;        // idle rather than start a forward that a known backward would wait on
  int32_t w_reserve = 0;         // keep this many weight gradients pending (unless memory needs them) to fill the cool-down
  std::string name() const;
};

/// Per-rank node orders, or nullopt when the variant gets stuck (memory deadlock).
std::optional<std::vector<std::vector<int32_t>>> greedy_orders(const Instance& inst, const GreedyVariant& v);

/// The variants the solver tries.
std::vector<GreedyVariant> greedy_variants(const Instance& inst);

}  // namespace schedc::solver
