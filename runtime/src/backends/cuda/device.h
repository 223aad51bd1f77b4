#pragma once
// One rank's device resources: its streams, a memory pool, events and pinned headers, reused step
// after step (internal to the cuda backend).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_api.h"
#include "schedrt/backend.h"

namespace schedrt::cuda {

/// Device memory from cudaMalloc (never managed memory), in chunks of at least 64 MiB handed out
/// by a bump pointer. Everything is allocated while the stages and the Context are built, before
/// the first step; nothing is allocated or freed inside a step. All of it is freed with the pool.
class DevicePool {
 public:
  DevicePool() = default;
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  ~DevicePool();

  /// 256-byte aligned (cuBLAS and vectorised kernels want it).
  void* allocate(size_t bytes);
  size_t reserved() const;

 private:
  struct Chunk {
    std::byte* base = nullptr;
    size_t size = 0;
    size_t used = 0;
  };
  std::vector<Chunk> chunks_;
};

/// Events with timing, handed out in order; reset() reuses them from the first. A step's events
/// are reset only at the next step's start, once every rank has issued its waits on them.
class EventPool {
 public:
  EventPool() = default;
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  ~EventPool();

  cudaEvent_t next();
  void reset() { used_ = 0; }

 private:
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

/// Pinned host memory for message headers: a send's header is copied from here to the device,
/// a received header back here to be checked.
class HeaderPool {
 public:
  HeaderPool() = default;
  HeaderPool(const HeaderPool&) = delete;
  HeaderPool& operator=(const HeaderPool&) = delete;
  ~HeaderPool();

  MessageHeader* next();
  void reset() { used_ = 0; }

 private:
  static constexpr size_t kPerChunk = 256;
  std::vector<MessageHeader*> chunks_;
  size_t used_ = 0;
};

/// What a rank owns on its device. The compute stream runs the stages' kernels in program order;
/// the communication stream (higher priority) runs transfers, ordered against compute by events.
struct DeviceRank {
  explicit DeviceRank(int device);
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;
  ~DeviceRank();

  /// cuBLAS on the compute stream, with a workspace from the pool (created on first use).
  cublasHandle_t blas();

  int device = 0;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  DevicePool pool;
  EventPool events;
  HeaderPool headers;

 private:
  cublasHandle_t blas_ = nullptr;
};

/// Polls `event` until it has completed, backing off from spinning to short sleeps. Throws
/// Aborted when `stopped()` turns true, Error(what()) after `timeout_s` seconds, and Error for a
/// CUDA failure. `poll_extra`, when given, runs on every round (NCCL's asynchronous errors).
void await_event(cudaEvent_t event, double timeout_s, const std::function<bool()>& stopped,
                 const std::function<std::string()>& what, const std::function<void()>& poll_extra = {});

/// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)".
std::string describe_device(int device);

}  // namespace schedrt::cuda
