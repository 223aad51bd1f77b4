#pragma once
// The harness of the cuda backend's tests on the fake CUDA runtime (fake_cudart.h) and the fake
// NCCL (fake_nccl.h): the CPU stages run as kernels on a rank's compute stream, schedc's lowered
// programs as the op tables a generated main.cpp holds, and every rank of a run on its own thread
// in local or NCCL mode, with the fake device in a random order from a seed.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_backend.h"
#include "codegen/lower.h"
#include "fake_cudart.h"
#include "fake_nccl.h"
#include "run_internal.h"
#include "solver/families/families.h"

namespace schedrt::fake_backend {

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
  template <class Body> void launch(std::initializer_list<DeviceStage*> users, Body body) {
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
  void exchange(int32_t p, const void* s, size_t sn, void* r, size_t rn) override { b_.exchange(p, s, sn, r, rn); }
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
  std::optional<double> device_check_tolerance(const StageConfig& c) const override {
    return b_.device_check_tolerance(c);
  }
  void synchronize() override { b_.synchronize(); }

 private:
  cuda::CudaBackend& b_;
};

inline Action action_of(const schedc::ir::Action& a) {
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

  /// `directions` > 0 sets the number of directions (else the family's default).
  Program(const std::string& family, int32_t pp, int32_t vpp, int32_t m, int32_t directions = 0) {
    using namespace schedc;
    ir::Problem p;
    p.ranks = pp;
    p.stages_per_rank = vpp;
    p.microbatches = m;
    std::vector<ir::Field> given = {ir::Field::Ranks, ir::Field::StagesPerRank, ir::Field::Microbatches};
    if (directions > 0) p.directions = directions, given.push_back(ir::Field::Direction);
    solver::apply_family_defaults(*solver::find_family(family), given, p);
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
            for (ir::MessageId id : op.needs)
              needs[static_cast<size_t>(r)].push_back(action_of(prog.message(id).producer));
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
      tables.push_back(RankTable{ops[static_cast<size_t>(r)].data(),
                                 static_cast<int32_t>(ops[static_cast<size_t>(r)].size()),
                                 transfers[static_cast<size_t>(r)].data(), needs[static_cast<size_t>(r)].data()});
    info.source = "fake_backend_test";
    info.ranks = R;
    info.stages = S;
    info.microbatches = m;
    info.directions = pb.num_directions();
    info.stage_to_rank = stage_to_rank.data();
    info.cost_f = info.cost_b = info.cost_w = cost.data();
    info.simulated_makespan = 1;
    info.groups_per_rank = groups.data();
    info.ops_per_rank = op_counts.data();
    info.tables = tables.data();
  }
};

inline RunOptions options(double timeout = 20) {
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
inline std::string run_ranks(cuda::InProcess& group, const ProgramInfo& info, const RunOptions& opt, int* rc, Make make,
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
inline std::string run_local(const ProgramInfo& info, const RunOptions& opt, int* rc, const BeforeRun& before = {},
                             bool wrap = true) {
  cuda::InProcess group(info.ranks, BackendOptions{opt.timeout});
  return run_ranks(
      group, info, opt, rc, [&](int32_t r) { return cuda::make_local_backend(group, r, 0); }, before, wrap);
}

// Every rank on the NCCL backend, one thread and one fake device each: with the in-process host
// collectives (single-process NCCL mode), or with barrier, gather and exchange through NCCL too
// (what one process per rank does). The fake must have a device per rank.
inline std::string run_nccl(const ProgramInfo& info, const RunOptions& opt, bool in_process, int* rc,
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

inline std::string capture_stdout(const std::function<void()>& fn) {
  std::fflush(stdout);
  std::stringstream buf;
  std::streambuf* old = std::cout.rdbuf(buf.rdbuf());
  fn();
  std::cout.rdbuf(old);
  return buf.str();
}

inline constexpr uint64_t kSeeds = 8;

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
inline Outcome run(Mode mode, const ProgramInfo& info, const RunOptions& opt, uint64_t seed,
                   const BeforeRun& before = {}) {
  FakeDevice fake({.order = fake_cuda::Order::Random, .seed = seed, .devices = info.ranks});
  Outcome r;
  r.out = capture_stdout([&] {
    r.failure = mode == Mode::Local ? run_local(info, opt, &r.rc, before)
                                    : run_nccl(info, opt, mode == Mode::Nccl, &r.rc, before);
  });
  r.stats = fake_cuda::stats();
  return r;
}

// Rank 0 sends F0.s0 and rank 1 expects F1.s0 as that channel's first message, on backends from
// `make(rank)`; returns how the group failed.
template <class Make> inline std::string out_of_order_failure(cuda::InProcess& group, Make make) {
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

}  // namespace schedrt::fake_backend
