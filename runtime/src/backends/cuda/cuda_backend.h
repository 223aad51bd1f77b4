#pragma once
// The cuda backend (internal): one class per transport on a common base.
//
// Per rank: a compute stream, on which the stages' kernels run in program order, and a
// communication stream. A post records a "ready" event on the compute stream (the data the sends
// carry has been produced once it completes); the transfers wait for it on the communication
// stream, and a "done" event after them is what a `wait` makes the compute stream wait for. So
// waits are stream dependencies, not host blocks, and transfers overlap the compute between a
// post and its wait. The host blocks only at wait_all (the end of the program, which must hand
// back gradients) and, in local mode, at a wait whose peer has not posted yet.
//
//   LocalBackend: every rank in this process (one GPU or a few); a transfer is a device-to-device
//     copy, enqueued by whichever side posts second, once both have posted.
//   NcclBackend: one rank per GPU, one NCCL group (ncclGroupStart/End) per posted group, issued
//     in posting order: exactly the lowered program's groups, so its deadlock-freedom proof holds.

#include <memory>
#include <optional>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/in_process.h"
#include "schedrt/context_impl.h"

namespace schedrt::cuda {

class CudaBackend : public Backend {
 public:
  CudaBackend(int32_t rank, int32_t size, BackendOptions options, int device);

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  int64_t blocked_ns() const override { return blocked_ns_; }

  void* allocate(size_t bytes) override { return dev_.pool.allocate(bytes); }
  void deallocate(void*) override {}  // the pool frees everything when the rank ends
  void zero(void* p, size_t bytes) override;
  StageEnv stage_env() override;
  void op_begin(OpCode code) override;
  void op_end(OpCode code) override;
  void device_intervals(std::vector<OpRecord>& records) override;
  std::optional<double> device_check_tolerance(const StageConfig& config) const override;
  void synchronize() override;

  DeviceRank& device() { return dev_; }

 protected:
  /// True once another rank failed (the waits then throw Aborted).
  virtual bool stopped() const = 0;
  /// Polled while the host waits for the device (NCCL's asynchronous errors).
  virtual void poll_errors() {}
  /// A step starts: the pools are reused and the time origin is recorded on the compute stream.
  /// Called by barrier() once every rank has arrived.
  void mark_step_start();
  /// Waits (watchdog) until both streams have run everything enqueued so far.
  void drain(const char* what);
  /// Waits (watchdog) for `event`; `what` describes the wait for the timeout's message.
  void await(cudaEvent_t event, const std::function<std::string()>& what);

  struct Interval {
    cudaEvent_t start = nullptr, end = nullptr;
    bool compute = true;  // false: on the communication stream, or a wait (neither is compute)
  };
  /// Set by post(): the interval of the transfers it enqueued (events recorded when they are).
  Interval post_interval_;
  /// Set by wait_all(): the event after the last work of the step on the compute stream.
  cudaEvent_t final_event_ = nullptr;

  DeviceRank dev_;
  int32_t rank_, size_;
  BackendOptions options_;

 private:
  std::vector<Interval> intervals_;  // one per op of the program, in order
  cudaEvent_t op_start_ = nullptr;
  cudaEvent_t t0_ = nullptr;
  int64_t blocked_ns_ = 0;
};

/// Local mode: rank `rank` of `group`, on `device`.
std::unique_ptr<CudaBackend> make_local_backend(InProcess& group, int32_t rank, int device);
/// NCCL mode: `comm` is rank `rank`'s initialised communicator; `group` is the process's ranks
/// when they all live here (nullptr: one process per rank, host collectives through NCCL too, and
/// `abort_process` ends the process after a failure).
std::unique_ptr<CudaBackend> make_nccl_backend(InProcess* group, ncclComm_t comm, int32_t rank, int32_t size,
                                               BackendOptions options, int device,
                                               std::function<void(const std::string&)> abort_process);

}  // namespace schedrt::cuda
