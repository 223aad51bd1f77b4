// The cuda backend's local mode (every rank in one process, copies between their buffers) on the
// fake CUDA runtime of fake_cudart.cpp, whose device runs stream work lazily in a random order that
// respects only stream order and events, with the CPU stages run as kernels on each rank's compute
// stream: schedc's own lowered programs for several families run through the backend's posts,
// matching, waits, timing and host collectives, under several seeds, and --check must find the CPU
// reference's gradients bit for bit. Then the failure paths: a lost message trips the watchdog with
// a report, an exception on one rank stops the others, a message out of order is caught by its
// header, and the launch settings are checked before anything runs. NCCL mode is in
// fake_nccl_test.cpp, the fake device itself and what it catches in fake_device_test.cpp.

#include "fake_backend_harness.h"

using namespace schedrt;
using namespace schedrt::fake_backend;

TEST_CASE("lowered programs run on the local cuda backend and match the reference bit for bit, in any device order") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
    int32_t directions = 0;
  };
  for (Case c :
       {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"interleaved-1f1b", 2, 2, 4},
        Case{"zb-h1", 3, 1, 6}, Case{"chimera", 4, 1, 8, 4}, Case{"chimera", 3, 1, 9, 3}}) {
    Program p(c.family, c.pp, c.vpp, c.m, c.directions);
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      Outcome r = run(Mode::Local, p.info, options(), seed);
      INFO(c.family << ", seed " << seed << ": " << r.out << r.failure);
      CHECK(r.failure == "");
      CHECK(r.rc == 0);
      CHECK(r.out.find("\"ok\": true") != std::string::npos);
      CHECK(r.out.find("\"backend\": \"cuda\"") != std::string::npos);
      CHECK(r.out.find("\"max_rel_grad_diff\": 0,") != std::string::npos);
      // The device ran stream work out of the order it was enqueued in (an in-order fake would not).
      CHECK(r.stats.reorderings > 0);
    }
  }
}

TEST_CASE("several steps, and the measured trace comes from the (fake) device's events") {
  Program p("1f1b", 2, 1, 4);
  RunOptions o = options();
  o.steps = 3;
  o.trace = "fake_backend_trace.json";
  int rc = -1;
  std::string failure;
  std::string out = capture_stdout([&] { failure = run_local(p.info, o, &rc); });
  CHECK(failure == "");
  CHECK(rc == 0);
  CHECK(out.find("\"steps\": 3") != std::string::npos);
  std::ifstream f(o.trace);
  std::stringstream trace;
  trace << f.rdbuf();
  CHECK(trace.str().find("\"name\": \"post g0\"") != std::string::npos);
  CHECK(trace.str().find("\"backend\": \"cuda\"") != std::string::npos);
  CHECK(trace.str().find("\"name\": \"F0.s0\"") != std::string::npos);
  std::remove(o.trace.c_str());
}

TEST_CASE("a lost message trips the watchdog, which says who waits for what from whom") {
  Program p("1f1b", 2, 1, 1);
  RunOptions o = options(0.3);
  o.fault = "drop-send=0";
  int rc = -1;
  std::string failure;
  capture_stdout([&] { failure = run_local(p.info, o, &rc); });
  INFO(failure);
  // Whichever deadline passes first reports: rank 1 waiting for the lost activation, or rank 0
  // for the gradient that rank 1 can therefore never send.
  bool rank1 = failure.find("rank 1 waited 0.3 s for `F0.s0` (activation) from rank 0, message #0 on channel 0->1") !=
               std::string::npos;
  bool rank0 = failure.find("rank 0 waited 0.3 s for `BW0.s1` (gradient) from rank 1, message #0 on channel 1->0") !=
               std::string::npos;
  CHECK((rank0 || rank1));
}

TEST_CASE("an exception on one rank stops every rank with its message") {
  Program p("1f1b", 4, 1, 4);
  RunOptions o = options(30);
  o.fault = "throw=2";
  int rc = -1;
  std::string failure;
  auto start = std::chrono::steady_clock::now();
  capture_stdout([&] { failure = run_local(p.info, o, &rc); });
  CHECK(failure == "rank 2: injected fault at `F0.s2` (--fault throw=2)");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a message out of channel order is caught by its header") {
  cuda::InProcess group(2, BackendOptions{5});
  CHECK(out_of_order_failure(group, [&](int32_t r) { return cuda::make_local_backend(group, r, 0); }) ==
        "rank 1 expected `F1.s0` as message #0 from rank 0, got `F0.s0` (#0)");
}

TEST_CASE("run_cuda checks the launch before it starts anything") {
  auto body = [](Backend&) { FAIL("no rank may run"); };
  int argc = 0;
  char** argv = nullptr;
  setenv("SCHEDC_CUDA_MODE", "nccl", 1);
  CHECK(run_cuda(4, BackendOptions{}, body, &argc, &argv).find("NCCL refuses two ranks on one device") !=
        std::string::npos);
  unsetenv("SCHEDC_CUDA_MODE");
  setenv("RANK", "0", 1);
  CHECK(run_cuda(4, BackendOptions{}, body, &argc, &argv).find("RANK and WORLD_SIZE must be set together") !=
        std::string::npos);
  unsetenv("RANK");
}

TEST_CASE("the synthetic stage through run_cuda: single-process local mode on the fake device") {
  // The synthetic stage holds the host thread, and the events around it time that: the device
  // must record them when the host reaches them.
  FakeDevice fake({.order = fake_cuda::Order::Eager});
  Program p("1f1b", 2, 1, 2);
  RunOptions o = options();
  o.check = false;
  o.stage = "synthetic";
  o.ms_per_unit = 1;
  int rc = 0;
  std::string out = capture_stdout([&] {
    int argc = 0;
    char** argv = nullptr;
    std::string failure = run_cuda(
        p.info.ranks, BackendOptions{5},
        [&](Backend& b) {
          int code = rank_main(b, p.info, o);
          if (b.rank() == 0) rc = code;
        },
        &argc, &argv);
    CHECK(failure == "");
  });
  CHECK(rc == 0);
  CHECK(out.find("\"stage\": \"synthetic\"") != std::string::npos);
  // 1F1B on 2 ranks, m = 2, F = B = W = 1 ms: the measured makespan is the schedule's 9 ms or a
  // little more, read from the device's events.
  double makespan = std::stod(out.substr(out.find("\"measured_makespan_s\": ") + 23));
  CHECK(makespan > 0.008);
  CHECK(makespan < 0.1);
}
