#include "backends/cuda/device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace schedrt::cuda {
namespace {

constexpr size_t kMinChunk = size_t{64} << 20;
constexpr size_t kAlign = 256;
// cuBLAS's recommended workspace on Hopper.
constexpr size_t kBlasWorkspace = size_t{32} << 20;

}  // namespace

DevicePool::~DevicePool() {
  for (Chunk& c : chunks_) cudaFree(c.base);
}

void* DevicePool::allocate(size_t bytes) {
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  if (bytes == 0) bytes = kAlign;
  for (Chunk& c : chunks_)
    if (c.size - c.used >= bytes) {
      void* p = c.base + c.used;
      c.used += bytes;
      return p;
    }
  Chunk c;
  c.size = std::max(bytes, kMinChunk);
  void* base = nullptr;
  cudaError_t e = cudaMalloc(&base, c.size);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls still work
    throw Error("cudaMalloc of " + std::to_string(c.size >> 20) + " MiB failed (" + cudaGetErrorString(e) +
                "; this rank already holds " + std::to_string(reserved() >> 20) + " MiB)");
  }
  c.base = static_cast<std::byte*>(base);
  c.used = bytes;
  chunks_.push_back(c);
  return c.base;
}

size_t DevicePool::reserved() const {
  size_t n = 0;
  for (const Chunk& c : chunks_) n += c.size;
  return n;
}

EventPool::~EventPool() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::next() {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDefault), "cudaEventCreate");
    events_.push_back(e);
  }
  return events_[used_++];
}

HeaderPool::~HeaderPool() {
  for (MessageHeader* c : chunks_) cudaFreeHost(c);
}

MessageHeader* HeaderPool::next() {
  if (used_ == chunks_.size() * kPerChunk) {
    void* p = nullptr;
    check(cudaMallocHost(&p, kPerChunk * sizeof(MessageHeader)), "cudaMallocHost (message headers)");
    chunks_.push_back(static_cast<MessageHeader*>(p));
  }
  MessageHeader* h = chunks_[used_ / kPerChunk] + used_ % kPerChunk;
  ++used_;
  return h;
}

DeviceRank::DeviceRank(int dev) : device(dev) {
  check(cudaSetDevice(dev), "cudaSetDevice");
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  check(cudaStreamCreateWithPriority(&compute, cudaStreamNonBlocking, least), "cudaStreamCreate (compute)");
  // Transfers first when both streams have work ready: a late message stalls the next rank.
  check(cudaStreamCreateWithPriority(&comm, cudaStreamNonBlocking, greatest), "cudaStreamCreate (comm)");
}

DeviceRank::~DeviceRank() {
  cudaSetDevice(device);
  if (compute) cudaStreamSynchronize(compute);
  if (comm) cudaStreamSynchronize(comm);
  if (blas_) cublas().cublasDestroy(blas_);
  if (compute) cudaStreamDestroy(compute);
  if (comm) cudaStreamDestroy(comm);
}

cublasHandle_t DeviceRank::blas() {
  if (blas_) return blas_;
  const Libs& x = cublas();
  check(x.cublasCreate(&blas_), "cublasCreate");
  check(x.cublasSetStream(blas_, compute), "cublasSetStream");
  check(x.cublasSetWorkspace(blas_, pool.allocate(kBlasWorkspace), kBlasWorkspace), "cublasSetWorkspace");
  // No TF32 behind our back: fp32 GEMMs stay fp32 (the --check tolerance depends on it).
  check(x.cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  return blas_;
}

void await_event(cudaEvent_t event, double timeout_s, const std::function<bool()>& stopped,
                 const std::function<std::string()>& what, const std::function<void()>& poll_extra) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (int spins = 0;; ++spins) {
    cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) check(e, "waiting for the device");
    if (poll_extra) poll_extra();
    if (stopped && stopped()) throw Aborted("stopped by another rank");
    if (Clock::now() > deadline) throw Error(what());
    if (spins < 200) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(spins < 2000 ? 20 : 200));
  }
}

std::string describe_device(int device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return "device " + std::to_string(device);
  char buf[384];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB)", p.name, p.major, p.minor, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace schedrt::cuda
