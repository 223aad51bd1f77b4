#pragma once
// ir::Schedule: the ordered actions of every rank, plus overlapped F&B units; and the dependency
// relation of docs/design.md section 3 evaluated against a schedule.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <llvm/ADT/SmallVector.h>

#include "ir/action.h"
#include "ir/problem.h"
#include "ir/provenance.h"

namespace schedc::ir {

struct Schedule {
  Problem problem;
  /// ranks[r] is rank r's order.
  std::vector<std::vector<Action>> ranks;
  /// Per rank, the sorted first indices i of overlapped F&B units (i, i+1); may be empty.
  std::vector<std::vector<int32_t>> overlap;
  /// Where the schedule came from; none for a schedule built in memory (tests, the solver's
  /// candidates) and for a document without one.
  std::optional<Provenance> provenance;
  /// The plan's partition when the solve chose it (`partition = auto`): the model's layers each
  /// stage runs (schedule JSON version 6, `plan`); empty otherwise.
  std::vector<int32_t> layers_per_stage;
  /// With a plan: stage 0 also runs the model's embedding, the last stage its output head.
  bool embedding = false;
  bool head = false;

  bool has_overlap() const;
  /// True when position `i` of `rank` starts an overlapped unit.
  bool overlap_starts_at(size_t rank, int32_t i) const;
  size_t num_actions() const;
};

/// Where each action of a schedule is (the first occurrence when an action is duplicated).
class ScheduleIndex {
 public:
  struct Pos {
    int32_t rank = -1;
    int32_t index = -1;
    bool found() const { return rank >= 0; }
  };

  explicit ScheduleIndex(const Schedule& s);
  /// Position of an in-range action.
  Pos find(Action a) const { return pos_[action_id(*problem_, a).index()]; }
  bool contains(Action a) const { return find(a).found(); }
  /// The action that produces the input gradient of (mb, stage) in this schedule: B when present,
  /// else BW; when neither is present, the kind the backward mode implies.
  Action backward_of(MbId mb, StageId stage) const;
  /// True when the schedule recomputes (mb, stage): its F is checkpointed (ir::memory_delta).
  bool checkpointed(MbId mb, StageId stage) const { return contains(Action{ActionKind::R, mb, stage}); }

 private:
  const Problem* problem_;
  std::vector<Pos> pos_;
};

/// The actions `a` waits for (docs/design.md section 3), the reference rule of ir::simulate and ir::verify, kept
/// apart from ir::DepGraph's: F after F(s-1); B/BW after F(s), the backward of s+1 and R(s) when the
/// schedule has it; W after its B; R after F(s).
llvm::SmallVector<Action, 3> dependencies(const Problem& p, Action a, const ScheduleIndex& index);

/// Latency added to the dependency `from` -> `to`: `comm` when their ranks differ, else 0.
double dependency_lag(const Problem& p, Action from, Action to);

/// The finest tick: 1 / 10^kMaxScaleExponent. validate() refuses values no tick up to it holds.
inline constexpr int kMaxScaleExponent = 15;
inline constexpr int64_t kMaxScale = 1'000'000'000'000'000;
/// Fixed-point scale (the smallest power of ten, at most kMaxScale) at which every given value is
/// an integer (up to the precision of a double: a few units in the last place), so that the
/// simulator and solver compute exactly for decimal inputs; nullopt when no such scale exists.
std::optional<int64_t> exact_scale_of(const std::vector<double>& values);
/// exact_scale_of, or kMaxScale where it has none (validated problems always have one).
int64_t exact_scale(const std::vector<double>& values);
/// Every time value of the problem (F, B, W, FB, R, comm, overheads), and every memory value.
std::vector<double> time_values(const Problem& p);
std::vector<double> memory_values(const Problem& p);
/// Scale for every cost of the problem (F, B, W, FB, comm).
int64_t time_scale(const Problem& p);
/// Scale for every memory value of the problem (deltas and caps).
int64_t memory_scale(const Problem& p);
/// `value` in units of 1/scale, rounded to the nearest integer.
int64_t to_fixed(double value, int64_t scale);

}  // namespace schedc::ir
