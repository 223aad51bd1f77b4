#pragma once
// ir::Problem: what a pipeline schedule must solve (docs/design.md section 3, normative). Ranks,
// stages, microbatches, directions, placement, backward mode, costs, memory and objective.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/field.h"
#include "support/diagnostics.h"
#include "support/strong_id.h"

namespace schedc::ir {

using RankId = StrongId<struct RankTag>;
using StageId = StrongId<struct StageTag>;
/// A microbatch index in 0..m-1 (with k directions, direction d takes d*m/k..(d+1)*m/k-1).
using MbId = StrongId<struct MbTag>;

enum class PlacementKind { Looped, VShape, Wave, Custom };
enum class BackwardMode { Fused, Split, Mixed };
enum class Objective { Makespan, MaxSpan };
/// Recomputation (activation checkpointing, docs/design.md section 3): `off`, no R; `allowed`, the schedule
/// chooses per (microbatch, stage) whether its F is checkpointed (an R in the schedule says so);
/// `all`, every F is checkpointed and every (microbatch, stage) has its R.
enum class Recompute { Off, Allowed, All };

/// `single` (1), `bidirectional` (2), or `k directions`.
std::string direction_name(int32_t directions);
std::string_view to_string(PlacementKind p);
std::string_view to_string(BackwardMode b);
/// "makespan" or "max-span" (the spelling of the language, the JSON format and the CLI).
std::string_view to_string(Objective o);
std::string_view to_string(Recompute r);
/// `single` -> 1, `bidirectional` -> 2 (the `direction` key's words; `directions = k` sets any k).
std::optional<int32_t> parse_direction(std::string_view s);
std::optional<PlacementKind> parse_placement(std::string_view s);
std::optional<BackwardMode> parse_backward(std::string_view s);
/// Accepts "makespan", "max-span" and "max_span".
std::optional<Objective> parse_objective(std::string_view s);
std::optional<Recompute> parse_recompute(std::string_view s);

/// A number that is uniform, or given per stage (per rank for the memory cap).
struct PerStage {
  double uniform = 0;
  std::vector<double> values;  // empty: uniform

  static PerStage of(double v) { return PerStage{v, {}}; }
  static PerStage list(std::vector<double> v) { return PerStage{0, std::move(v)}; }
  bool is_uniform() const { return values.empty(); }
  double at(size_t i) const { return values.empty() ? uniform : values[i]; }
  double max() const;
  bool operator==(const PerStage&) const = default;
};

/// Durations in abstract time units (the simulator's unit; the runtime maps them to ms).
struct CostModel {
  PerStage F = PerStage::of(1);
  PerStage B = PerStage::of(1);  // input-gradient backward; a fused BW costs B + W
  PerStage W = PerStage::of(1);  // weight-gradient backward
  double comm = 0;               // latency of a dependency between two ranks
  std::optional<PerStage> FB;    // overlapped F&B unit, indexed by the forward's stage
  std::optional<PerStage> R;     // recomputing a checkpointed forward; F's cost when not given
  /// Fixed time every action pays on its rank on top of its work (a launch, a synchronisation),
  /// and every message an action sends or receives across ranks (posting it, its header): fine
  /// interleaving makes more, smaller actions and more messages (docs/design.md section 3, ir::overhead_of).
  double action_overhead = 0;
  double message_overhead = 0;
  bool has_overheads() const { return action_overhead != 0 || message_overhead != 0; }
  bool operator==(const CostModel&) const = default;
};

/// Activation-memory deltas per action; a fused BW frees what its F added (-F).
struct MemoryModel {
  PerStage F = PerStage::of(1);
  PerStage B = PerStage::of(-0.5);
  PerStage W = PerStage::of(-0.5);
  std::optional<PerStage> cap;  // per rank when not uniform; none = unlimited
  /// `static`: what a stage holds for the whole step (weights, gradients, optimizer state),
  /// counted against the cap on every rank that holds the stage (once per direction placing it).
  PerStage static_memory = PerStage::of(0);
  /// What a checkpointed F keeps until its R (the stage's input), 0..F; needed with recompute.
  std::optional<PerStage> input;
  bool operator==(const MemoryModel&) const = default;
};

struct Problem {
  int32_t ranks = 1;
  int32_t stages_per_rank = 1;
  int32_t microbatches = 1;
  /// The number of pipelines over the same ranks (docs/design.md section 3): 1 (`single`), 2
  /// (`bidirectional`, as Chimera and DualPipe) or more; each holds its own replica of the stages.
  int32_t directions = 1;
  /// The microbatches of each direction, as stated (`directions = [6, 2]`): one count per
  /// direction, summing to `microbatches`; empty for the even split (m/k each).
  std::vector<int32_t> direction_microbatches;
  PlacementKind placement = PlacementKind::Looped;
  /// Custom placement only: one stage -> rank list per direction.
  std::vector<std::vector<int32_t>> stage_to_rank;
  BackwardMode backward = BackwardMode::Split;
  CostModel cost;
  MemoryModel memory;
  Objective objective = Objective::Makespan;
  Recompute recompute = Recompute::Off;
  /// The units every cost and every memory value is expressed in (`ms`, `GiB`; support/units.h),
  /// or empty when the problem was stated in plain numbers.
  std::string time_unit;
  std::string memory_unit;

