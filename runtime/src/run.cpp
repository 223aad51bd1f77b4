// One rank's run: build its stages and Context, run the steps, gather at rank 0, and there
// compare with the sequential reference (--check), print the report and write the trace.

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "run_internal.h"
#include "schedrt/context.h"
#include "schedrt/context_impl.h"
#include "schedrt/trace.h"

namespace schedrt {

namespace {

class Writer {
 public:
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void blob(const std::vector<std::byte>& b) {
    i64(static_cast<int64_t>(b.size()));
    raw(b.data(), b.size());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  std::vector<std::byte> take() { return std::move(buf_); }

 private:
  std::vector<std::byte> buf_;
};

class Reader {
 public:
  explicit Reader(const std::vector<std::byte>& b) : b_(b) {}
  int64_t i64() { return get<int64_t>(); }
  double f64() { return get<double>(); }
  std::vector<std::byte> blob() {
    size_t n = static_cast<size_t>(i64());
    std::vector<std::byte> out(b_.begin() + static_cast<long>(pos_), b_.begin() + static_cast<long>(pos_ + n));
    pos_ += n;
    return out;
  }
  template <class T> T get() {
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }

 private:
  const std::vector<std::byte>& b_;
  size_t pos_ = 0;
};

// What one rank reports to rank 0.
struct RankResult {
  int32_t rank = 0;
  int64_t busy_ns = 0;  // last step: time in ops minus time blocked in the backend
  std::vector<int64_t> step_end_ns;
  std::vector<int64_t> step_busy_ns;
  std::vector<int64_t> step_cpu_ns;  // CPU time of the rank's thread during the program
  std::vector<std::pair<int32_t, double>> losses;
  std::vector<std::pair<int32_t, std::vector<std::byte>>> grads;
  std::vector<OpRecord> records;
};

std::vector<std::byte> serialize(const RankResult& r) {
  Writer w;
  w.i64(r.rank);
  w.i64(r.busy_ns);
  w.i64(static_cast<int64_t>(r.step_end_ns.size()));
  for (int64_t t : r.step_end_ns) w.i64(t);
  for (int64_t t : r.step_busy_ns) w.i64(t);
  for (int64_t t : r.step_cpu_ns) w.i64(t);
  w.i64(static_cast<int64_t>(r.losses.size()));
  for (auto [mb, l] : r.losses) w.i64(mb), w.f64(l);
  w.i64(static_cast<int64_t>(r.grads.size()));
  for (const auto& [s, g] : r.grads) w.i64(s), w.blob(g);
  w.i64(static_cast<int64_t>(r.records.size()));
  for (const OpRecord& rec : r.records) w.raw(&rec, sizeof rec);
  return w.take();
}

RankResult deserialize(const std::vector<std::byte>& b) {
  Reader rd(b);
  RankResult r;
  r.rank = static_cast<int32_t>(rd.i64());
  r.busy_ns = rd.i64();
  int64_t steps = rd.i64();
  for (int64_t n = steps; n > 0; --n) r.step_end_ns.push_back(rd.i64());
  for (int64_t n = steps; n > 0; --n) r.step_busy_ns.push_back(rd.i64());
  for (int64_t n = steps; n > 0; --n) r.step_cpu_ns.push_back(rd.i64());
  for (int64_t n = rd.i64(); n > 0; --n) {
    int32_t mb = static_cast<int32_t>(rd.i64());
    r.losses.emplace_back(mb, rd.f64());
  }
  for (int64_t n = rd.i64(); n > 0; --n) {
    int32_t s = static_cast<int32_t>(rd.i64());
    r.grads.emplace_back(s, rd.blob());
  }
  for (int64_t n = rd.i64(); n > 0; --n) r.records.push_back(rd.get<OpRecord>());
  return r;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// For people: six significant digits.
std::string short_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::vector<TraceEvent> trace_events(const std::vector<RankResult>& results) {
  std::vector<TraceEvent> out;
  static const char* const kKinds[] = {"F", "B", "W", "BW", "R"};
  for (const RankResult& r : results)
    for (const OpRecord& rec : r.records) {
      TraceEvent e;
      e.rank = r.rank;
      e.ts_us = static_cast<double>(rec.start_ns) / 1e3;
      e.dur_us = static_cast<double>(rec.end_ns - rec.start_ns) / 1e3;
      switch (rec.code) {
        case OpCode::Overlapped:
          e.name = "(" + format(rec.a) + " " + format(rec.b) + ")";
          e.kind = "FB";
          e.microbatch = rec.a.mb;
          e.stage = rec.a.stage;
          break;
        case OpCode::Post:
          e.thread = TraceThread::Comm;
          e.name = "post g" + std::to_string(rec.group);
          e.kind = "post";
          break;
        case OpCode::Wait:
          e.thread = TraceThread::Comm;
          e.name = "wait g" + std::to_string(rec.group) + " (" + format(rec.a) + ")";
          e.kind = "wait";
          break;
        case OpCode::WaitAll:
          e.thread = TraceThread::Comm;
          e.name = "wait all";
          e.kind = "wait";
          break;
        default:
          e.name = format(rec.a);
          e.kind = kKinds[static_cast<int>(rec.a.kind)];
          e.microbatch = rec.a.mb;
          e.stage = rec.a.stage;
      }
      out.push_back(std::move(e));
    }
  return out;
}

struct Comparison {
  bool complete = true;
  double max_abs = 0;
  double max_rel = 0;
};

Comparison compare(const ProgramInfo& info, const StageConfig& cfg, const std::vector<RankResult>& results,
                   const Reference& ref) {
  Comparison c;
  std::vector<const std::vector<std::byte>*> grads(static_cast<size_t>(info.stages), nullptr);
  for (const RankResult& r : results)
    for (const auto& [s, g] : r.grads) grads[static_cast<size_t>(s)] = &g;
  for (int32_t s = 0; s < info.stages; ++s) {
    const auto* g = grads[static_cast<size_t>(s)];
    const auto& want = ref.gradients[static_cast<size_t>(s)];
    if (!g) {
      c.complete = c.complete && want.empty();  // a stage without weights (0 layers) sends none
      continue;
    }
    // Stages may differ in size (the model's partition): each is read by a stage of its own.
    std::vector<double> got = make_stage(cfg, s)->gradient_values(g->data());
    if (got.size() != want.size()) {
      c.complete = false;
      continue;
    }
    double diff = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      // A NaN on either side is a mismatch (std::max would drop it: every comparison with NaN is
      // false), reported as an infinite difference (`null` in the JSON report).
      double d = std::abs(got[i] - want[i]);
      diff = std::max(diff, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
      scale = std::max(scale, std::abs(want[i]));
    }
    c.max_abs = std::max(c.max_abs, diff);
    c.max_rel = std::max(c.max_rel, scale > 0 ? diff / scale : diff);
  }
  return c;
}

int report(Backend& backend, const ProgramInfo& info, const RunOptions& opt, const StageConfig& cfg,
           const std::vector<RankResult>& results) {
  const int32_t m = info.microbatches;
  std::vector<double> mb_loss(static_cast<size_t>(m), 0.0);
  for (const RankResult& r : results)
    for (auto [mb, l] : r.losses) mb_loss[static_cast<size_t>(mb)] = l;
  double loss = 0;
  for (double l : mb_loss) loss += l;
  loss /= m;
  size_t steps = results.front().step_end_ns.size();
  std::vector<double> makespans(steps, 0.0), step_busy(steps, 0.0), step_cpu(steps, 0.0);
  int64_t ops = 0, busy = 0;
  for (const RankResult& r : results) {
    for (size_t k = 0; k < steps; ++k) {
      makespans[k] = std::max(makespans[k], static_cast<double>(r.step_end_ns[k]) / 1e9);
      step_busy[k] += static_cast<double>(r.step_busy_ns[k]);
      step_cpu[k] += static_cast<double>(r.step_cpu_ns[k]);
    }
    ops += static_cast<int64_t>(r.records.size());
    busy += r.busy_ns;
  }
  double measured = makespans.back();
  double simulated_s = info.simulated_makespan * opt.ms_per_unit / 1e3;
  bool synthetic = cfg.stage == "synthetic";
  // A stage with a sequential reference has a loss and weights: report the loss and the sizes.
  bool mlp = has_sequential_reference(cfg.stage);
  bool ok = true;
  Reference ref;
  Comparison cmp;
  double loss_rel = 0;
  double tolerance = cfg.dtype == Dtype::F64 ? 1e-12 : 1e-5;
  // A device backend's stages compute in their own precision and hand back fp64 gradients: the
  // reference then runs in fp64, with the backend's tolerance for that precision.
  StageConfig ref_cfg = cfg;
  if (auto t = backend.device_check_tolerance(cfg)) tolerance = *t, ref_cfg.dtype = Dtype::F64;
  if (opt.check) {
    ref = run_reference(info, ref_cfg);
    cmp = compare(info, ref_cfg, results, ref);
    loss_rel = std::abs(loss - ref.loss) / std::max(std::abs(ref.loss), 1e-300);
    ok = cmp.complete && cmp.max_rel <= tolerance && loss_rel <= tolerance;
  }
  double ns_per_op = ops ? static_cast<double>(busy) / static_cast<double>(ops) : 0;
  // What each stage was built with and built: its layers, and the bytes of its weight gradient as
  // the ranks handed it back (0 for a stage without weights).
  std::vector<size_t> grad_bytes(static_cast<size_t>(info.stages), 0);
  for (const RankResult& r : results)
    for (const auto& [s, g] : r.grads) grad_bytes[static_cast<size_t>(s)] = g.size();
  auto list = [](const auto& v, const char* sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
    return out;
  };
  const std::vector<int32_t>& lps = cfg.layers_per_stage;
  const bool uniform_layers = std::all_of(lps.begin(), lps.end(), [&](int32_t l) { return l == cfg.layers; });
  const std::string layers_text = uniform_layers ? std::to_string(cfg.layers) : "[" + list(lps, ", ") + "]";
  if (opt.format == "json") {
    std::ostringstream o;
    o << "{\"ok\": " << (ok ? "true" : "false") << ", \"backend\": " << json_quote(backend.name())
      << ", \"ranks\": " << info.ranks << ", \"microbatches\": " << m << ", \"stage\": " << json_quote(cfg.stage)
      << ", \"dtype\": " << json_quote(to_string(cfg.dtype)) << ", \"layers_per_stage\": [" << list(lps, ", ")
      << "], \"gradient_bytes_per_stage\": [" << list(grad_bytes, ", ")
      << "], \"embedding\": " << (cfg.embedding ? "true" : "false") << ", \"head\": " << (cfg.head ? "true" : "false")
      << ", \"steps\": " << steps << ", \"interpret\": " << (opt.interpret ? "true" : "false")
      << ", \"loss\": " << (mlp ? num(loss) : "null")
      << ", \"reference_loss\": " << (opt.check ? num(ref.loss) : "null")
      << ", \"max_abs_grad_diff\": " << (opt.check ? num(cmp.max_abs) : "null")
      << ", \"max_rel_grad_diff\": " << (opt.check ? num(cmp.max_rel) : "null")
      << ", \"tolerance\": " << (opt.check ? num(tolerance) : "null") << ", \"measured_makespan_s\": " << num(measured)
      << ", \"step_makespans_s\": [";
    for (size_t k = 0; k < steps; ++k) o << (k ? ", " : "") << num(makespans[k]);
    o << "], \"simulated_makespan\": " << num(info.simulated_makespan) << ", \"ms_per_unit\": " << num(opt.ms_per_unit)
      << ", \"simulated_makespan_s\": " << num(simulated_s)
      << ", \"fidelity\": " << (synthetic && simulated_s > 0 ? num(measured / simulated_s) : "null")
      << ", \"ops\": " << ops << ", \"busy_ns_per_op\": " << num(ns_per_op) << ", \"step_busy_ns_per_op\": [";
    for (size_t k = 0; k < steps; ++k) o << (k ? ", " : "") << num(ops ? step_busy[k] / static_cast<double>(ops) : 0);
    o << "], \"step_cpu_ns_per_op\": [";
    for (size_t k = 0; k < steps; ++k) o << (k ? ", " : "") << num(ops ? step_cpu[k] / static_cast<double>(ops) : 0);
    o << "]}\n";
    std::cout << o.str() << std::flush;
  } else {
    std::ostringstream o;
    o << "schedrt: " << info.source << ": " << info.ranks << " ranks on " << backend.name() << ", stage " << cfg.stage;
    if (mlp)
      o << " (" << to_string(cfg.dtype) << ", hidden " << cfg.hidden << ", layers " << layers_text << ", batch "
        << cfg.batch << ")";
    o << ", " << m << " microbatches, " << steps << (steps == 1 ? " step" : " steps") << "\n";
    if (mlp) o << "  loss " << num(loss) << (opt.check ? " (sequential reference " + num(ref.loss) + ")" : "") << "\n";
    if (opt.check)
      o << "  gradients vs the sequential reference: max abs diff " << short_num(cmp.max_abs) << ", max rel diff "
        << short_num(cmp.max_rel) << " (tolerance " << short_num(tolerance) << "): " << (ok ? "ok" : "MISMATCH")
        << "\n";
    o << "  measured makespan " << short_num(measured * 1e3) << " ms";
    if (synthetic)
      o << ", simulated " << short_num(simulated_s * 1e3) << " ms (measured/simulated "
        << short_num(measured / simulated_s) << ")";
    else o << " (simulated: " << short_num(info.simulated_makespan) << " time units)";
    o << "\n  executor: " << ops << " ops, " << short_num(ns_per_op) << " ns busy per op\n";
    std::cout << o.str() << std::flush;
  }
  if (!opt.trace.empty()) {
    std::vector<std::pair<std::string, std::string>> meta = {
        {"source", json_quote(info.source)},     {"measured", "true"},
        {"backend", json_quote(backend.name())}, {"stage", json_quote(cfg.stage)},
        {"makespan_s", num(measured)},           {"simulated_makespan", num(info.simulated_makespan)},
        {"ms_per_unit", num(opt.ms_per_unit)}};
    // Atomically: a temporary beside a regular (or new) file, renamed over it once complete, so a
    // failed or interrupted run never leaves half a trace; devices and FIFOs are written in place.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target = fs::exists(opt.trace, ec) ? fs::canonical(opt.trace, ec) : fs::path(opt.trace);
    const bool in_place = fs::exists(target, ec) && !fs::is_regular_file(target, ec);
    fs::path tmp = target;
    tmp += ".schedrt-tmp";
    if (!in_place) fs::remove(tmp, ec);  // a stale one (a symlink included) is never written through
    bool ok_trace = false;
    {
      std::ofstream f(in_place ? target : tmp, std::ios::binary | std::ios::trunc);
      f << trace_json(trace_events(results), info.ranks, meta);
      f.flush();
      ok_trace = static_cast<bool>(f);
    }
    if (ok_trace && !in_place) {
      fs::rename(tmp, target, ec);
      ok_trace = !ec;
    }
    if (!ok_trace) {
      if (!in_place) fs::remove(tmp, ec);
      std::cerr << "schedrt: error: cannot write the trace to `" << opt.trace << "`\n";
      return 1;
    }
  }
  if (opt.check && !cmp.complete) std::cerr << "schedrt: error: some stage's gradient is missing from the results\n";
  return ok ? 0 : 1;
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

StageConfig stage_config(const ProgramInfo& info, const RunOptions& o) {
  StageConfig c;
  c.stage = o.stage;
  c.hidden = o.hidden;
  c.layers = o.layers;
  c.batch = o.batch;
  c.dtype = o.dtype;
  c.seed = o.seed;
  c.ms_per_unit = o.ms_per_unit;
  c.num_stages = info.stages;
  c.microbatches = info.microbatches;
  auto copy = [&](const double* p) { return p ? std::vector<double>(p, p + info.stages) : std::vector<double>(); };
  c.cost_f = copy(info.cost_f);
  c.cost_b = copy(info.cost_b);
  c.cost_w = copy(info.cost_w);
  c.cost_fb = copy(info.cost_fb);
  c.cost_r = copy(info.cost_r);
  c.layers_per_stage = o.layers_per_stage;
  if (c.layers_per_stage.empty()) c.layers_per_stage.assign(static_cast<size_t>(info.stages), o.layers);
  c.embedding = info.embedding;
  c.head = info.head;
  return c;
}

int rank_main(Backend& backend, const ProgramInfo& info, const RunOptions& opt) {
  const int32_t rank = backend.rank(), S = info.stages;
  StageConfig cfg = stage_config(info, opt);
  std::vector<std::unique_ptr<Stage>> stages(static_cast<size_t>(info.num_directions() * S));
  for (int32_t d = 0; d < info.num_directions(); ++d)
    for (int32_t s = 0; s < S; ++s)
      if (info.rank_of(d, s) == rank) {
        stages[static_cast<size_t>(d * S + s)] = backend.make_stage(cfg, s);
      }
  ContextImpl ctx(info, backend, std::move(stages), opt);
  Context calls(ctx);
  const RankTable* table = info.tables ? &info.tables[rank] : nullptr;
  if (opt.interpret && !table) throw Error("--interpret: this executable was generated without op tables");
  RankResult result;
  result.rank = rank;
  for (int32_t step = 0; step < opt.steps; ++step) {
    backend.barrier();
    int64_t blocked_before = backend.blocked_ns();
    int64_t cpu_before = thread_cpu_ns();
    ctx.begin_step(std::chrono::steady_clock::now());
    if (opt.interpret) interpret(calls, *table);
    else info.rank_fns[rank](calls);
    int64_t blocked = backend.blocked_ns() - blocked_before;
    result.step_cpu_ns.push_back(thread_cpu_ns() - cpu_before);
    int64_t end = ctx.records().empty() ? 0 : ctx.records().back().end_ns;
    result.step_end_ns.push_back(end);
    int64_t busy = 0;
    for (const OpRecord& r : ctx.records()) busy += r.end_ns - r.start_ns;
    result.busy_ns = busy - blocked;
    result.step_busy_ns.push_back(result.busy_ns);
    ctx.finish_step();
  }
  result.losses = ctx.losses();
  result.grads = ctx.gradients();
  result.records = ctx.records();
  auto blobs = backend.gather(serialize(result));
  if (rank != 0) return 0;
  std::vector<RankResult> results;
  for (const auto& b : blobs) results.push_back(deserialize(b));
  return report(backend, info, opt, cfg, results);
}

}  // namespace schedrt
