#pragma once
// The controls of the fake CUDA runtime (fake_cudart.cpp) for the tests, and the hook by which the
// fake NCCL puts its work on streams. The fake device defers every stream operation and runs them
// in an order that respects only stream order and events (see fake_cudart.cpp).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

namespace fake_cuda {

/// How the fake device picks the next stream operation to run.
enum class Order {
  Eager,   // every operation as soon as it is ready: an infinitely fast device (timing tests)
  Random,  // lagging behind the host, a random ready one at a time, from a seeded generator
};

struct Config {
  Order order = Order::Random;
  uint64_t seed = 1;
  int devices = 1;  // what cudaGetDeviceCount reports
};

/// Sets the fake's mode and resets its random generator, statistics and fault (live streams,
/// events and memory are kept). The defaults are in force until the first call.
void configure(const Config& config);

/// What the device has done since configure().
struct Stats {
  int64_t tasks = 0;  // stream operations run
  /// Operations run while one enqueued earlier on another stream was ready too: interleavings
  /// that an in-order device would never show.
  int64_t reorderings = 0;
  int64_t dropped_waits = 0;  // see drop_stream_wait
};
Stats stats();

/// A "kernel" on `stream`: `body` runs when the stream reaches it, on whichever host thread makes
/// the device progress, never at the same time as other stream work.
void launch(cudaStream_t stream, std::function<void()> body);

/// Fault injection: the `nth` (from 0) cudaStreamWaitEvent issued from now on that would make
/// `waiter` wait (nullptr: any stream) for an event last recorded on `recorder` (nullptr: any)
/// does nothing, as if the backend had not issued it. Stats::dropped_waits says whether it did.
void drop_stream_wait(cudaStream_t waiter, cudaStream_t recorder, int nth);

/// For the fake NCCL: an operation on `stream` that runs once the stream reaches it and `ready()`
/// holds. Both are called with the device's lock held: they must not call the fake CUDA runtime,
/// nor take a lock that is held elsewhere while calling it.
void enqueue(cudaStream_t stream, std::string what, std::function<bool()> ready, std::function<void()> run);
/// Wakes host threads blocked in the fake: what some `ready()` reads was changed by the host.
void notify();

}  // namespace fake_cuda
