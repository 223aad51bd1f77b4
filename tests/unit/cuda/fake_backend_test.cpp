// The cuda backend's local mode (every rank in one process, copies between their buffers) on the
// fake CUDA runtime of fake_cudart.cpp, with the CPU stages: schedc's own lowered programs for
// several families run through the backend's posts, matching, waits, timing and host collectives,
// and --check must find the CPU reference's gradients bit for bit. Then the failure paths: a lost
// message trips the watchdog with a report, an exception on one rank stops the others, a message
// out of order is caught by its header, and the launch settings are checked before anything runs.
// The same for NCCL mode, on the fake NCCL of fake_nccl.h: the only test of the NCCL backend that
// runs without several GPUs.

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_backend.h"
#include "codegen/lower.h"
#include "fake_nccl.h"
#include "run_internal.h"
#include "solver/families/families.h"

using namespace schedrt;

namespace {

// The backend with the CPU stages (the fake runs no kernels); everything else forwarded.
class HostStages final : public Backend {
 public:
  explicit HostStages(cuda::CudaBackend& b) : b_(b) {}
  std::string name() const override { return b_.name(); }
  int32_t rank() const override { return b_.rank(); }
  int32_t size() const override { return b_.size(); }
  void post(int32_t g, std::span<const PostedTransfer> t) override { b_.post(g, t); }
  void wait(int32_t g, std::span<const int32_t> w) override { b_.wait(g, w); }
  void wait_all() override { b_.wait_all(); }
  void barrier() override { b_.barrier(); }
  void exchange(int32_t p, const void* s, void* r, size_t n) override { b_.exchange(p, s, r, n); }
  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& m) override { return b_.gather(m); }
  void abort(const std::string& m) override { b_.abort(m); }
  void* allocate(size_t n) override { return b_.allocate(n); }
  void deallocate(void* p) override { b_.deallocate(p); }
  void publish_status(uint64_t s) override { b_.publish_status(s); }
  int64_t blocked_ns() const override { return b_.blocked_ns(); }
  void zero(void* p, size_t n) override { b_.zero(p, n); }
  std::unique_ptr<Stage> make_stage(const StageConfig&, int32_t) override { return nullptr; }
  void op_begin(OpCode c) override { b_.op_begin(c); }
  void op_end(OpCode c) override { b_.op_end(c); }
  void device_intervals(std::vector<OpRecord>& r) override { b_.device_intervals(r); }
  std::optional<double> device_check_tolerance(const StageConfig& c) const override { return b_.device_check_tolerance(c); }
  void synchronize() override { b_.synchronize(); }

 private:
  cuda::CudaBackend& b_;
};

Action action_of(const schedc::ir::Action& a) {
  return Action{static_cast<Kind>(static_cast<int>(a.kind)), a.mb.value, a.stage.value};
}

// A family's schedule lowered by schedc, as the op tables a generated main.cpp holds.
struct Program {
  std::vector<std::vector<TableOp>> ops;
  std::vector<std::vector<Transfer>> transfers;
  std::vector<std::vector<Action>> needs;
  std::vector<RankTable> tables;
  std::vector<int32_t> stage_to_rank, groups, op_counts;
  std::vector<double> cost;
  ProgramInfo info;