  bool operator==(const Problem&) const = default;

  int32_t num_stages() const { return ranks * stages_per_rank; }
  int32_t num_directions() const { return directions; }
  /// Direction d takes microbatches first_microbatch(d)..first_microbatch(d+1)-1: m/k each
  /// (k = directions) unless `direction_microbatches` states the counts; 0 with one direction.
  int32_t direction_of(MbId mb) const;
  /// The first microbatch of `direction`: direction * m/k, or the stated counts' prefix sum.
  int32_t first_microbatch(int32_t direction) const;
  /// The number of microbatches of `direction`.
  int32_t microbatches_of(int32_t direction) const;
  /// The rank that direction `dir` maps base rank `r` to (the placement's rank for direction 0):
  /// the directions come in pairs, the second of a pair mirrored (rank pp-1-r), pair j rotated by
  /// j*pp/ceil(k/2) ranks; with two directions, direction 1 mirrors direction 0 (Chimera).
  int32_t direction_rank(int32_t dir, int32_t r) const;
  /// The inverse: the base rank that direction `dir` maps to `rank`.
  int32_t base_rank(int32_t dir, int32_t rank) const;
  /// The rank that runs `stage` for microbatches of `direction` (docs/design.md section 3, placements).
  RankId rank_of(int32_t direction, StageId stage) const;
  RankId rank_of(MbId mb, StageId stage) const { return rank_of(direction_of(mb), stage); }
  /// The activation memory a rank may hold: its cap less its static memory, or nullopt when
  /// unlimited. Every schedule-level memory check (verify, simulate's peaks, the solver, the
  /// families, the lowering) counts activations from 0 against this.
  std::optional<double> cap_of(RankId rank) const;
  /// The cap as stated (the device's memory), or nullopt when unlimited.
  std::optional<double> stated_cap_of(RankId rank) const;
  /// The static memory a rank holds: `memory.static` of every stage placed on it, per direction.
  double static_of(RankId rank) const;
  bool has_static_memory() const;
  /// The first rank whose static memory is above its stated cap (no schedule fits it, whatever
  /// its activations), or nullopt when every rank's fits or there is no cap.
  std::optional<RankId> static_over_cap() const;
};

/// One semantic error in a problem, located by the field it concerns (Field::StagesPerRank,
/// Field::MemoryCap, ...) so that each reader can point at its own source location.
struct ProblemError {
  Field field;
  DiagKind kind;
  std::string message;
};

/// `base` (one stage per rank) with its model cut `v` times finer: stage s of the result is the
/// v-th part of base stage s / v in model order, so every per-stage cost (F, B, W, FB) and memory
/// value (deltas, static) is divided by v, while what does not depend on the cut stays: comm, the
/// action and message overheads, the cap. `stages_per_rank = auto` solves these for v = 1, 2, 4.
Problem with_stages_per_rank(const Problem& base, int32_t v);

/// Checks ranges and consistency (e.g. `vshape` needs 2 stages per rank, k directions need a
/// microbatch count divisible by k, per-stage lists have one value per stage). Empty when valid.
std::vector<ProblemError> validate(const Problem& problem);

/// Upper limits that keep every phase's memory bounded on hostile input.
inline constexpr int32_t kMaxRanks = 1024;
inline constexpr int32_t kMaxStagesPerRank = 64;
inline constexpr int32_t kMaxDirections = 64;
inline constexpr int32_t kMaxMicrobatches = 65536;
inline constexpr int64_t kMaxActions = 4'000'000;
/// Largest magnitude of a cost or memory value (bytes and nanoseconds of real models fit).
inline constexpr double kMaxMagnitude = 1e15;
/// Largest fixed-point sum the simulator, verifier and solver form: every start and end (the sum
/// of all durations and comm lags), and every rank's memory prefix sums. Three of them add up
/// without overflowing int64; validate() refuses problems whose sums could exceed it.
inline constexpr int64_t kMaxFixedSum = int64_t{1} << 60;

}  // namespace schedc::ir
