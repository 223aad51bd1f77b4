#pragma once
// The executor context's state, one per rank (behind schedrt::Context, which generated code
// calls). It owns the rank's stages (one per (direction, stage) it holds), the activation and
// gradient buffers of every microbatch, the posted groups, and the measured timeline; it moves
// data between local stages itself and through the Backend between ranks. Runners, backends and
// tests use it directly.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "schedrt/backend.h"
#include "schedrt/program.h"
#include "schedrt/run.h"
#include "schedrt/stage.h"
#include "schedrt/types.h"

namespace schedrt {

/// What a rank is doing, packed into 64 bits for Backend::publish_status.
struct OpStatus {
  OpCode code = OpCode::WaitAll;
  Action action;
  int32_t group = -1;

  uint64_t pack() const;
  static OpStatus unpack(uint64_t v);
  /// "running `F3.s1`", "waiting in `wait g5`", "posting g2", "in `wait all`".
  std::string describe() const;
};

/// One op's measured interval, in nanoseconds from the step's start.
struct OpRecord {
  OpCode code = OpCode::Forward;
  Action a;
  Action b;
  int32_t group = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t blocked_ns = 0;  // waits: time spent blocked in the backend
};

class ContextImpl {
 public:
  /// `stages` holds one entry per (direction, stage) pair, indexed direction * S + stage; entries
  /// this rank does not run are null.
  ContextImpl(const ProgramInfo& info, Backend& backend, std::vector<std::unique_ptr<Stage>> stages,
              const RunOptions& options);
  ~ContextImpl();
  ContextImpl(const ContextImpl&) = delete;
  ContextImpl& operator=(const ContextImpl&) = delete;

  // --- the calls generated code makes (through Context) ---
  void forward(int32_t mb, int32_t stage);
  void backward_input(int32_t mb, int32_t stage);
  void backward_weight(int32_t mb, int32_t stage);
  void recompute(int32_t mb, int32_t stage);
  void backward(int32_t mb, int32_t stage);
  /// An overlapped F&B unit: forward `f` and backward `b` (B or BW) as one unit.
  void overlapped(Action f, Action b);
  /// Posts rank-local group `group`: its sends and receives start, and this returns at once.
  void post(int32_t group, std::span<const Transfer> transfers);
  /// Waits until the received outputs of `needs` (producers of messages in `group`) are here.
  void wait(int32_t group, std::span<const Action> needs);
  /// Waits for every transfer still in flight; the last call of a rank's program.
  void wait_all();

  // --- the step around the program (used by the runner) ---
  /// Clears the step's state; `t0` is the step's common start.
  void begin_step(std::chrono::steady_clock::time_point t0);
  /// After the program: sums microbatch gradients in microbatch order, then the partial gradients
  /// of a stage's replicas (one per direction) in direction order, exchanged between the ranks
  /// that hold them (two or more directions).
  void finish_step();

  int32_t rank() const { return rank_; }
  Backend& backend() { return backend_; }
  const std::vector<OpRecord>& records() const { return records_; }
  /// Loss of each microbatch whose last stage runs here: (mb, loss).
  std::vector<std::pair<int32_t, double>> losses() const;
  /// The final gradient of each stage whose direction-0 replica runs here: (stage, bytes).
  const std::vector<std::pair<int32_t, std::vector<std::byte>>>& gradients() const { return final_grads_; }
  Stage* stage(int32_t direction, int32_t stage) const;

 private:
  struct Group;

  std::byte* slot(bool gradient, int32_t mb, int32_t stage) const;
  std::byte* output_slot(Action producer) const;
  Stage& stage_of(Action a) const;
  /// A backward op (`Backward` runs BW, `BackwardInput` runs B) with its prologue and record.
  void run_backward(OpCode code, Action a);
  int64_t now_ns() const;
  /// Every op's prologue: publishes what the rank is doing, tells the backend the op begins, and
  /// returns its start time.
  int64_t begin_op(OpCode code, Action a, int32_t group);
  /// begin_op for a compute op (F, B, W, BW, overlapped unit, named by `a`), then the injected
  /// fault (`--fault throw=RANK`).
  int64_t begin_compute(OpCode code, Action a);
  void record(OpCode code, Action a, Action b, int32_t group, int64_t start, int64_t blocked = 0);

  const ProgramInfo& info_;
  Backend& backend_;
  RunOptions options_;
  int32_t rank_;
  std::vector<std::unique_ptr<Stage>> stages_;
  size_t boundary_bytes_ = 0;
  std::vector<std::byte*> slots_;  // [(gradient * m + mb) * S + stage], null when not needed here
  std::vector<void*> allocations_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<OpRecord> records_;
  std::vector<std::pair<int32_t, std::vector<std::byte>>> final_grads_;
  std::chrono::steady_clock::time_point t0_;
  int32_t fault_drop_send_ = -1;  // testing: drop this rank's first send
  bool fault_throw_ = false;      // testing: throw at this rank's first compute
};

}  // namespace schedrt
