#include "profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>
#include <sstream>

#include "run_internal.h"
#include "schedrt/context_impl.h"

namespace schedrt {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kRoundS = 0.02;  // one timed batch of an action
constexpr int kRounds = 5;        // batches per action; the median counts
constexpr int kPingPongs = 50;    // round trips per batch of a transfer

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per call of `fn`: the median of batches sized to take about kRoundS each, every
// batch ending with the device's work finished (so that a GPU's queued kernels count).
double time_us(Backend& backend, const std::function<void()>& fn) {
  fn();
  fn();
  backend.synchronize();
  Clock::time_point t = Clock::now();
  fn();
  backend.synchronize();
  double one = since(t);
  int k = static_cast<int>(std::clamp(std::ceil(kRoundS / std::max(one, 1e-7)), 1.0, 1000.0));
  std::vector<double> per;
  for (int round = 0; round < kRounds; ++round) {
    t = Clock::now();
    for (int i = 0; i < k; ++i) fn();
    backend.synchronize();
    per.push_back(since(t) / k);
  }
  return median(per) * 1e6;
}

struct StageTimes {
  int32_t stage = 0;
  double f = 0, b = 0, w = 0, fb = -1;
};

struct PairTime {
  int32_t a = 0, b = 0;
  double one_way_us = 0;  // a's record; -1 in b's
  double side_us = 0;     // what one header-only message costs this rank's executor calls
};

// Buffers with room for the message header in front, as the Context's slots.
struct Buffers {
  Backend& backend;
  std::vector<void*> owned;
  std::byte* get(size_t bytes) {
    void* p = backend.allocate(kHeaderBytes + bytes);
    backend.zero(p, kHeaderBytes + bytes);
    owned.push_back(p);
    return static_cast<std::byte*>(p);
  }
  ~Buffers() {
    for (void* p : owned) backend.deallocate(p);
  }
};

StageTimes profile_stage(Backend& backend, const ProgramInfo& info, const StageConfig& cfg, int32_t s) {
  std::unique_ptr<Stage> stage = backend.make_stage(cfg, s);
  const size_t bytes = stage->boundary_bytes();
  Buffers buf{backend, {}};
  const bool first = s == 0, last = s + 1 == info.stages;
  void* in = first ? nullptr : buf.get(bytes) + kHeaderBytes;
  void* out = last ? nullptr : buf.get(bytes) + kHeaderBytes;
  void* grad_out = last ? nullptr : buf.get(bytes) + kHeaderBytes;
  void* grad_in = first ? nullptr : buf.get(bytes) + kHeaderBytes;
  // Alternate between two microbatches, so that one action does not find the last one's data in
  // a cache where a pipeline would not.
  const int32_t mbs = std::min<int32_t>(2, info.microbatches);
  int32_t next = 0;
  auto mb = [&] { return next++ % mbs; };
  StageTimes t;
  t.stage = s;
  t.f = time_us(backend, [&] { stage->forward(mb(), in, out); });
  t.b = time_us(backend, [&] { stage->backward_input(mb(), grad_out, grad_in); });
  t.w = time_us(backend, [&] { stage->backward_weight(mb()); });
  if (info.cost_fb) {
    t.fb = time_us(backend, [&] {
      int32_t m = mb();
      stage->overlapped(m, in, out, *stage, B(m, s), grad_out, grad_in);
    });
  }
  backend.synchronize();
  return t;
}

// A ping-pong of one boundary tensor between `a` (which times it) and `b`.
double ping_pong(Backend& backend, int32_t a, int32_t b, size_t bytes) {
  const int32_t me = backend.rank(), peer = me == a ? b : a;
  Buffers buf{backend, {}};
  std::byte* out = buf.get(bytes);
  std::byte* in = buf.get(bytes);
  int32_t seq = 0, group = 0;
  std::vector<PostedTransfer> keep;  // never reallocated: the backend holds spans until wait_all
  keep.reserve(2 * (3 + kRounds * kPingPongs));
  auto header = [&](int32_t src) {
    MessageHeader h;
    h.kind = static_cast<int32_t>(Kind::F);
    h.mb = seq;
    h.stage = 0;
    h.seq = seq;
    h.src = src;
    h.bytes = static_cast<int64_t>(bytes);
    return h;
  };
  auto send_one = [&] {
    keep.push_back(PostedTransfer{send(F(seq, 0), peer, seq), header(me), out, bytes});
    backend.post(group, std::span<const PostedTransfer>(&keep.back(), 1));
    ++group;
  };
  auto recv_one = [&] {
    keep.push_back(PostedTransfer{recv(F(seq, 0), peer, seq), header(peer), in, bytes});
    backend.post(group, std::span<const PostedTransfer>(&keep.back(), 1));
    int32_t which = 0;
    backend.wait(group, std::span<const int32_t>(&which, 1));
    ++group;
  };
  auto round_trip = [&] {
    if (me == a) send_one(), recv_one();
    else recv_one(), send_one();
    ++seq;
  };
  for (int i = 0; i < 3; ++i) round_trip();
  backend.synchronize();
  std::vector<double> per;
  for (int round = 0; round < kRounds; ++round) {
    Clock::time_point t = Clock::now();
    for (int i = 0; i < kPingPongs; ++i) round_trip();
    backend.synchronize();
    per.push_back(since(t) / kPingPongs / 2);
  }
  backend.wait_all();
  return median(per) * 1e6;
}

// What every compute action costs beyond its work, in two parts (microseconds):
struct ActionOverhead {
  // the executor's calls around it (two clock reads, the status word, the backend's op hooks),
  // timed around the noop stage;
  double executor = 0;
  // the stage's own fixed cost per call (a launch, a synchronisation, a sleep's wake-up), timed as
  // a forward of this stage made tiny: one row, one unit of width, one layer, holds of ~0.
  double stage = 0;
};

ActionOverhead action_overhead_us(Backend& backend, const StageConfig& cfg) {
  ActionOverhead out;
  StageConfig noop = cfg;
  noop.stage = "noop";
  std::unique_ptr<Stage> none = backend.make_stage(noop, 0);
  std::vector<Clock::time_point> stamps(2);  // the Context's two clock reads per op
  out.executor = time_us(backend, [&] {
    stamps[0] = Clock::now();
    backend.publish_status(OpStatus{OpCode::Forward, F(0, 0), -1}.pack());
    backend.op_begin(OpCode::Forward);
    none->forward(0, nullptr, nullptr);
    backend.op_end(OpCode::Forward);
    stamps[1] = Clock::now();
  });
  StageConfig tiny = cfg;
  tiny.hidden = tiny.batch = tiny.layers = 1;
  tiny.layers_per_stage.clear();
  // The synthetic stage holds for 1 us (subtracted): a hold of zero returns before sleeping.
  const double held_us = 1;
  tiny.cost_f.assign(static_cast<size_t>(std::max(cfg.num_stages, 1)), 1.0);
  tiny.ms_per_unit = held_us / 1000;
  std::unique_ptr<Stage> stage = backend.make_stage(tiny, 0);
  Buffers buf{backend, {}};
  void* out_buf = tiny.num_stages > 1 ? buf.get(stage->boundary_bytes()) + kHeaderBytes : nullptr;
  out.stage = time_us(backend, [&] { stage->forward(0, nullptr, out_buf); });
  if (cfg.stage == "synthetic") out.stage = std::max(0.0, out.stage - held_us);
  return out;
}

// What one message costs the executor calls of the two ranks, timed with header-only messages
// from `a` to `b`: on `a` the posts of the sends, then (once they have all arrived) on `b` the
// posts of the receives and the waits for them, each with the Context's status and op hooks. Every
// rank calls it (it holds barriers); the mean per message on this rank's side, 0 on the others.
// The spec's `message_overhead` is the mean of the sides, as the model charges a message to the
// action at each end.
double message_side_us(Backend& backend, int32_t a, int32_t b) {
  const int32_t me = backend.rank(), n = kRounds * kPingPongs;
  const bool sender = me == a, receiver = me == b;
  Buffers buf{backend, {}};
  std::vector<PostedTransfer> keep;  // the backend holds spans until wait_all
  if (sender || receiver) {
    std::byte* slot = buf.get(0);
    for (int32_t i = 0; i < n; ++i) {
      MessageHeader h;
      h.kind = static_cast<int32_t>(Kind::F);
      h.mb = h.seq = i;
      h.src = a;
      keep.push_back(PostedTransfer{sender ? send(F(i, 0), b, i) : recv(F(i, 0), a, i), h, slot, 0});
    }
  }
  auto op = [&](OpCode code, int32_t group, auto&& body) {
    backend.publish_status(OpStatus{code, {}, group}.pack());
    backend.op_begin(code);
    body();
    backend.op_end(code);
  };
  double took = 0;
  backend.barrier();
  if (sender) {
    Clock::time_point t = Clock::now();
    for (int32_t i = 0; i < n; ++i)
      op(OpCode::Post, i, [&] { backend.post(i, std::span<const PostedTransfer>(&keep[static_cast<size_t>(i)], 1)); });
    took = since(t);
  }
  backend.barrier();
  if (receiver) {
    Clock::time_point t = Clock::now();
    const int32_t first = 0;
    for (int32_t i = 0; i < n; ++i) {
      op(OpCode::Post, i, [&] { backend.post(i, std::span<const PostedTransfer>(&keep[static_cast<size_t>(i)], 1)); });
      op(OpCode::Wait, i, [&] { backend.wait(i, std::span<const int32_t>(&first, 1)); });
    }
    took = since(t);
  }
  backend.barrier();
  if (sender || receiver) backend.wait_all();
  return took / n * 1e6;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

}  // namespace

int profile_rank(Backend& backend, const ProgramInfo& info, const RunOptions& opt) {
  const int32_t me = backend.rank(), S = info.stages;
  StageConfig cfg = stage_config(info, opt);
  std::vector<StageTimes> mine;
  for (int32_t r = 0; r < info.ranks; ++r) {
    backend.barrier();
    if (r != me) continue;
    for (int32_t s = 0; s < S; ++s)
      if (info.rank_of(0, s) == me) mine.push_back(profile_stage(backend, info, cfg, s));
  }
  // The boundary tensor's size, as the stages say (the same for every stage).
  size_t bytes = 0;
  bytes = backend.make_stage(cfg, 0)->boundary_bytes();
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (int32_t d = 0; d < info.num_directions(); ++d)
    for (int32_t s = 0; s + 1 < S; ++s) {
      int32_t a = info.rank_of(d, s), b = info.rank_of(d, s + 1);
      if (a != b) pairs.emplace(std::min(a, b), std::max(a, b));
    }
  std::vector<PairTime> timed;
  for (auto [a, b] : pairs) {
    backend.barrier();
    if (me != a && me != b) continue;
    double us = ping_pong(backend, a, b, bytes);
    timed.push_back(PairTime{a, b, me == a ? us : -1, 0});
  }
  // Every rank takes part (the measurement holds barriers), one pair at a time.
  size_t mine_at = 0;
  for (auto [a, b] : pairs) {
    double side = message_side_us(backend, a, b);
    if (me == a || me == b) timed[mine_at++].side_us = side;
  }
  // Every rank's own, one at a time: the others wait at the barrier.
  ActionOverhead action_us;
  for (int32_t r = 0; r < info.ranks; ++r) {
    backend.barrier();
    if (r == me) action_us = action_overhead_us(backend, cfg);
  }
  backend.barrier();
  // Gather: each rank's stage times and the pairs it timed.
  int64_t counts[2] = {static_cast<int64_t>(mine.size()), static_cast<int64_t>(timed.size())};
  // Sized first and filled with memcpy: GCC 12's -Wstringop-overflow misreads vector::insert of
  // bytes at -O3.
  std::vector<std::byte> blob(sizeof counts + sizeof action_us + mine.size() * sizeof(StageTimes) +
                              timed.size() * sizeof(PairTime));
  size_t filled = 0;
  auto put = [&](const void* p, size_t n) {
    if (n > 0) std::memcpy(blob.data() + filled, p, n);
    filled += n;
  };
  put(counts, sizeof counts);
  put(&action_us, sizeof action_us);
  put(mine.data(), mine.size() * sizeof(StageTimes));
  put(timed.data(), timed.size() * sizeof(PairTime));
  auto all = backend.gather(blob);
  if (me != 0) return 0;
  std::vector<double> f(static_cast<size_t>(S)), b(static_cast<size_t>(S)), w(static_cast<size_t>(S)),
      fb(static_cast<size_t>(S));
  std::vector<PairTime> pair_times, sides;
  ActionOverhead action_sum;
  for (const auto& blob_r : all) {
    int64_t c[2];
    std::memcpy(c, blob_r.data(), sizeof c);
    ActionOverhead rank_action_us;
    std::memcpy(&rank_action_us, blob_r.data() + sizeof c, sizeof rank_action_us);
    action_sum.executor += rank_action_us.executor;
    action_sum.stage += rank_action_us.stage;
    const std::byte* p = blob_r.data() + sizeof c + sizeof rank_action_us;
    for (int64_t i = 0; i < c[0]; ++i, p += sizeof(StageTimes)) {
      StageTimes t;
      std::memcpy(&t, p, sizeof t);
      size_t s = static_cast<size_t>(t.stage);
      f[s] = t.f, b[s] = t.b, w[s] = t.w, fb[s] = t.fb;
    }
    for (int64_t i = 0; i < c[1]; ++i, p += sizeof(PairTime)) {
      PairTime t;
      std::memcpy(&t, p, sizeof t);
      (t.one_way_us >= 0 ? pair_times : sides).push_back(t);
    }
  }
  std::sort(pair_times.begin(), pair_times.end(),
            [](const PairTime& x, const PairTime& y) { return std::pair(x.a, x.b) < std::pair(y.a, y.b); });
  std::vector<double> per_stage_layers(static_cast<size_t>(S));
  for (int32_t s = 0; s < S; ++s) per_stage_layers[static_cast<size_t>(s)] = cfg.layers_of(s);
  std::ostringstream o;
  o << "{\"format\": \"schedrt.profile\", \"version\": 2, \"source\": " << json_quote(info.source)
    << ", \"backend\": " << json_quote(backend.name()) << ", \"stage\": " << json_quote(cfg.stage)
    << ", \"dtype\": " << json_quote(to_string(cfg.dtype)) << ", \"hidden\": " << cfg.hidden
    << ", \"layers\": " << cfg.layers << ", \"layers_per_stage\": " << list(per_stage_layers)
    << ", \"batch\": " << cfg.batch << ", \"ranks\": " << info.ranks << ", \"stages\": " << S
    << ", \"boundary_bytes\": " << bytes << ", \"unit\": \"us\", \"F\": " << list(f) << ", \"B\": " << list(b)
    << ", \"W\": " << list(w) << ", \"FB\": " << (info.cost_fb ? list(fb) : "null");
  double comm = 0;
  for (const PairTime& t : pair_times) comm += t.one_way_us;
  o << ", \"comm\": " << (pair_times.empty() ? "null" : num(comm / static_cast<double>(pair_times.size())))
    << ", \"transfers\": [";
  for (size_t i = 0; i < pair_times.size(); ++i)
    o << (i ? ", " : "") << "{\"ranks\": [" << pair_times[i].a << ", " << pair_times[i].b
      << "], \"one_way_us\": " << num(pair_times[i].one_way_us) << "}";
  o << "]";
  // Version 2: what every compute action costs beyond its work (every rank's, averaged; the F, B
  // and W above include its stage part) and every message at each end (both ends of every
  // neighbouring pair, averaged).
  double message = 0;
  for (const PairTime& t : pair_times) message += t.side_us;
  for (const PairTime& t : sides) message += t.side_us;
  const size_t ends = pair_times.size() + sides.size();
  const auto ranks_n = static_cast<double>(all.size());
  o << ", \"action_overhead\": " << num((action_sum.executor + action_sum.stage) / ranks_n)
    << ", \"stage_overhead\": " << num(action_sum.stage / ranks_n)
    << ", \"message_overhead\": " << (ends == 0 ? "null" : num(message / static_cast<double>(ends)));
  if (cfg.stage == "mlp") {
    // Two FLOPs per multiply-add of the GEMMs; stage 0's B skips its first layer's input gradient.
    double gemm = 2.0 * cfg.batch * static_cast<double>(cfg.hidden) * cfg.hidden;
    std::vector<double> ff(per_stage_layers.begin(), per_stage_layers.end());
    for (double& x : ff) x *= gemm;
    std::vector<double> fw = ff, fbk = ff;
    fbk[0] = gemm * std::max(0.0, per_stage_layers[0] - 1);
    o << ", \"flops\": {\"F\": " << list(ff) << ", \"B\": " << list(fbk) << ", \"W\": " << list(fw) << "}";
  } else {
    o << ", \"flops\": null";
  }
  o << "}\n";
  if (opt.profile_path == "-") {
    std::cout << o.str() << std::flush;
    return 0;
  }
  std::ofstream file(opt.profile_path, std::ios::binary | std::ios::trunc);
  file << o.str();
  file.flush();
  if (!file) {
    std::fprintf(stderr, "schedrt: error: cannot write the profile to `%s`\n", opt.profile_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace schedrt
