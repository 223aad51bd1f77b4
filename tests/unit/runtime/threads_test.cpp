// The runtime end to end on the threads backend with hand-written two-rank programs: a correct
// one matches the sequential reference; a lost message trips the watchdog fast with a message
// that names the wait; an exception on one rank stops the other; a message out of channel order
// is caught by its header.

#include <doctest/doctest.h>

#include <chrono>

#include "backends/backends.h"
#include "run_internal.h"
#include "schedrt/context.h"
#include "schedrt/context_impl.h"
#include "schedrt/run.h"

using namespace schedrt;

namespace {

constexpr int32_t kStageToRank[] = {0, 1};
constexpr double kOnes[] = {1, 1};
constexpr int32_t kGroups[] = {2, 2};
constexpr int32_t kOps[] = {7, 7};

// 1F1B on two ranks with one microbatch, as schedc would lower it.
void rank0(Context& ctx) {
  ctx.forward(0, 0);
  ctx.post(0, {send(F(0, 0), 1, 0)});
  ctx.post(1, {recv(BW(0, 1), 1, 0)});
  ctx.wait(1, {BW(0, 1)});
  ctx.backward(0, 0);
  ctx.wait_all();
}

void rank1(Context& ctx) {
  ctx.post(0, {recv(F(0, 0), 0, 0)});
  ctx.wait(0, {F(0, 0)});
  ctx.forward(0, 1);
  ctx.backward(0, 1);
  ctx.post(1, {send(BW(0, 1), 0, 0)});
  ctx.wait_all();
}

// Receives microbatch 1's activation where microbatch 0's comes first on the channel.
void rank1_out_of_order(Context& ctx) {
  ctx.post(0, {recv(F(1, 0), 0, 0)});
  ctx.wait(0, {F(1, 0)});
  ctx.wait_all();
}

void rank0_two(Context& ctx) {
  ctx.forward(0, 0);
  ctx.forward(1, 0);
  ctx.post(0, {send(F(0, 0), 1, 0), send(F(1, 0), 1, 1)});
  ctx.wait_all();
}

const RankFn kGood[] = {rank0, rank1};
const RankFn kBadOrder[] = {rank0_two, rank1_out_of_order};

ProgramInfo info(const RankFn* fns, int32_t microbatches = 1) {
  ProgramInfo i;
  i.source = "threads_test";
  i.ranks = 2;
  i.stages = 2;
  i.microbatches = microbatches;
  i.stage_to_rank = kStageToRank;
  i.cost_f = i.cost_b = i.cost_w = kOnes;
  i.simulated_makespan = 7;
  i.groups_per_rank = kGroups;
  i.ops_per_rank = kOps;
  i.rank_fns = fns;
  return i;
}

RunOptions options(double timeout) {
  RunOptions o;
  o.hidden = 8;
  o.batch = 2;
  o.timeout = timeout;
  o.format = "json";
  return o;
}

// Runs on threads and returns the first failure's message ("" when every rank finished).
std::string run_threads_for(const ProgramInfo& pi, const RunOptions& o, double* seconds) {
  auto start = std::chrono::steady_clock::now();
  BackendOptions bo;
  bo.timeout_s = o.timeout;
  std::string msg = run_threads(pi.ranks, bo, [&](Backend& b) { rank_main(b, pi, o); });
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return msg;
}

}  // namespace

TEST_CASE("a correct two-rank program matches the sequential reference exactly") {
  ProgramInfo pi = info(kGood);
  RunOptions o = options(30);
  o.check = true;
  CHECK(run(pi, o) == 0);
  o.dtype = Dtype::F32;
  CHECK(run(pi, o) == 0);
}

TEST_CASE("a lost message trips the watchdog within its timeout, naming the wait") {
  ProgramInfo pi = info(kGood);
  RunOptions o = options(0.3);
  o.fault = "drop-send=0";
  double seconds = 0;
  std::string msg = run_threads_for(pi, o, &seconds);
  INFO(msg);
  // Both ranks end up waiting; whichever gives up first reports.
  bool rank1 = msg.find("rank 1 waited 0.3 s for `F0.s0` (activation) from rank 0, message #0 on channel 0->1") !=
               std::string::npos;
  bool rank0 = msg.find("rank 0 waited 0.3 s for `BW0.s1` (gradient) from rank 1, message #0 on channel 1->0") !=
               std::string::npos;
  CHECK((rank0 || rank1));
  CHECK(msg.find("; rank ") != std::string::npos);  // and what the other rank is doing
  CHECK(seconds < 5);
}

TEST_CASE("an exception on one rank stops every rank with its message") {
  ProgramInfo pi = info(kGood);
  RunOptions o = options(30);
  o.fault = "throw=1";
  double seconds = 0;
  std::string msg = run_threads_for(pi, o, &seconds);
  CHECK(msg == "rank 1: injected fault at `F0.s1` (--fault throw=1)");
  CHECK(seconds < 5);  // rank 0 was released at once, not by its 30 s watchdog
}

TEST_CASE("a message taken out of channel order is rejected by its header") {
  ProgramInfo pi = info(kBadOrder, 2);
  double seconds = 0;
  std::string msg = run_threads_for(pi, options(30), &seconds);
  CHECK(msg == "rank 1: rank 1 expected `F1.s0` as message #0 from rank 0, got `F0.s0` (#0)");
}

TEST_CASE("the op-status word round-trips") {
  OpStatus s{OpCode::Backward, BW(1234, 57), -1};
  OpStatus u = OpStatus::unpack(s.pack());
  CHECK(u.code == OpCode::Backward);
  CHECK(u.action == BW(1234, 57));
  CHECK(u.describe() == "running `BW1234.s57`");
  OpStatus w{OpCode::Wait, {}, 77};
  CHECK(OpStatus::unpack(w.pack()).describe() == "waiting in `wait g77`");
}
