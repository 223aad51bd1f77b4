// A fake CUDA runtime for testing the cuda backend's logic on a machine without a GPU: "device"
// memory is host memory, and the device is a queue of operations per stream that it runs later,
// one at a time, in any order that respects what CUDA promises: stream order and the events a
// stream waits for (cudaStreamWaitEvent waits for the event's latest record at the time of the
// call; an event never recorded waits for nothing). In Order::Random (the default) the device
// lags behind the host, as a real one does: a call that enqueues work runs a few operations or
// none, a poll or a blocking call runs bursts, and each operation is picked at random among the
// ready heads of every stream of every rank, by stream speeds drawn from the seed (the ranks'
// communication streams, of the higher priority, all faster or all slower than the compute
// streams). So a missing event between a rank's compute and communication streams, or between two
// ranks, lets a copy read data that is not produced yet or a kernel read a message that has not
// arrived, and --check fails on the CPU: fake_backend_test.cpp drops single waits the backend
// issues and counts the seeds that catch each.
//
// What follows CUDA: a copy from pageable host memory reads it at the call (CUDA stages it); a copy
// into pageable memory returns once done; pinned (cudaMallocHost) and device memory are read and
// written when the copy runs; cudaFree and cudaFreeHost first wait for the work already enqueued on
// the allocation's device; a destroyed stream still runs what it holds; a copy whose kind does not
// match its pointers fails. Kernels are test code enqueued with fake_cuda::launch (fake_cudart.h);
// nvcc's own launches are refused. A blocking call that waits 60 s for a device that cannot move
// ends the process with the streams' state, rather than hanging a test.
//
// What it cannot test: operations running at the same time (each runs whole, so a race shows only
// as an order, never as a torn read), a missing event whose two sides are rarely pending together
// (a seed catches each such bug with some probability, not always), real kernels and cuBLAS, and
// the same interleaving again (a seed fixes the device's choices, not the host threads' timing).
// Order::Eager runs everything as soon as it is ready, in enqueue order, for tests that time host
// work with events. It defines every CUDA runtime symbol schedrt uses, so the linker never pulls
// libcudart_static.

#include "fake_cudart.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

namespace fake_cuda {
namespace {

using Clock = std::chrono::steady_clock;

// Blocking calls give up (and end the process) after this long without what they wait for, so
// that a deadlock on the fake device fails a test loudly instead of hanging it.
constexpr auto kDeadlock = std::chrono::seconds(60);
// While the host polls, the device runs about this many operations per call: p / (1 - p).
constexpr double kBurst = 0.9;

// One record of an event.
struct Mark {
  bool done = false;
  Clock::time_point at{};
  int stream = -1;  // id of the stream it was recorded on
};

struct Task {
  std::string what;
  std::function<bool()> ready;  // empty: always ready once at the head
  std::function<void()> run;
  uint64_t seq = 0;  // global enqueue order
};

struct Stream {
  int id = 0;
  int device = 0;
  std::deque<Task> tasks;
  uint64_t last_seq = 0;  // of the last task enqueued
  bool destroyed = false;
  double weight = 1;  // Order::Random: how often this stream is picked among the ready ones
};

struct Event {
  std::shared_ptr<Mark> latest;
};

struct Allocation {
  size_t bytes = 0;
  int device = 0;
  bool pinned = false;
};

enum class Memory { Device, Pinned, Pageable };

struct Drop {
  bool armed = false;
  Stream* waiter = nullptr;
  int recorder = -1;
  int left = 0;
};

thread_local int current_device = 0;

class Engine {
 public:
  ~Engine() {
    for (Stream* s : streams_) delete s;
  }

  std::mutex mu;

  void configure(const Config& c) {
    config_ = c;
    rng_.seed(c.seed);
    // How far the device falls behind the host, per seed: while the host enqueues, it runs from
    // nothing to one operation per four calls on average, so that work piles up as it does when a
    // real host runs ahead of its GPU (a missing event shows only when both sides of it are
    // pending); while the host polls or blocks, it runs bursts. (A device that keeps up with the
    // host runs nearly in enqueue order, and catches far fewer missing events.)
    eagerness_ = std::uniform_real_distribution<double>(0.0, 0.2)(rng_);
    priority_speed_ = std::exp(std::uniform_real_distribution<double>(-std::log(1e4), std::log(1e4))(rng_));
    stats_ = Stats{};
    drop_ = Drop{};
  }
  const Config& config() const { return config_; }
  Stats& stats() { return stats_; }

