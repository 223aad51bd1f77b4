// plan_bench: the plan (partition, stages per rank and order chosen together, solver/synth/plan.h)
// on realistic models, beside every family that fits and the solve of the balanced partition
// (today's default); where nothing fits, the plan with recomputation. Prints one markdown table; each solve is one cold
// run of the stated limit, as a user runs `schedc schedule --solve`. Measured by the simulator; not a timed test.
//
// The workloads and their derivation (docs/solver.md, "The plan"):
// - Llama-style dense decoder layers: hidden h, SwiGLU FFN f, multi-head attention, vocabulary V,
//   sequence s, microbatch of one sequence, bf16, tensor parallel t folded into every per-rank
//   figure (costs and memory divided by t, sequence parallel for the activations).
// - Forward FLOPs of a layer: 2 s (4 h^2 + 3 h f) for the matmuls plus 2 s^2 h for causal
//   attention (flash attention); B = the matmuls' FLOPs + twice the attention's; W = the matmuls'.
//   Time at `--tflops` (default 400 TFLOP/s: an H100's 989 at about 40 % MFU).
// - Activations a layer's forward keeps: 34 s h bytes / t (Korthikanti et al. 2022 with flash
//   attention: no s^2 term); a checkpointed layer keeps its input, 2 s h / t.
// - Static memory: 18 bytes a parameter / t (bf16 weights, fp32 gradients, fp32 Adam master
//   weights and moments; no optimizer sharding), 4 h^2 + 3 h f parameters a layer.
// - Embedding: V h parameters, a lookup (no FLOPs); output head: V h parameters, 2 s h V FLOPs
//   each way, fp32 logits 4 s V / t bytes.
// - MoE layers (Mixtral-like): E experts of FFN f, top-k routing: k times the FFN FLOPs, E times its
//   parameters, plus an all-to-all of 2 s h bytes each way at the link rate, as layer time.
// - comm: one activation, 2 s h / t bytes, at `--link` GB/s (default 25: InfiniBand between nodes).
// - Cap: `--cap` GiB a rank (default 72: an 80 GiB device less the framework's own).

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ir/lower_bound.h"
#include "ir/model.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/plan.h"

