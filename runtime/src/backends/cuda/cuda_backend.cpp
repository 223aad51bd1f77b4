#include "backends/cuda/cuda_backend.h"

#include <cmath>

#include "backends/backends.h"
#include "backends/cuda/tolerance.h"
#include "stages/cuda/mlp_cuda.h"
#include "stages/stages_internal.h"

namespace schedrt {

// The mlp stage's device implementation, registered under the same name as the CPU one. The
// synthetic and noop stages touch no tensors (StageMemory::None): the CPU ones hold the rank's
// host thread, and the events around them time that on the idle compute stream.
void register_cuda_stages(std::vector<StageInfo>& out) {
  out.push_back({.name = "mlp",
                 .description = "the mlp stage on cuBLAS; fp64, fp32, bf16",
                 .has_reference = true,
                 .memory = StageMemory::Device,
                 .make = [](const StageConfig& c, int32_t s, const StageEnv& env) -> std::unique_ptr<Stage> {
                   auto* backend = dynamic_cast<cuda::CudaBackend*>(env.backend);
                   if (!backend) throw Error("the mlp stage's device implementation runs only on the cuda backend");
                   return cuda::make_mlp_cuda_stage(c, s, backend->device());
                 }});
}

}  // namespace schedrt

namespace schedrt::cuda {

CudaBackend::CudaBackend(int32_t rank, int32_t size, BackendOptions options, int device)
    : dev_(device), rank_(rank), size_(size), options_(options) {}

void CudaBackend::zero(void* p, size_t bytes) {
  // At once, not on a stream: a receive on the communication stream may write the memory before
  // the compute stream would have cleared it.
  check(cudaMemsetAsync(p, 0, bytes, dev_.compute), "cudaMemset");
  check(cudaStreamSynchronize(dev_.compute), "cudaMemset");
}

StageEnv CudaBackend::stage_env() {
  StageEnv env;
  env.memory = StageMemory::Device;
  env.device = dev_.device;
  env.stream = dev_.compute;
  env.backend = this;
  return env;
}

std::optional<double> CudaBackend::device_check_tolerance(const StageConfig& config) const {
  return check_tolerance(config.dtype);
}

void CudaBackend::op_begin(OpCode code) {
  if (code == OpCode::Post) return;  // post() records its own interval on the communication stream
  op_start_ = dev_.events.next();
  check(cudaEventRecord(op_start_, dev_.compute), "cudaEventRecord");
}

void CudaBackend::op_end(OpCode code) {
  if (code == OpCode::Post) {
    post_interval_.compute = false;
    intervals_.push_back(post_interval_);
    return;
  }
  Interval iv{op_start_, nullptr, code != OpCode::Wait && code != OpCode::WaitAll};
  if (code == OpCode::WaitAll && final_event_) {
    iv.end = final_event_;
  } else {
    iv.end = dev_.events.next();
    check(cudaEventRecord(iv.end, dev_.compute), "cudaEventRecord");
  }
  intervals_.push_back(iv);
}

void CudaBackend::device_intervals(std::vector<OpRecord>& records) {
  if (records.size() != intervals_.size())
    throw Error("rank " + std::to_string(rank_) + ": the program ran " + std::to_string(records.size()) + " ops but " +
                std::to_string(intervals_.size()) + " were timed on the device (a bug in schedrt)");
  if (!t0_) return;  // no barrier before the program (a test calling the Context directly)
  auto ns = [&](cudaEvent_t e) {
    float ms = 0;
    check(cudaEventSynchronize(e), "timing an op");
    check(cudaEventElapsedTime(&ms, t0_, e), "timing an op");
    return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const Interval& iv = intervals_[i];
    if (!iv.start || !iv.end) continue;
    records[i].start_ns = ns(iv.start);
    records[i].end_ns = std::max(records[i].start_ns, ns(iv.end));
    records[i].blocked_ns = iv.compute ? 0 : records[i].end_ns - records[i].start_ns;
    // Transfers overlap compute and waits are the compute stream stalled: neither is busy time.
    if (!iv.compute) blocked_ns_ += records[i].blocked_ns;
  }
  intervals_.clear();
}

void CudaBackend::mark_step_start() {
  dev_.events.reset();
  dev_.headers.reset();
  intervals_.clear();
  final_event_ = nullptr;
  t0_ = dev_.events.next();
  check(cudaEventRecord(t0_, dev_.compute), "cudaEventRecord");
}

void CudaBackend::await(cudaEvent_t event, const std::function<std::string()>& what) {
  await_event(
      event, options_.timeout_s, [this] { return stopped(); }, what, [this] { poll_errors(); });
}

void CudaBackend::drain(const char* what) {
  cudaEvent_t c = dev_.events.next(), m = dev_.events.next();
  check(cudaEventRecord(c, dev_.compute), "cudaEventRecord");
  check(cudaEventRecord(m, dev_.comm), "cudaEventRecord");
  auto message = [&] {
    return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) +
           " for its device to finish " + what + " (a kernel or a transfer does not end)";
  };
  await(c, message);
  await(m, message);
}

void CudaBackend::synchronize() { drain("its work"); }

}  // namespace schedrt::cuda
