// The cuda backend's NCCL mode on the fake NCCL of fake_nccl.h (and the fake device of
// fake_cudart.h): the only test of the NCCL backend that runs without several GPUs. The same
// lowered programs as the local mode's tests, with host collectives in the process or through
// NCCL, and its failure paths.

#include "fake_backend_harness.h"

using namespace schedrt;
using namespace schedrt::fake_backend;

TEST_CASE("NCCL mode: one NCCL group per posted group, issued in order, on the strictest model") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
    int32_t directions = 0;
  };
  // Chimera with four directions: every stage's four replicas reduced through the backend.
  for (Mode mode : {Mode::Nccl, Mode::NcclCollectives})
    for (Case c : {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"zb-h2", 3, 1, 6},
                   Case{"chimera", 4, 1, 8, 4}}) {
      Program p(c.family, c.pp, c.vpp, c.m, c.directions);
      RunOptions o = options();
      o.steps = 2;
      for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
        Outcome r = run(mode, p.info, o, seed);
        INFO(c.family << (mode == Mode::Nccl ? " (one process)" : " (NCCL collectives)") << ", seed " << seed << ": "
                      << r.out << r.failure);
        CHECK(r.failure == "");
        CHECK(r.rc == 0);
        CHECK(r.out.find("\"max_rel_grad_diff\": 0,") != std::string::npos);
        CHECK(r.stats.reorderings > 0);
      }
    }
}

TEST_CASE("NCCL mode: a lost message trips the watchdog instead of hanging") {
  Program p("1f1b", 2, 1, 1);
  RunOptions o = options(0.3);
  o.fault = "drop-send=0";
  FakeDevice fake({.devices = 2});
  int rc = -1;
  std::string failure;
  capture_stdout([&] { failure = run_nccl(p.info, o, true, &rc); });
  INFO(failure);
  // Rank 1 waits for g0 {recv F0.s0 <- r0 #0}, and so rank 0 for g1 {recv BW0.s1 <- r1 #0}: the
  // first deadline to pass reports.
  bool rank1 = failure.find("rank 1 waited 0.3 s for NCCL to connect g0 {recv F0.s0 <- r0 #0}") != std::string::npos;
  bool rank0 = failure.find("rank 0 waited 0.3 s for NCCL to connect g1 {recv BW0.s1 <- r1 #0}") != std::string::npos;
  CHECK((rank0 || rank1));
}

TEST_CASE("NCCL mode: a message out of channel order is caught by its header at the end of the step") {
  cuda::install_libs_for_testing(fake_nccl::libs());
  FakeDevice fake({.devices = 2});
  fake_nccl::FakeWorld world(2);
  cuda::InProcess group(2, BackendOptions{5});
  CHECK(out_of_order_failure(group, [&](int32_t r) {
          return cuda::make_nccl_backend(&group, world.comm(r), r, 2, BackendOptions{5}, r, {});
        }) == "rank 1 expected `F1.s0` as message #0 from rank 0, got `F0.s0` (#0)");
}