  Program(const std::string& family, int32_t pp, int32_t vpp, int32_t m) {
    using namespace schedc;
    ir::Problem p;
    p.ranks = pp;
    p.stages_per_rank = vpp;
    p.microbatches = m;
    solver::apply_family_defaults(*solver::find_family(family), {"ranks", "stages_per_rank", "microbatches"}, p);
    Diagnostics diags;
    auto sched = solver::generate_family(family, p, {}, SourceLoc{}, diags);
    REQUIRE_MESSAGE(sched, diags.str());
    ir::Program prog = codegen::lower(*sched);
    const ir::Problem& pb = prog.problem;
    const int32_t R = pb.ranks, S = pb.num_stages();
    for (int32_t d = 0; d < pb.num_directions(); ++d)
      for (int32_t s = 0; s < S; ++s) stage_to_rank.push_back(pb.rank_of(d, ir::StageId(s)).value);
    cost.assign(static_cast<size_t>(S), 1.0);
    ops.resize(static_cast<size_t>(R));
    transfers.resize(static_cast<size_t>(R));
    needs.resize(static_cast<size_t>(R));
    for (int32_t r = 0; r < R; ++r) {
      const ir::RankProgram& rp = prog.ranks[static_cast<size_t>(r)];
      for (const ir::Op& op : rp.ops) {
        TableOp t;
        switch (op.kind) {
          case ir::OpKind::Compute: {
            Action a = action_of(op.action);
            if (op.partner) {
              Action b = action_of(*op.partner);
              t.code = OpCode::Overlapped;
              t.a = a.kind == Kind::F ? a : b;
              t.b = a.kind == Kind::F ? b : a;
            } else {
              static const OpCode kCodes[] = {OpCode::Forward, OpCode::BackwardInput, OpCode::BackwardWeight,
                                              OpCode::Backward};
              t.code = kCodes[static_cast<int>(a.kind)];
              t.a = t.b = a;
            }
            break;
          }
          case ir::OpKind::Post:
            t.code = OpCode::Post;
            t.group = op.group;
            t.first = static_cast<int32_t>(transfers[static_cast<size_t>(r)].size());
            for (ir::MessageId id : rp.groups[static_cast<size_t>(op.group)].transfers) {
              const ir::Message& msg = prog.message(id);
              Action producer = action_of(msg.producer);
              transfers[static_cast<size_t>(r)].push_back(msg.src.value == r ? send(producer, msg.dst.value, msg.seq)
                                                                             : recv(producer, msg.src.value, msg.seq));
            }
            t.count = static_cast<int32_t>(transfers[static_cast<size_t>(r)].size()) - t.first;
            break;
          case ir::OpKind::Wait:
            t.code = OpCode::Wait;
            t.group = op.group;
            t.first = static_cast<int32_t>(needs[static_cast<size_t>(r)].size());
            for (ir::MessageId id : op.needs) needs[static_cast<size_t>(r)].push_back(action_of(prog.message(id).producer));
            t.count = static_cast<int32_t>(needs[static_cast<size_t>(r)].size()) - t.first;
            break;
          case ir::OpKind::WaitAll: t.code = OpCode::WaitAll; break;
        }
        ops[static_cast<size_t>(r)].push_back(t);
      }
      groups.push_back(static_cast<int32_t>(rp.groups.size()));
      op_counts.push_back(static_cast<int32_t>(rp.ops.size()));
    }
    for (int32_t r = 0; r < R; ++r)
      tables.push_back(RankTable{ops[static_cast<size_t>(r)].data(), static_cast<int32_t>(ops[static_cast<size_t>(r)].size()),
                                 transfers[static_cast<size_t>(r)].data(), needs[static_cast<size_t>(r)].data()});
    info.source = "fake_backend_test";
    info.ranks = R;
    info.stages = S;
    info.microbatches = m;
    info.bidirectional = pb.direction == ir::Direction::Bidirectional;
    info.stage_to_rank = stage_to_rank.data();
    info.cost_f = info.cost_b = info.cost_w = cost.data();
    info.simulated_makespan = 1;
    info.groups_per_rank = groups.data();
    info.ops_per_rank = op_counts.data();
    info.tables = tables.data();
  }
};

RunOptions options(double timeout = 20) {
  RunOptions o;
  o.backend = "cuda";
  o.hidden = 16;
  o.batch = 4;
  o.check = true;
  o.interpret = true;
  o.format = "json";
  o.timeout_s = timeout;
  return o;
}

// Every rank on the local backend (as run_cuda's single-process local mode), with CPU stages.
// Returns the first failure's message ("" when all finished) and rank 0's exit code.
std::string run_local(const ProgramInfo& info, const RunOptions& opt, int* rc) {
  cuda::InProcess group(info.ranks, BackendOptions{opt.timeout_s});
  std::vector<std::unique_ptr<cuda::CudaBackend>> backends(static_cast<size_t>(info.ranks));
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < info.ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        backends[static_cast<size_t>(r)] = cuda::make_local_backend(group, r, 0);
        HostStages b(*backends[static_cast<size_t>(r)]);
        int code = rank_main(b, info, opt);
        if (r == 0) *rc = code;
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        group.abort("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  return group.aborted() ? group.message() : "";
}

std::string capture_stdout(const std::function<void()>& fn) {
  std::fflush(stdout);
  std::stringstream buf;
  std::streambuf* old = std::cout.rdbuf(buf.rdbuf());
  fn();
  std::cout.rdbuf(old);
  return buf.str();
}

}  // namespace

TEST_CASE("lowered programs run on the local cuda backend and match the reference bit for bit") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
  };
  for (Case c : {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"interleaved-1f1b", 2, 2, 4},
                 Case{"zb-h1", 3, 1, 6}}) {
    Program p(c.family, c.pp, c.vpp, c.m);
    int rc = -1;
    std::string failure;
    std::string out = capture_stdout([&] { failure = run_local(p.info, options(), &rc); });
    INFO(c.family << ": " << out << failure);
    CHECK(failure == "");
    CHECK(rc == 0);
    CHECK(out.find("\"ok\": true") != std::string::npos);
    CHECK(out.find("\"backend\": \"cuda\"") != std::string::npos);
    CHECK(out.find("\"max_rel_grad_diff\": 0,") != std::string::npos);
  }
}

