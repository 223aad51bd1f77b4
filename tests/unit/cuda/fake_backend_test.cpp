// The cuda backend's local mode (every rank in one process, copies between their buffers) on the
// fake CUDA runtime of fake_cudart.cpp, whose device runs stream work lazily in a random order that
// respects only stream order and events, with the CPU stages run as kernels on each rank's compute
// stream: schedc's own lowered programs for several families run through the backend's posts,
// matching, waits, timing and host collectives, under several seeds, and --check must find the CPU
// reference's gradients bit for bit. Dropping one stream wait that the data depends on must make
// --check fail for some seeds. Then the failure paths: a lost message trips the watchdog with a
// report, an exception on one rank stops the others, a message out of order is caught by its
// header, and the launch settings are checked before anything runs. The same for NCCL mode, on the
// fake NCCL of fake_nccl.h: the only test of the NCCL backend that runs without several GPUs.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <latch>
#include <sstream>
#include <thread>

#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_backend.h"
#include "codegen/lower.h"
#include "fake_cudart.h"
#include "fake_nccl.h"
#include "run_internal.h"
#include "solver/families/families.h"

using namespace schedrt;

namespace {

// Sets up the fake device for one test and puts its defaults back after it.
class FakeDevice {
 public:
  explicit FakeDevice(const fake_cuda::Config& config) { fake_cuda::configure(config); }
  ~FakeDevice() { fake_cuda::configure({}); }
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;
};

// A CPU stage whose compute runs as kernels on a rank's compute stream of the fake device, so that
// it reads and writes the message buffers in device order, not in the host's. A kernel holds the
// stages it uses (a failing rank may drop its stages before its device has run them). The host
// calls that read what the kernels wrote (loss, gradients) come after the backend synchronised the
// step; they check that it did.
class DeviceStage final : public Stage {
 public:
  DeviceStage(std::unique_ptr<Stage> inner, cudaStream_t stream) : inner_(std::move(inner)), stream_(stream) {}

  size_t boundary_bytes() const override { return inner_->boundary_bytes(); }
  void forward(int32_t mb, const void* in, void* out) override {
    launch({this}, [s = inner_, mb, in, out] { s->forward(mb, in, out); });
  }
  void backward_input(int32_t mb, const void* grad_out, void* grad_in) override {
    launch({this}, [s = inner_, mb, grad_out, grad_in] { s->backward_input(mb, grad_out, grad_in); });
  }
  void backward_weight(int32_t mb) override {
    launch({this}, [s = inner_, mb] { s->backward_weight(mb); });
  }
  void backward(int32_t mb, const void* grad_out, void* grad_in) override {
    launch({this}, [s = inner_, mb, grad_out, grad_in] { s->backward(mb, grad_out, grad_in); });
  }
  void overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                  void* grad_in) override {
    auto& o = dynamic_cast<DeviceStage&>(other);
    launch({this, &o}, [s = inner_, t = o.inner_, f_mb, in, out, b, grad_out, grad_in] {
      s->overlapped(f_mb, in, out, *t, b, grad_out, grad_in);
    });
  }

  double loss(int32_t mb) const override {
    settled("loss");
    return inner_->loss(mb);
  }
  size_t gradient_bytes() const override { return inner_->gradient_bytes(); }
  void reduce_gradients(const std::vector<int32_t>& mbs, void* out) const override {
    settled("reduce_gradients");
    inner_->reduce_gradients(mbs, out);
  }
  void add_gradients(const void* a, const void* b, void* out) const override { inner_->add_gradients(a, b, out); }
  std::vector<double> gradient_values(const void* grads) const override { return inner_->gradient_values(grads); }

 private:
  template <class Body>
  void launch(std::initializer_list<DeviceStage*> users, Body body) {
    std::vector<std::shared_ptr<std::atomic<int>>> counts;
    for (DeviceStage* u : users) {
      ++*u->unfinished_;
      counts.push_back(u->unfinished_);
    }
    fake_cuda::launch(stream_, [body = std::move(body), counts = std::move(counts)] {
      body();
      for (const auto& c : counts) --*c;
    });
  }
  void settled(const char* call) const {
    if (int n = *unfinished_; n > 0)
      throw Error(std::string("the host called `") + call + "` while " + std::to_string(n) +
                  " of the stage's kernels had not run: the backend did not synchronise the step");
  }

  std::shared_ptr<Stage> inner_;
  cudaStream_t stream_;
  std::shared_ptr<std::atomic<int>> unfinished_ = std::make_shared<std::atomic<int>>(0);
};

// The backend with the CPU stages run as kernels on its compute stream; everything else forwarded.
class DeviceStages final : public Backend {
 public:
  explicit DeviceStages(cuda::CudaBackend& b) : b_(b) {}
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
  std::unique_ptr<Stage> make_stage(const StageConfig& c, int32_t s) override {
    return std::make_unique<DeviceStage>(schedrt::make_stage(c, s), b_.device().compute);
  }
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
    solver::apply_family_defaults(*solver::find_family(family), {ir::Field::Ranks, ir::Field::StagesPerRank, ir::Field::Microbatches}, p);
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
  o.backend = BackendKind::Cuda;
  o.hidden = 16;
  o.batch = 4;
  o.check = true;
  o.interpret = true;
  o.format = "json";
  o.timeout = timeout;
  return o;
}

using Backends = std::vector<std::unique_ptr<cuda::CudaBackend>>;
// Called once every rank's backend exists, before any rank runs (to arm a fault on their streams).
using BeforeRun = std::function<void(const Backends&)>;

