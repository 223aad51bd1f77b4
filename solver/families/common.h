#pragma once
// Internal to solver/families: what every generator shares. The context a generator reads its
// problem and parameters from, the per-rank order builder, stage/rank helpers, and a greedy list
// scheduler for the families whose order depends on timing (zb-h2, v-half, v-min, chimera).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/action.h"
#include "ir/dep_graph.h"
#include "ir/params.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "support/deadline.h"
#include "support/diagnostics.h"

namespace schedc::solver::fam {

/// What a generator reads, and where it reports a broken constraint or a bad parameter.
struct FamilyContext {
  std::string_view name;
  const ir::Problem& problem;
  const ir::Params& params;
  SourceLoc loc;
  Diagnostics& diags;
  /// The solver's time limit: a generator that would run past it gives up (ListScheduler).
  const Deadline* deadline = nullptr;

  /// Reports "family `NAME` needs MESSAGE" [family-constraint].
  std::nullopt_t constraint(const std::string& message) const;
  /// Reports a parameter error [family-param] at the parameter's value when it has a location.
  std::nullopt_t bad_param(const ir::Param* param, const std::string& message) const;
  /// A bug in a generator: reports it through SCHEDC_INTERNAL_ERROR (exit 3), never a wrong schedule.
  [[noreturn]] std::nullopt_t internal(const std::string& message) const;
  /// Reports every parameter not in `known`; false when there was one.
  bool only_params(std::initializer_list<std::string_view> known) const;
  /// Integer parameter `key` in [lo, hi], `fallback` when absent; nullopt after reporting.
  std::optional<int32_t> int_param(std::string_view key, int32_t fallback, int32_t lo, int32_t hi) const;
};

/// A generator: the family's schedule for `cx.problem`, or nullopt after reporting. The caller
/// checks the common constraints (direction, placement, stages per rank, backward mode) first,
/// and verifies and checks the memory cap afterwards.
using Generator = std::optional<ir::Schedule> (*)(const FamilyContext& cx);

std::optional<ir::Schedule> generate_gpipe(const FamilyContext& cx);
std::optional<ir::Schedule> generate_one_f_one_b(const FamilyContext& cx);
std::optional<ir::Schedule> generate_interleaved_1f1b(const FamilyContext& cx);
std::optional<ir::Schedule> generate_looped_bfs(const FamilyContext& cx);
std::optional<ir::Schedule> generate_zb_h1(const FamilyContext& cx);
std::optional<ir::Schedule> generate_zb_h2(const FamilyContext& cx);
std::optional<ir::Schedule> generate_interleaved_zb(const FamilyContext& cx);
std::optional<ir::Schedule> generate_zb_v(const FamilyContext& cx);
std::optional<ir::Schedule> generate_v_half(const FamilyContext& cx);
std::optional<ir::Schedule> generate_v_min(const FamilyContext& cx);
std::optional<ir::Schedule> generate_chimera(const FamilyContext& cx);
std::optional<ir::Schedule> generate_dualpipe(const FamilyContext& cx);
std::optional<ir::Schedule> generate_dualpipev(const FamilyContext& cx);

/// The stage rank `rank` runs as its `local`-th stage (0-based, in model order) for `direction`.
int32_t stage_on(const ir::Problem& p, int32_t direction, int32_t rank, int32_t local);
/// Microbatch `k` of `direction` (its microbatches are numbered from first_microbatch).
int32_t mb_of(const ir::Problem& p, int32_t direction, int32_t k);

/// Per-rank orders under construction. Backward passes go in as the generator means them; the
/// caller adapts them to the problem's backward mode afterwards (see `adapt_backward`).
class OrderBuilder {
 public:
  explicit OrderBuilder(const ir::Problem& p);
  /// Appends `a` to the order of the rank that owns it.
  void push(ir::Action a);
  /// Appends forward `f` and backward `b` (in that order) as one overlapped F&B unit.
  void push_overlap(ir::Action f, ir::Action b);
  ir::Schedule take();

 private:
  ir::Schedule s_;
};

/// One rank's two "phases" in DeepSeek's DualPipe and DualPipeV: each phase is a stage the rank
/// holds, fed with the microbatches of one direction in order. Backwards run as B with the W
/// queued (zero bubble, W passes leave the queue oldest first) or as a fused BW.
class PhaseSteps {
 public:
  PhaseSteps(const ir::Problem& p, OrderBuilder& out, int32_t rank, int32_t dir0, int32_t dir1);
  void forward(int32_t phase);
  void backward(int32_t phase, bool zero_bubble);
  /// Forward of `f_phase` and fused backward of `b_phase` as one overlapped unit.
  void overlapped(int32_t f_phase, int32_t b_phase);
  /// Runs the oldest queued W, if any.
  void weight();