TEST_CASE("several steps, and the measured trace comes from the (fake) device's events") {
  Program p("1f1b", 2, 1, 4);
  RunOptions o = options();
  o.steps = 3;
  o.trace_path = "fake_backend_trace.json";
  int rc = -1;
  std::string failure;
  std::string out = capture_stdout([&] { failure = run_local(p.info, o, &rc); });
  CHECK(failure == "");
  CHECK(rc == 0);
  CHECK(out.find("\"steps\": 3") != std::string::npos);
  std::ifstream f(o.trace_path);
  std::stringstream trace;
  trace << f.rdbuf();
  CHECK(trace.str().find("\"name\": \"post g0\"") != std::string::npos);
  CHECK(trace.str().find("\"backend\": \"cuda\"") != std::string::npos);
  CHECK(trace.str().find("\"name\": \"F0.s0\"") != std::string::npos);
  std::remove(o.trace_path.c_str());
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

namespace {

// Rank 0 sends F0.s0 and rank 1 expects F1.s0 as that channel's first message, on backends from
// `make(rank)`; returns how the group failed.
template <class Make>
std::string out_of_order_failure(cuda::InProcess& group, Make make) {
  auto side = [&](int32_t rank) {
    try {
      auto b = make(rank);
      void* buf = b->allocate(kHeaderBytes + 8);
      MessageHeader h;
      h.kind = 0, h.mb = rank, h.stage = 0, h.seq = 0, h.src = 0, h.bytes = 8;
      PostedTransfer t{rank == 0 ? send(F(0, 0), 1, 0) : recv(F(1, 0), 0, 0), h, static_cast<std::byte*>(buf), 8};
      b->post(0, std::span<const PostedTransfer>(&t, 1));
      b->wait_all();
    } catch (const std::exception& e) {
      group.abort(e.what());
    }
  };
  std::thread t0(side, 0), t1(side, 1);
  t0.join();
  t1.join();
  return group.message();
}

}  // namespace

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
  CHECK(run_cuda(4, BackendOptions{}, body, &argc, &argv).find("NCCL refuses two ranks on one device") != std::string::npos);
  unsetenv("SCHEDC_CUDA_MODE");
  setenv("RANK", "0", 1);
  CHECK(run_cuda(4, BackendOptions{}, body, &argc, &argv).find("RANK and WORLD_SIZE must be set together") !=
        std::string::npos);
  unsetenv("RANK");
}

TEST_CASE("the synthetic stage through run_cuda: single-process local mode on the fake device") {
  Program p("1f1b", 2, 1, 2);
  RunOptions o = options();
  o.check = false;
  o.stage = "synthetic";
  o.ms_per_unit = 1;
  int rc = 0;
  std::string out = capture_stdout([&] {
    int argc = 0;
    char** argv = nullptr;
    std::string failure = run_cuda(p.info.ranks, BackendOptions{5}, [&](Backend& b) {
      int code = rank_main(b, p.info, o);
      if (b.rank() == 0) rc = code;
    }, &argc, &argv);
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

// --- NCCL mode, on the fake NCCL of fake_nccl.h ---

namespace {

// Every rank on the NCCL backend, one thread each: with the in-process host collectives
// (single-process NCCL mode), or with barrier, gather and exchange through NCCL too (what one
// process per rank does).
std::string run_nccl(const ProgramInfo& info, const RunOptions& opt, bool in_process, int* rc) {
  cuda::install_libs_for_testing(fake_nccl::libs());
  fake_nccl::FakeWorld world(info.ranks);
  cuda::InProcess group(info.ranks, BackendOptions{opt.timeout_s});
  std::vector<std::unique_ptr<cuda::CudaBackend>> backends(static_cast<size_t>(info.ranks));
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < info.ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        backends[static_cast<size_t>(r)] =
            cuda::make_nccl_backend(in_process ? &group : nullptr, world.comm(r), r, info.ranks,
                                    BackendOptions{opt.timeout_s}, 0, [&](const std::string& m) { group.abort(m); });
        HostStages b(*backends[static_cast<size_t>(r)]);
        int code = rank_main(b, info, opt);
        if (r == 0) *rc = code;
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        group.abort("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  return group.aborted() ? group.message() : "";
}

}  // namespace

TEST_CASE("NCCL mode: one NCCL group per posted group, issued in order, on the strictest model") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
  };
  for (bool in_process : {true, false})
    for (Case c : {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"zb-h2", 3, 1, 6}}) {
      Program p(c.family, c.pp, c.vpp, c.m);
      RunOptions o = options();
      o.steps = 2;
      int rc = -1;
      std::string failure;
      std::string out = capture_stdout([&] { failure = run_nccl(p.info, o, in_process, &rc); });
      INFO(c.family << (in_process ? " (one process)" : " (NCCL collectives)") << ": " << out << failure);
      CHECK(failure == "");
      CHECK(rc == 0);
      CHECK(out.find("\"max_rel_grad_diff\": 0,") != std::string::npos);
    }
}

TEST_CASE("NCCL mode: a lost message trips the watchdog instead of hanging") {
  Program p("1f1b", 2, 1, 1);
  RunOptions o = options(0.3);
  o.fault = "drop-send=0";
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
  fake_nccl::FakeWorld world(2);
  cuda::InProcess group(2, BackendOptions{5});
  CHECK(out_of_order_failure(group, [&](int32_t r) {
          return cuda::make_nccl_backend(&group, world.comm(r), r, 2, BackendOptions{5}, 0, {});
        }) == "rank 1 expected `F1.s0` as message #0 from rank 0, got `F0.s0` (#0)");
}