// Every rank on the backend `make(rank)` builds, each on its own thread as run_cuda runs them, with
// the CPU stages on the device. Returns the first failure's message ("" when all finished) and
// rank 0's exit code.
// `wrap`: the CPU stages run as kernels through DeviceStages; else the backend makes its stages
// itself, from the registry's device implementations (a device stage registered by name).
template <class Make>
std::string run_ranks(cuda::InProcess& group, const ProgramInfo& info, const RunOptions& opt, int* rc, Make make,
                      const BeforeRun& before, bool wrap = true) {
  Backends backends(static_cast<size_t>(info.ranks));
  std::latch built(info.ranks), go(1);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < info.ranks; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<cuda::CudaBackend>& mine = backends[static_cast<size_t>(r)];
      try {
        mine = make(r);
      } catch (const std::exception& e) {
        group.abort("rank " + std::to_string(r) + ": " + e.what());
      }
      built.count_down();
      go.wait();
      if (!mine) return;
      try {
        DeviceStages b(*mine);
        int code = wrap ? rank_main(b, info, opt) : rank_main(*mine, info, opt);
        if (r == 0) *rc = code;
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        group.abort("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  built.wait();
  if (before && !group.aborted()) before(backends);
  go.count_down();
  for (auto& t : threads) t.join();
  return group.aborted() ? group.message() : "";
}

// Every rank on the local backend (as run_cuda's single-process local mode), all on device 0.
std::string run_local(const ProgramInfo& info, const RunOptions& opt, int* rc, const BeforeRun& before = {},
                      bool wrap = true) {
  cuda::InProcess group(info.ranks, BackendOptions{opt.timeout});
  return run_ranks(
      group, info, opt, rc, [&](int32_t r) { return cuda::make_local_backend(group, r, 0); }, before, wrap);
}

// Every rank on the NCCL backend, one thread and one fake device each: with the in-process host
// collectives (single-process NCCL mode), or with barrier, gather and exchange through NCCL too
// (what one process per rank does). The fake must have a device per rank.
std::string run_nccl(const ProgramInfo& info, const RunOptions& opt, bool in_process, int* rc,
                     const BeforeRun& before = {}) {
  cuda::install_libs_for_testing(fake_nccl::libs());
  fake_nccl::FakeWorld world(info.ranks);
  cuda::InProcess group(info.ranks, BackendOptions{opt.timeout});
  return run_ranks(
      group, info, opt, rc,
      [&](int32_t r) {
        return cuda::make_nccl_backend(in_process ? &group : nullptr, world.comm(r), r, info.ranks,
                                       BackendOptions{opt.timeout}, r, [&](const std::string& m) { group.abort(m); });
      },
      before);
}

std::string capture_stdout(const std::function<void()>& fn) {
  std::fflush(stdout);
  std::stringstream buf;
  std::streambuf* old = std::cout.rdbuf(buf.rdbuf());
  fn();
  std::cout.rdbuf(old);
  return buf.str();
}

constexpr uint64_t kSeeds = 8;

enum class Mode {
  Local,
  Nccl,             // single-process NCCL mode: host collectives in the process
  NcclCollectives,  // barrier, gather and exchange through NCCL too
};

struct Outcome {
  std::string failure;  // the first failure's message, "" when every rank finished
  std::string out;      // rank 0's report
  int rc = -1;          // rank 0's exit code
  fake_cuda::Stats stats;

  bool exact() const {
    return failure.empty() && rc == 0 && out.find("\"ok\": true") != std::string::npos &&
           out.find("\"max_rel_grad_diff\": 0,") != std::string::npos;
  }
};

// One run of `info` in `mode` on a fake device in random order from `seed`, a device per rank.
Outcome run(Mode mode, const ProgramInfo& info, const RunOptions& opt, uint64_t seed, const BeforeRun& before = {}) {
  FakeDevice fake({.order = fake_cuda::Order::Random, .seed = seed, .devices = info.ranks});
  Outcome r;
  r.out = capture_stdout([&] {
    r.failure = mode == Mode::Local ? run_local(info, opt, &r.rc, before)
                                    : run_nccl(info, opt, mode == Mode::Nccl, &r.rc, before);
  });
  r.stats = fake_cuda::stats();
  return r;
}

}  // namespace

TEST_CASE("lowered programs run on the local cuda backend and match the reference bit for bit, in any device order") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
  };
  for (Case c : {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"interleaved-1f1b", 2, 2, 4},
                 Case{"zb-h1", 3, 1, 6}}) {
    Program p(c.family, c.pp, c.vpp, c.m);
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

TEST_CASE("NCCL mode: one NCCL group per posted group, issued in order, on the strictest model") {
  struct Case {
    const char* family;
    int32_t pp, vpp, m;
  };
  for (Mode mode : {Mode::Nccl, Mode::NcclCollectives})
    for (Case c : {Case{"1f1b", 4, 1, 8}, Case{"zb-v", 4, 2, 8}, Case{"dualpipe", 4, 1, 8}, Case{"zb-h2", 3, 1, 6}}) {
      Program p(c.family, c.pp, c.vpp, c.m);
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

// --- The fake device itself, and what it catches ---

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
SCHEDRT_REGISTER_STAGE(fake_device_mlp, .description = "the CPU mlp stage as kernels on the fake device",
                       .has_reference = true, .memory = StageMemory::Host,
                       .make = [](const StageConfig& c, int32_t s, const StageEnv&) { return make_stage(as_mlp(c), s); });
SCHEDRT_REGISTER_STAGE(fake_device_mlp, .description = "the CPU mlp stage as kernels on the fake device",
                       .has_reference = true, .memory = StageMemory::Device,
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
  CHECK_THROWS_WITH(make_stage(c, 0), doctest::Contains("no stage `no_such_stage` is registered; registered stages: `mlp`"));
}
