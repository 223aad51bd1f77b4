// The fake device itself, and what it catches: it orders stream work by stream order and events
// only; dropping one stream wait that the data depends on makes --check fail for some seeds (local
// and NCCL mode); a device stage registered by name is made by the backend with its stream.

#include "fake_backend_harness.h"

using namespace schedrt;
using namespace schedrt::fake_backend;

TEST_CASE("the fake device orders stream work by stream order and events only") {
  // A kernel on stream a writes 7 into x; stream b copies x to y, after waiting for an event
  // recorded behind the kernel, or without waiting.
  int stale_with_wait = 0, stale_without = 0, saw_first_record = 0;
  for (uint64_t seed = 1; seed <= 64; ++seed)
    for (bool wait : {true, false}) {
      FakeDevice fake({.seed = seed});
      cudaStream_t a = nullptr, b = nullptr;
      cudaEvent_t e = nullptr;
      void *x = nullptr, *y = nullptr;
      REQUIRE(cudaStreamCreateWithPriority(&a, cudaStreamNonBlocking, 0) == cudaSuccess);
      REQUIRE(cudaStreamCreateWithPriority(&b, cudaStreamNonBlocking, 0) == cudaSuccess);
      REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDefault) == cudaSuccess);
      REQUIRE(cudaMalloc(&x, 4) == cudaSuccess);
      REQUIRE(cudaMalloc(&y, 4) == cudaSuccess);
      auto* px = static_cast<int32_t*>(x);
      auto* py = static_cast<int32_t*>(y);
      *px = 0;
      *py = -1;
      fake_cuda::launch(a, [px] { *px = 7; });
      cudaEventRecord(e, a);
      if (wait) cudaStreamWaitEvent(b, e, 0);
      // Recorded again behind a second kernel: a wait issued before this still waits for the first.
      fake_cuda::launch(a, [px] { *px = 8; });
      cudaEventRecord(e, a);
      cudaMemcpyAsync(y, x, 4, cudaMemcpyDeviceToDevice, b);
      cudaStreamSynchronize(b);
      int32_t got = *py;
      CHECK((got == 0 || got == 7 || got == 8));
      if (wait) stale_with_wait += got == 0;
      else stale_without += got == 0;
      if (wait) saw_first_record += got == 7;
      cudaStreamSynchronize(a);
      cudaFree(x);
      cudaFree(y);
      cudaEventDestroy(e);
      cudaStreamDestroy(a);
      cudaStreamDestroy(b);
    }
  CHECK(stale_with_wait == 0);
  CHECK(stale_without > 0);
  CHECK(saw_first_record > 0);
}

namespace {

// Over seeds 1..`seeds` of `p`: every seed passes --check bit for bit; with the fault that `arm`
// sets up, the fault fires and the run still ends normally. Returns how many seeds --check failed
// with the fault. One step: a later step would find stale data equal to what it computes itself.
int seeds_caught(Mode mode, const Program& p, uint64_t seeds, const BeforeRun& arm) {
  int caught = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    Outcome clean = run(mode, p.info, options(), seed);
    INFO("seed " << seed << " without the fault: " << clean.out << clean.failure);
    CHECK(clean.exact());
    Outcome faulty = run(mode, p.info, options(), seed, arm);
    INFO("seed " << seed << " with the fault: " << faulty.out << faulty.failure);
    CHECK(faulty.stats.dropped_waits == 1);
    CHECK(faulty.failure == "");
    if (faulty.exact()) continue;
    CHECK(faulty.rc == 1);
    CHECK(faulty.out.find("\"ok\": false") != std::string::npos);
    ++caught;
  }
  return caught;
}

}  // namespace