  Stream* create_stream(int priority) {
    auto* s = new Stream;
    s->id = next_stream_++;
    s->device = current_device;
    // Streams run at speeds up to 100 times apart, so that one runs far ahead of another; and
    // every stream of a higher priority (the ranks' communication streams) at a speed of its own,
    // up to 10^4 times that of the others or as far below it, alike on every rank.
    s->weight = std::exp(std::uniform_real_distribution<double>(0.0, std::log(100.0))(rng_));
    if (priority < 0) s->weight *= priority_speed_;
    streams_.push_back(s);
    return s;
  }

  void destroy_stream(Stream* s) {
    s->destroyed = true;
    if (s->tasks.empty()) remove(s);
  }

  uint64_t enqueue(Stream* s, std::string what, std::function<bool()> ready, std::function<void()> run) {
    s->tasks.push_back(Task{std::move(what), std::move(ready), std::move(run), ++next_seq_});
    s->last_seq = next_seq_;
    return next_seq_;
  }

  // A call into the fake: the device may move on (Eager: as far as it can). `polling`: the host
  // waits for the device, which runs a burst.
  void progress(bool polling = false) {
    bool ran = false;
    if (config_.order == Order::Eager) {
      while (run_one()) ran = true;
    } else {
      std::bernoulli_distribution more(polling ? kBurst : eagerness_);
      while (more(rng_) && run_one()) ran = true;
    }
    if (ran) cv_.notify_all();
  }

  // Runs ready operations until `done()` holds; when none is ready, waits for another host thread
  // to make one ready (a fake NCCL transfer whose peer has not posted yet).
  template <class Done> void run_until(std::unique_lock<std::mutex>& lock, Done done, const char* what) {
    auto start = Clock::now();
    while (!done()) {
      if (run_one()) {
        cv_.notify_all();
        continue;
      }
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      if (Clock::now() - start > kDeadlock) deadlock(what);
    }
  }

  // Whether `s` has run everything up to operation `seq`.
  static bool passed(const Stream* s, uint64_t seq) { return s->tasks.empty() || s->tasks.front().seq > seq; }

  void synchronize_stream(std::unique_lock<std::mutex>& lock, Stream* s, const char* what) {
    uint64_t target = s->last_seq;
    int id = s->id;
    run_until(
        lock, [&] { return !live(id) || passed(s, target); }, what);
  }

  // What `device` has been given so far has run (cudaFree's implicit synchronisation).
  void synchronize_device(std::unique_lock<std::mutex>& lock, int device, const char* what) {
    std::vector<std::pair<int, uint64_t>> targets;
    for (Stream* s : streams_)
      if (s->device == device) targets.emplace_back(s->id, s->last_seq);
    run_until(
        lock,
        [&] {
          for (auto [id, seq] : targets) {
            Stream* s = find(id);
            if (s && !passed(s, seq)) return false;
          }
          return true;
        },
        what);
  }

  void notify() { cv_.notify_all(); }

  // Consumes the armed fault if this wait is the one to drop.
  bool drop_wait(Stream* waiter, const Mark* mark) {
    if (!drop_.armed) return false;
    if (drop_.waiter && drop_.waiter != waiter) return false;
    if (drop_.recorder >= 0 && (!mark || mark->stream != drop_.recorder)) return false;
    if (drop_.left-- > 0) return false;
    drop_.armed = false;
    ++stats_.dropped_waits;
    return true;
  }
  void arm_drop(Stream* waiter, Stream* recorder, int nth) {
    drop_ = Drop{true, waiter, recorder ? recorder->id : -1, nth};
  }

  void add_allocation(void* p, size_t bytes, bool pinned) {
    allocations_[static_cast<const std::byte*>(p)] = Allocation{bytes, current_device, pinned};
  }
  const Allocation* allocation(const void* p) const {
    auto it = allocations_.find(static_cast<const std::byte*>(p));
    return it == allocations_.end() ? nullptr : &it->second;
  }
  void remove_allocation(const void* p) { allocations_.erase(static_cast<const std::byte*>(p)); }

  Memory classify(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    auto it = allocations_.upper_bound(b);
    if (it == allocations_.begin()) return Memory::Pageable;
    --it;
    if (b >= it->first + it->second.bytes) return Memory::Pageable;
    return it->second.pinned ? Memory::Pinned : Memory::Device;
  }

