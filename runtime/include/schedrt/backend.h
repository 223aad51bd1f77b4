#pragma once
// The backend interface: how ranks move messages and meet at the end of a step. `threads` (one
// thread per rank, in one process) and `mpi` (one process per rank) implement it on the CPU; a
// CUDA + NCCL backend implements it with a communication stream per rank, one ncclGroupStart /
// ncclGroupEnd per posted group, and events (a `wait` may then be a stream dependency rather than
// a host block, as long as the compute that follows observes the data).
//
// Contract, relied on by the deadlock-freedom proof (schedc's codegen/verify_program.h): a rank
// posts groups in program order; the transfers of one group progress concurrently; messages of
// one channel (ordered pair of ranks) match first-in first-out. A backend may complete transfers
// earlier than that model (buffered sends, per-transfer waits); never later.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schedrt/program.h"
#include "schedrt/stage.h"
#include "schedrt/types.h"

namespace schedrt {

struct OpRecord;  // context_impl.h

/// Written in front of every message's payload and checked by the receiver, so that a message
/// that is not the expected one is an error, never silently wrong data.
struct MessageHeader {
  int32_t magic = 0x53524d48;  // "HMRS"
  int32_t kind = 0;
  int32_t mb = 0;
  int32_t stage = 0;
  int32_t seq = 0;
  int32_t src = 0;
  int64_t bytes = 0;
};
static_assert(sizeof(MessageHeader) == 32);
inline constexpr size_t kHeaderBytes = sizeof(MessageHeader);

/// One transfer of a posted group. `buffer` has kHeaderBytes reserved for the header, then `bytes`
/// of payload (in the backend's memory: device memory on a GPU backend). For a send, `header` is
/// what the receiver must see; the backend puts it on the wire its own way (the CPU backends copy
/// it in front of the payload) and checks it on receipt.
struct PostedTransfer {
  Transfer transfer;
  MessageHeader header;
  std::byte* buffer = nullptr;
  size_t bytes = 0;
};

struct BackendOptions {
  /// A blocking call that waits longer than this reports what it waits for and fails.
  double timeout_s = 60;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;

  /// Starts the transfers of rank-local group `group` and returns without waiting. `transfers`
  /// stays valid until the group completes.
  virtual void post(int32_t group, std::span<const PostedTransfer> transfers) = 0;
  /// Returns once the listed transfers of `group` (indices into its transfers) are complete: a
  /// received payload is in its buffer, with its header checked. May wait for the whole group.
  /// Throws Error on a watchdog timeout or a wrong message, Aborted when another rank failed.
  virtual void wait(int32_t group, std::span<const int32_t> which) = 0;
  /// Returns once every posted transfer is complete (the end of a rank's program).
  virtual void wait_all() = 0;

  /// Blocks until every rank arrived.
  virtual void barrier() = 0;
  /// Sends `send_bytes` to `peer` and receives `recv_bytes` from it (replicas' gradients; either
  /// may be 0, the peer calling with the two swapped), blocking.
  virtual void exchange(int32_t peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) = 0;
  /// Every rank's blob, at rank 0 (in rank order); other ranks get an empty vector.
  virtual std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine) = 0;
  /// Stops every rank: their blocking calls throw Aborted. The first message wins.
  virtual void abort(const std::string& message) = 0;

  /// Memory for message buffers and tensors (host memory on the CPU backends).
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p) = 0;

  /// What this rank is doing now (a packed OpStatus, see context.h), for other ranks' watchdog
  /// reports where the backend can see them (threads); a no-op elsewhere.
  virtual void publish_status(uint64_t /*status*/) {}
  /// Nanoseconds this rank has spent blocked in this backend so far (for the overhead figures).
  virtual int64_t blocked_ns() const { return 0; }

  // --- For device backends (cuda); the CPU backends keep these defaults. ---

  /// Sets `bytes` of memory from allocate() to zero.
  virtual void zero(void* p, size_t bytes) { std::memset(p, 0, bytes); }
  /// What this backend gives the stages it makes (StageEnv): where their tensors live, and on a
  /// GPU the rank's device and compute stream. The CPU backends: host memory.
  virtual StageEnv stage_env() {
    StageEnv env;
    env.backend = this;
    return env;
  }
  /// The stage object for virtual stage `stage`: the registered implementation of config.stage
  /// for stage_env()'s memory (schedrt::make_stage). Tests override it to wrap the stages.
  virtual std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage) {
    return schedrt::make_stage(config, stage, stage_env());
  }
  /// Bracket every op of the rank's program, in program order, so that a device backend can time
  /// the op on its streams.
  virtual void op_begin(OpCode /*code*/) {}
  virtual void op_end(OpCode /*code*/) {}
  /// Called after wait_all with the program's ops (one per op_begin/op_end pair): a device backend
  /// replaces their host-clock intervals with its streams' (ns from the step's start).
  virtual void device_intervals(std::vector<OpRecord>& /*records*/) {}
  /// --check on a device backend whose stages return fp64 gradients computed in their own
  /// precision: the relative tolerance against the CPU reference in fp64. nullopt (CPU backends):
  /// the reference runs in the stages' dtype, with tolerance 1e-12 (fp64) or 1e-5 (fp32).
  virtual std::optional<double> device_check_tolerance(const StageConfig& /*config*/) const { return std::nullopt; }
  /// Blocks until the work this rank enqueued on its device has finished (for profiling).
  virtual void synchronize() {}
};

}  // namespace schedrt