TEST_CASE("without one of its stream waits the backend computes wrong gradients, and --check says so") {
  Program p("1f1b", 4, 1, 8);
  const uint64_t seeds = 24;
  struct Drop {
    std::string what;
    Mode mode;
    BeforeRun arm;
  };
  const Drop drops[] = {
      {"local: rank 1's compute stream does not wait for the copy of F0.s0", Mode::Local,
       [](const Backends& b) { fake_cuda::drop_stream_wait(b[1]->device().compute, nullptr, 0); }},
      {"local: the copy of F0.s0 does not wait for rank 0's compute stream to produce it", Mode::Local,
       [](const Backends& b) { fake_cuda::drop_stream_wait(nullptr, b[0]->device().compute, 0); }},
      {"NCCL: rank 1's compute stream does not wait for g0's receive of F0.s0", Mode::Nccl,
       [](const Backends& b) { fake_cuda::drop_stream_wait(b[1]->device().compute, nullptr, 0); }},
      {"NCCL: rank 0's send of F0.s0 does not wait for its compute stream", Mode::Nccl,
       [](const Backends& b) { fake_cuda::drop_stream_wait(b[0]->device().comm, nullptr, 0); }},
  };
  for (const Drop& d : drops) {
    INFO(d.what);
    int caught = seeds_caught(d.mode, p, seeds, d.arm);
    MESSAGE(d.what << ": --check failed for " << caught << " of " << seeds << " seeds");
    CHECK(caught > 0);
  }
}

// --- A device stage registered by name, as a user registers one (schedrt/stage.h) ---

namespace {

std::atomic<int> device_stages_made{0};

StageConfig as_mlp(const StageConfig& c) {
  StageConfig m = c;
  m.stage = "mlp";
  return m;
}

}  // namespace

// The host implementation is what --check's sequential reference runs; the device one gets the
// rank's compute stream from the backend and runs the mlp stage's math as kernels on it.
SCHEDRT_REGISTER_STAGE(
    fake_device_mlp, .description = "the CPU mlp stage as kernels on the fake device", .has_reference = true,
    .memory = StageMemory::Host,
    .make = [](const StageConfig& c, int32_t s, const StageEnv&) { return make_stage(as_mlp(c), s); });
SCHEDRT_REGISTER_STAGE(
    fake_device_mlp, .description = "the CPU mlp stage as kernels on the fake device", .has_reference = true,
    .memory = StageMemory::Device,
    .make = [](const StageConfig& c, int32_t s, const StageEnv& env) -> std::unique_ptr<Stage> {
      if (env.memory != StageMemory::Device || !env.stream || !env.backend)
        throw Error("a device stage was made without a device environment");
      ++device_stages_made;
      return std::make_unique<DeviceStage>(make_stage(as_mlp(c), s), static_cast<cudaStream_t>(env.stream));
    });

TEST_CASE("a device stage registered by name: the cuda backend makes it with its stream, and --check matches") {
  CHECK(registry_errors().empty());
  for (const char* family : {"1f1b", "zb-v", "dualpipe"}) {
    Program p(family, 4, std::string(family) == "zb-v" ? 2 : 1, 8);
    RunOptions o = options();
    o.stage = "fake_device_mlp";
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      device_stages_made = 0;
      FakeDevice fake({.order = fake_cuda::Order::Random, .seed = seed, .devices = p.info.ranks});
      Outcome r;
      r.out = capture_stdout([&] { r.failure = run_local(p.info, o, &r.rc, {}, /*wrap=*/false); });
      INFO(family << ", seed " << seed << ": " << r.out << r.failure);
      CHECK(r.exact());
      CHECK(r.out.find("\"stage\": \"fake_device_mlp\"") != std::string::npos);
      // One per (direction, stage) the ranks hold, all from the device implementation.
      CHECK(device_stages_made == p.info.num_directions() * p.info.stages);
    }
  }
  // schedrt's own mlp stage has its cuBLAS implementation in the same registry; the synthetic
  // stage touches no tensors and serves both.
  CHECK(find_stage("mlp", StageMemory::Device) != nullptr);
  CHECK(find_stage("synthetic", StageMemory::Device) == find_stage("synthetic", StageMemory::Host));
  StageConfig c;
  c.stage = "no_such_stage";
  CHECK_THROWS_WITH(make_stage(c, 0),
                    doctest::Contains("no stage `no_such_stage` is registered; registered stages: `mlp`"));
}