 private:
  // Runs one ready stream head, picked at random (Eager: the oldest); false when none is ready.
  bool run_one() {
    ready_.clear();
    for (Stream* s : streams_)
      if (!s->tasks.empty() && (!s->tasks.front().ready || s->tasks.front().ready())) ready_.push_back(s);
    if (ready_.empty()) return false;
    size_t pick = 0;
    if (config_.order == Order::Eager) {
      for (size_t i = 1; i < ready_.size(); ++i)
        if (ready_[i]->tasks.front().seq < ready_[pick]->tasks.front().seq) pick = i;
    } else {
      double total = 0;
      for (Stream* r : ready_) total += r->weight;
      double x = std::uniform_real_distribution<double>(0.0, total)(rng_);
      for (pick = 0; pick + 1 < ready_.size() && x >= ready_[pick]->weight; ++pick) x -= ready_[pick]->weight;
    }
    Stream* s = ready_[pick];
    for (Stream* o : ready_)
      if (o->tasks.front().seq < s->tasks.front().seq) {
        ++stats_.reorderings;
        break;
      }
    Task t = std::move(s->tasks.front());
    s->tasks.pop_front();
    ++stats_.tasks;
    try {
      if (t.run) t.run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake CUDA: `%s` on stream %d threw: %s\n", t.what.c_str(), s->id, e.what());
      std::abort();
    }
    if (s->destroyed && s->tasks.empty()) remove(s);
    return true;
  }

  [[noreturn]] void deadlock(const char* what) {
    std::fprintf(stderr, "fake CUDA: deadlock: %s waited %lld s and nothing on the device can run; the streams:\n",
                 what, static_cast<long long>(kDeadlock.count()));
    for (Stream* s : streams_) {
      if (s->tasks.empty()) continue;
      std::fprintf(stderr, "  stream %d (device %d): %zu operations, the first `%s`\n", s->id, s->device,
                   s->tasks.size(), s->tasks.front().what.c_str());
    }
    std::abort();
  }

  bool live(int id) const { return find(id) != nullptr; }
  Stream* find(int id) const {
    for (Stream* s : streams_)
      if (s->id == id) return s;
    return nullptr;
  }
  void remove(Stream* s) {
    std::erase(streams_, s);
    delete s;
  }

  Config config_;
  std::mt19937_64 rng_{1};
  double eagerness_ = 0.5;
  double priority_speed_ = 1;
  Stats stats_;
  Drop drop_;
  std::condition_variable cv_;
  std::vector<Stream*> streams_;  // live ones, in creation order (a deterministic choice)
  std::vector<Stream*> ready_;    // scratch for run_one
  int next_stream_ = 0;
  uint64_t next_seq_ = 0;
  std::map<const std::byte*, Allocation> allocations_;
};

Engine& engine() {
  static Engine e;
  return e;
}

Stream* as_stream(cudaStream_t s) { return reinterpret_cast<Stream*>(s); }
Event* as_event(cudaEvent_t e) { return reinterpret_cast<Event*>(e); }

void* allocate(size_t bytes) { return std::aligned_alloc(256, (bytes + 255) / 256 * 256); }

}  // namespace

void configure(const Config& config) {
  std::lock_guard<std::mutex> lock(engine().mu);
  engine().configure(config);
}

Stats stats() {
  std::lock_guard<std::mutex> lock(engine().mu);
  return engine().stats();
}

void launch(cudaStream_t stream, std::function<void()> body) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mu);
  e.enqueue(as_stream(stream), "kernel", {}, std::move(body));
  e.progress();
}

void drop_stream_wait(cudaStream_t waiter, cudaStream_t recorder, int nth) {
  std::lock_guard<std::mutex> lock(engine().mu);
  engine().arm_drop(as_stream(waiter), as_stream(recorder), nth);
}

void enqueue(cudaStream_t stream, std::string what, std::function<bool()> ready, std::function<void()> run) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mu);
  e.enqueue(as_stream(stream), std::move(what), std::move(ready), std::move(run));
  e.progress();
}

void notify() {
  std::lock_guard<std::mutex> lock(engine().mu);
  engine().notify();
}

}  // namespace fake_cuda