namespace {

using namespace schedc;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Workload {
  std::string name;
  double h, f, V;
  int layers;
  int moe_experts = 0, moe_topk = 0;  // 0: dense
  double seq;
  int tp, pp, m;
};

struct Knobs {
  double tflops = 400, link = 25, cap = 72;
};

// Figures as a user would state them: times to the nanosecond, memory to the millionth of a GiB
// (a problem's values must sit on a decimal tick: a ratio of FLOPs is a double of 17 digits).
double at_ns(double ms) { return std::round(ms * 1e6) / 1e6; }
double gib(double bytes) { return std::round(bytes / kGiB * 1e6) / 1e6; }

ir::LayerKind kind(const char* name, double fwd_flops, double bwd_flops, double w_flops, double act, double stat,
                   double input, double extra_ms, const Knobs& k) {
  auto ms = [&](double flops) { return flops / (k.tflops * 1e12) * 1e3; };
  return {name,
          at_ns(ms(fwd_flops) + extra_ms),
          at_ns(ms(bwd_flops) + extra_ms),
          at_ns(ms(w_flops)),
          gib(act),
          gib(stat),
          gib(input)};
}

// The model of a workload in ms and GiB, per rank of its tensor-parallel group.
ir::Model model_of(const Workload& w, const Knobs& k) {
  const double s = w.seq, h = w.h, t = w.tp;
  const bool moe = w.moe_experts > 0;
  const double ffn_flops = 2 * s * 3 * h * w.f * (moe ? w.moe_topk : 1);
  const double attn_mm = 2 * s * 4 * h * h, attn = 2 * s * s * h;
  const double params = 4 * h * h + 3 * h * w.f * (moe ? w.moe_experts : 1);
  const double a2a_ms = moe ? 2 * s * h / (k.link * 1e9) * 1e3 : 0;  // each way, dispatch and combine
  ir::Model m;
  m.kinds.push_back(kind(moe ? "moe" : "dense", (attn_mm + ffn_flops + attn) / t, (attn_mm + ffn_flops + 2 * attn) / t,
                         (attn_mm + ffn_flops) / t, 34 * s * h / t, 18 * params / t, 2 * s * h / t, 2 * a2a_ms, k));
  m.kinds.push_back(kind("embedding", 0, 0, 0, 2 * s * h / t, 18 * w.V * h / t, 0, 0, k));
  const double head_flops = 2 * s * h * w.V / t;
  m.kinds.push_back(kind("head", head_flops, head_flops, head_flops, 4 * s * w.V / t, 18 * w.V * h / t, 0, 0, k));
  m.layers.assign(static_cast<size_t>(w.layers), 0);
  m.embedding = 1;
  m.head = 2;
  return m;
}

ir::Problem base_of(const Workload& w, const Knobs& k) {
  ir::Problem p;
  p.ranks = w.pp;
  p.microbatches = w.m;
  p.backward = ir::BackwardMode::Split;
  p.cost.comm = at_ns(2 * w.seq * w.h / w.tp / (k.link * 1e9) * 1e3);
  p.memory.cap = ir::PerStage::of(k.cap);
  p.time_unit = "ms";
  p.memory_unit = "GiB";
  return p;
}

// The best family schedule that fits, on the balanced partition of the stages the family runs.
struct FamilyPick {
  std::string text = "none fits";
  double value = 0;
};
FamilyPick best_family(const ir::Problem& base, const ir::Model& m) {
  FamilyPick out;
  for (const solver::FamilyInfo& f : solver::families()) {
    ir::Problem q = base;
    solver::apply_family_defaults(f,
                                  {ir::Field::Ranks, ir::Field::Microbatches, ir::Field::CostF, ir::Field::MemoryF,
                                   ir::Field::MemoryCap, ir::Field::Objective},
                                  q);
    q = ir::with_partition(q, m, ir::balanced_partition(m, q.num_stages()));
    if (!ir::validate(q).empty()) continue;
    Diagnostics scratch;
    auto s = solver::generate_family(f.name, q, {}, SourceLoc{}, scratch);
    if (!s || !ir::verify(*s).empty()) continue;
    const double v = ir::simulate(*s).timeline->metrics.makespan;
    if (out.value == 0 || v < out.value) {
      out.value = v;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.1f (%s)", v, f.name.c_str());
      out.text = buf;
    }
  }
  return out;
}

// A workload as a `.sched` file (`--write-specs`): the same model and problem, so a row can be run
// through `schedc schedule` (its candidates table, `--dump-after`) as a user would.
std::string spec_of(const Workload& w, const ir::Model& m, const ir::Problem& p, double time_limit) {
  auto num = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  auto block = [&](const char* key, const ir::LayerKind& k) {
    return std::string(key) + " { F = " + num(k.F) + "ms  B = " + num(k.B) + "ms  W = " + num(k.W) +
           "ms  memory = " + num(k.memory) + "GiB  static = " + num(k.static_memory) + "GiB }\n";
  };
  std::string out = "# plan_bench workload " + w.name + " (bench/solver/plan_bench.cpp states its derivation)\n";
  out += "ranks = " + std::to_string(w.pp) + "\nmicrobatches = " + std::to_string(w.m) + "\n";
  out += "stages_per_rank = auto\nplacement = auto\nbackward = split\n";
  out += "model { layers = " + std::to_string(m.num_layers()) + "  partition = auto }\n";
  out += block("layer", m.kinds[0]);
  out += block("embedding", m.kinds[static_cast<size_t>(*m.embedding)]);
  out += block("head", m.kinds[static_cast<size_t>(*m.head)]);
  out += "cost { comm = " + num(p.cost.comm) + "ms }\n";
  out += "memory { cap = " + num(p.memory.cap->at(0)) + "GiB }\n";
  out += "schedule = solve { time_limit = " + num(time_limit) + " }\n";
  return out;
}

std::string partition_text(const std::vector<int32_t>& c) {
  std::string out;
  for (int32_t n : c) out += (out.empty() ? "" : " ") + std::to_string(n);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("plan_bench: partition = auto beside the families and the balanced partition's solve");
  double time_limit = 60;
  bool deterministic = false;
  Knobs k;
  std::vector<std::string> only;
  std::string specs;
  app.add_option("--time-limit", time_limit, "seconds per solve (the balanced solve and the plan each)");
  app.add_flag("--deterministic", deterministic, "Z3 resource limits instead of wall time");
  app.add_option("--tflops", k.tflops, "achieved TFLOP/s per device");
  app.add_option("--link", k.link, "pipeline link GB/s");
  app.add_option("--cap", k.cap, "GiB a rank");
  app.add_option("--only", only, "workload names to run");
  app.add_option("--write-specs", specs, "write each workload as DIR/NAME.sched and exit");
  CLI11_PARSE(app, argc, argv);
  // Dense Llama-3-like sizes (8B, 70B, 405B shapes, multi-head attention), a Mixtral-like MoE;
  // sequence 4k..128k; pp 4..32.
  const std::vector<Workload> suite = {
      {"8b-4k", 4096, 14336, 128256, 32, 0, 0, 4096, 1, 4, 16},
      {"8b-32k", 4096, 14336, 128256, 32, 0, 0, 32768, 1, 4, 8},
      {"70b-8k", 8192, 28672, 128256, 80, 0, 0, 8192, 8, 8, 32},
      {"70b-32k", 8192, 28672, 128256, 80, 0, 0, 32768, 8, 8, 16},
      {"70b-128k", 8192, 28672, 128256, 80, 0, 0, 131072, 8, 16, 32},
      {"405b-8k", 16384, 53248, 128256, 126, 0, 0, 8192, 8, 16, 32},
      {"405b-32k", 16384, 53248, 128256, 126, 0, 0, 32768, 8, 32, 64},
      {"moe-8x22b-16k", 6144, 16384, 32768, 56, 8, 2, 16384, 8, 8, 16},
  };
  solver::SolveOptions o;
  o.time_limit_s = time_limit;
  o.deterministic = deterministic;
  o.threads = 1;
  if (specs.empty())
    std::printf(
        "| workload | pp | m | best family | balanced solve (bound) | plan | partition | plan bound | gap | vs family "
        "| vs balanced | s |\n");
  if (specs.empty()) std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Workload& w : suite) {
    if (!only.empty() && std::find(only.begin(), only.end(), w.name) == only.end()) continue;
    const ir::Model m = model_of(w, k);
    const ir::Problem stated = base_of(w, k);
    if (!specs.empty()) {
      const std::string path = specs + "/" + w.name + ".sched";
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (!f) {
        std::fprintf(stderr, "plan_bench: cannot write %s\n", path.c_str());
        return 1;
      }
      const std::string text = spec_of(w, m, stated, time_limit);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      continue;
    }
    const ir::Problem balanced = ir::with_partition(stated, m, ir::balanced_partition(m, stated.num_stages()));
    const FamilyPick fam = best_family(stated, m);
    std::string bal_text = "no schedule";
    double bal = 0;
    if (ir::validate(balanced).empty()) {
      solver::SolveResult r = solver::synthesize(balanced, o);
      if (r.schedule && r.status != solver::SolveStatus::Infeasible) {
        bal = r.objective;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%.1f (%.1f)", r.objective, r.lower_bound);
        bal_text = buf;
      }
    } else {
      bal_text = "static over the cap";
    }
    solver::PlanSpace space;
    space.base = balanced;
    space.model = &m;
    space.vpp_auto = true;  // looped 1, 2, 4; V-shape 2; wave 2, 4
    space.placement_auto = true;
    const auto t0 = std::chrono::steady_clock::now();
    solver::PlanResult plan = solver::solve_plan(space, o);
    // Where nothing fits without it, the plan with recomputation (a checkpointed layer keeps its
    // input, 2 s h / t bytes): a second solve of the same limit, its seconds added.
    ir::Model with_input = m;
    const bool recomputed = !plan.solve.schedule || plan.solve.status == solver::SolveStatus::Infeasible;
    if (recomputed) {
      with_input.derive_input = true;
      ir::Problem q = stated;
      q.recompute = ir::Recompute::Allowed;
      space.base = ir::with_partition(q, with_input, ir::balanced_partition(with_input, q.num_stages()));
      space.model = &with_input;
      plan = solver::solve_plan(space, o);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string plan_text = "no schedule", part = "-", bound = "-", gap = "-", vs_fam = "-", vs_bal = "-";
    if (plan.solve.schedule && plan.solve.status != solver::SolveStatus::Infeasible) {
      const bool valid = ir::verify(*plan.solve.schedule).empty();
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.1f%s%s", plan.solve.objective, recomputed ? " (recompute)" : "",
                    valid ? "" : " INVALID");
      plan_text = buf;
      part = partition_text(plan.layers_per_stage);
      std::snprintf(buf, sizeof buf, "%.1f", plan.solve.lower_bound);
      bound = buf;
      std::snprintf(buf, sizeof buf, "%.1f%%", 100 * plan.solve.gap);
      gap = buf;
      if (fam.value > 0) {
        std::snprintf(buf, sizeof buf, "%.3f", plan.solve.objective / fam.value);
        vs_fam = buf;
      }
      if (bal > 0) {
        std::snprintf(buf, sizeof buf, "%.3f", plan.solve.objective / bal);
        vs_bal = buf;
      }
    }
    std::printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n", w.name.c_str(), w.pp, w.m,
                fam.text.c_str(), bal_text.c_str(), plan_text.c_str(), part.c_str(), bound.c_str(), gap.c_str(),
                vs_fam.c_str(), vs_bal.c_str(), secs);
    std::fflush(stdout);
  }
  return 0;
}