 private:
  ir::Action next(ir::ActionKind kind, int32_t phase);
  const ir::Problem& p_;
  OrderBuilder& out_;
  int32_t stage_[2], dir_[2];
  int32_t f_[2] = {0, 0}, b_[2] = {0, 0};
  std::vector<ir::Action> weights_;
  size_t next_w_ = 0;
};

/// Rewrites fused backward passes for the problem's backward mode: in a `split` problem every BW
/// becomes B immediately followed by W (the same timeline); `fused` and `mixed` keep BW. A W that
/// follows a B inside an overlapped unit goes right after the unit.
void adapt_backward(ir::Schedule& s);

/// A greedy list scheduler. It simulates as-soon-as-possible execution (docs/design.md section 3, on the
/// ir::DepGraph of its streams' actions) and, whenever a rank is free, runs one of the heads of
/// that rank's streams (fixed sequences of actions) or, when weight queuing is on, the oldest W
/// whose B has run on that rank. A policy says which candidates are allowed now and which one is
/// preferred. Orders built this way replay to the same timeline under ir::simulate, and never
/// deadlock: when the policy allows nothing anywhere, the scheduler ignores it for one step (the
/// family's memory limits are soft).
class ListScheduler {
 public:
  struct Candidate {
    ir::Action action;
    int32_t stream = -1;  // -1: the weight queue
    int64_t ready = 0;    // earliest start in ticks given its inputs (not the rank's availability)
  };
  struct RankState {
    int64_t free_at = 0;                               // ticks
    int64_t memory = 0;                                // fixed-point, memory_scale units
    int32_t forwards = 0, backwards = 0, weights = 0;  // counts run so far
  };
  /// Lower keys are preferred among the candidates ready when the rank decides; nullopt: not now.
  using Policy = std::function<std::optional<int64_t>(int32_t rank, const Candidate& c, const RankState& st)>;

  /// `deadline`: run() gives up (returns false) once it has passed.
  explicit ListScheduler(const ir::Problem& p, const Deadline* deadline = nullptr);
  void add_stream(int32_t rank, std::vector<ir::Action> actions);
  /// When on, every B that runs queues its W (same microbatch and stage) on its rank.
  void queue_weights(bool on) { queue_weights_ = on; }
  /// Runs to completion; false when the streams cannot complete (a generator bug) or the deadline
  /// passed (expired() says which).
  bool run(const Policy& policy);
  ir::Schedule take();

  int64_t time_scale() const { return time_scale_; }
  int64_t memory_scale() const { return memory_scale_; }
  int64_t memory_delta(ir::Action a) const;
  int64_t duration(ir::Action a) const;
  /// Number of actions run so far (a version stamp of the scheduler's state).
  size_t runs() const { return runs_; }
  bool expired() const { return expired_; }
  /// Number of times the policy had to be overridden to make progress.
  int32_t overrides() const { return overrides_; }
  /// The next action of a rank's stream, if any (the weight queue is not a stream).
  std::optional<ir::Action> head(int32_t rank, int32_t stream) const;
  /// A lower bound on the start of an action that has not run: its scheduled inputs' ends (plus
  /// comm), and for unscheduled inputs their own bound plus duration; each pass also waits for its
  /// rank to be free. Exact once every input has run.
  int64_t earliest_start(ir::Action a) const;

 private:
  struct Choice {
    int64_t at = -1;  // decision time; -1: nothing to run
    Candidate cand;
    int32_t node = -1;  // the candidate's node in graph()
  };
  /// The dependency graph of every stream's actions (and the W each B queues), built when first
  /// needed; streams cannot be added afterwards.
  const ir::DepGraph& graph() const;
  /// When every input of node `v` has run: the latest of their ends plus lags.
  std::optional<int64_t> ready_time(int32_t v) const {
    const NodeState& n = node_[static_cast<size_t>(v)];
    return n.waiting > 0 ? std::nullopt : std::optional<int64_t>(n.ready);
  }
  Choice decide(int32_t rank, const Policy* policy) const;
  void commit(int32_t rank, const Choice& c);

  const ir::Problem& p_;
  int64_t time_scale_, memory_scale_;
  std::vector<std::vector<std::vector<ir::Action>>> streams_;  // [rank][stream]
  std::vector<std::vector<size_t>> next_;                      // [rank][stream]
  std::vector<std::vector<int32_t>> weights_;                  // [rank] pending W queue (nodes)
  std::vector<size_t> weights_next_;
  std::vector<RankState> state_;
  mutable std::optional<ir::DepGraph> graph_;
  mutable std::vector<std::vector<std::vector<int32_t>>> stream_nodes_;  // [rank][stream]: streams_ as nodes
  struct NodeState {
    int64_t end = -1;     // end tick once run
    int64_t ready = 0;    // latest end plus lag of the inputs run so far
    int32_t waiting = 0;  // inputs not run yet (a missing one never runs)
  };
  mutable std::vector<NodeState> node_;  // [node]
  mutable std::vector<int64_t> memo_;    // earliest_start's per-call memo: [node]
  mutable std::vector<uint32_t> memo_stamp_;
  mutable uint32_t stamp_ = 0;
  std::vector<std::vector<ir::Action>> orders_;
  bool queue_weights_ = false;
  int32_t overrides_ = 0;
  const Deadline* deadline_ = nullptr;
  bool expired_ = false;
  size_t runs_ = 0;
};

}  // namespace schedc::solver::fam