using fake_cuda::Memory;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  *count = fake_cuda::engine().config().devices;
  return *count > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (device < 0 || device >= count) return cudaErrorInvalidDevice;
  fake_cuda::current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  std::memset(prop, 0, sizeof *prop);
  std::strcpy(prop->name, "fake device");
  prop->major = 9;
  prop->multiProcessorCount = 1;
  return device < count ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -1;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int, int priority) {
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  *stream = reinterpret_cast<cudaStream_t>(fake_cuda::engine().create_stream(priority));
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  fake_cuda::engine().destroy_stream(fake_cuda::as_stream(stream));
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  auto& e = fake_cuda::engine();
  std::unique_lock<std::mutex> lock(e.mu);
  e.synchronize_stream(lock, fake_cuda::as_stream(stream), "cudaStreamSynchronize");
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  auto& e = fake_cuda::engine();
  std::lock_guard<std::mutex> lock(e.mu);
  auto* s = fake_cuda::as_stream(stream);
  std::shared_ptr<fake_cuda::Mark> mark = fake_cuda::as_event(event)->latest;
  if (!e.drop_wait(s, mark.get()) && mark)
    e.enqueue(s, "wait for an event recorded on stream " + std::to_string(mark->stream), [mark] { return mark->done; },
              {});
  e.progress();
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  *event = reinterpret_cast<cudaEvent_t>(new fake_cuda::Event);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  // Its records live on in the operations and waits that hold them (CUDA releases it later too).
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  delete fake_cuda::as_event(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  auto& e = fake_cuda::engine();
  std::lock_guard<std::mutex> lock(e.mu);
  auto* s = fake_cuda::as_stream(stream);
  auto mark = std::make_shared<fake_cuda::Mark>();
  mark->stream = s->id;
  fake_cuda::as_event(event)->latest = mark;
  e.enqueue(s, "event record", {}, [mark] {
    mark->done = true;
    mark->at = fake_cuda::Clock::now();
  });
  e.progress();
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  auto& e = fake_cuda::engine();
  std::lock_guard<std::mutex> lock(e.mu);
  const auto& mark = fake_cuda::as_event(event)->latest;
  e.progress(mark && !mark->done);
  return !mark || mark->done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto& e = fake_cuda::engine();
  std::unique_lock<std::mutex> lock(e.mu);
  std::shared_ptr<fake_cuda::Mark> mark = fake_cuda::as_event(event)->latest;
  e.run_until(
      lock, [&] { return !mark || mark->done; }, "cudaEventSynchronize");
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  const auto& a = fake_cuda::as_event(start)->latest;
  const auto& b = fake_cuda::as_event(end)->latest;
  if (!a || !b) return cudaErrorInvalidResourceHandle;
  if (!a->done || !b->done) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = fake_cuda::allocate(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  fake_cuda::engine().add_allocation(*p, bytes, false);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = fake_cuda::allocate(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> lock(fake_cuda::engine().mu);
  fake_cuda::engine().add_allocation(*p, bytes, true);
  return cudaSuccess;
}

namespace {

cudaError_t free_allocation(void* p, bool pinned, const char* what) {
  if (!p) return cudaSuccess;
  auto& e = fake_cuda::engine();
  std::unique_lock<std::mutex> lock(e.mu);
  const fake_cuda::Allocation* a = e.allocation(p);
  if (!a || a->pinned != pinned) return cudaErrorInvalidValue;
  e.synchronize_device(lock, a->device, what);
  e.remove_allocation(p);
  std::free(p);
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaFree(void* p) { return free_allocation(p, false, "cudaFree"); }
cudaError_t cudaFreeHost(void* p) { return free_allocation(p, true, "cudaFreeHost"); }

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  auto& e = fake_cuda::engine();
  std::unique_lock<std::mutex> lock(e.mu);
  Memory from = e.classify(src), to = e.classify(dst);
  if ((kind == cudaMemcpyHostToDevice && (from == Memory::Device || to != Memory::Device)) ||
      (kind == cudaMemcpyDeviceToHost && (from != Memory::Device || to == Memory::Device)) ||
      (kind == cudaMemcpyDeviceToDevice && (from != Memory::Device || to != Memory::Device)))
    return cudaErrorInvalidValue;
  auto* s = fake_cuda::as_stream(stream);
  uint64_t seq = 0;
  if (from == Memory::Pageable) {
    auto staged = std::make_shared<std::vector<std::byte>>(static_cast<const std::byte*>(src),
                                                           static_cast<const std::byte*>(src) + bytes);
    seq = e.enqueue(s, "memcpy from pageable memory", {},
                    [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    seq = e.enqueue(s, "memcpy", {}, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  }
  if (to == Memory::Pageable) {
    e.run_until(
        lock, [&] { return fake_cuda::Engine::passed(s, seq); }, "a cudaMemcpyAsync into pageable memory");
    return cudaSuccess;
  }
  e.progress();
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  auto& e = fake_cuda::engine();
  std::lock_guard<std::mutex> lock(e.mu);
  if (e.classify(p) != Memory::Device) return cudaErrorInvalidValue;
  e.enqueue(fake_cuda::as_stream(stream), "memset", {}, [p, value, bytes] { std::memset(p, value, bytes); });
  e.progress();
  return cudaSuccess;
}

cudaError_t cudaGetLastError() { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake CUDA error"; }
const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorFake"; }

// What nvcc's generated code calls to register and launch kernels: registration does nothing, and
// no compiled kernel is ever launched here (the tests launch theirs with fake_cuda::launch).
void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, void*, void*, void*, void*, int*) {}
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, void*) { return 0; }
cudaError_t __cudaPopCallConfiguration(dim3*, dim3*, size_t*, void*) { return cudaErrorNotSupported; }
cudaError_t __cudaLaunchKernel(const void*, dim3, dim3, void**, size_t, cudaStream_t) { return cudaErrorNotSupported; }
cudaError_t __cudaGetKernel(void**, const void*) { return cudaErrorNotSupported; }

}  // extern "C"
