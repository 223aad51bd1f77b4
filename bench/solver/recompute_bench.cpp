// recompute_bench: what recomputation buys under a memory cap (issue 14, part 2). For pp 4 and 8,
// m = 4 pp, split backward, F = B = W = R = 1, a forward adding 1 unit of activations of which a
// checkpointed one keeps `input` (default 0.125): at caps from what 1F1B holds (pp) down to one
// whole forward and one kept input, the solver's makespan without recomputation, with it allowed
// (the solver checkpoints where it pays), and with every forward recomputed (`all`, full
// activation checkpointing), each beside its proved lower bound, and the anchors: the best family
// schedule that fits the cap (they place no recomputation; ZB-H1/H2, 1F1B, GPipe, ...). Measured by
// the simulator; not a timed test.

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/synthesize.h"

namespace {

using namespace schedc;

ir::Problem problem(int pp, int m, double cap, double input, ir::Recompute mode) {
  ir::Problem p;
  p.ranks = pp;
  p.microbatches = m;
  p.backward = ir::BackwardMode::Split;
  p.memory.F = ir::PerStage::of(1);
  p.memory.B = ir::PerStage::of(-0.5);
  p.memory.W = ir::PerStage::of(-0.5);
  p.memory.cap = ir::PerStage::of(cap);
  p.recompute = mode;
  if (mode != ir::Recompute::Off) p.memory.input = ir::PerStage::of(input);
  return p;
}

struct Cell {
  std::string text = "none";
  double value = 0;
  int recomputed = 0;
};

Cell solve(const ir::Problem& p, const solver::SolveOptions& o) {
  Cell c;
  solver::SolveResult r = solver::synthesize(p, o);
  if (!r.schedule) return c;
  if (!ir::verify(*r.schedule).empty()) {
    c.text = "INVALID";
    return c;
  }
  for (const auto& order : r.schedule->ranks)
    for (ir::Action a : order) c.recomputed += a.kind == ir::ActionKind::R;
  c.value = r.objective;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g (%g%s)", r.objective, r.lower_bound,
                r.status == solver::SolveStatus::Optimal ? ", optimal" : "");
  c.text = buf;
  return c;
}

// The best family schedule under the cap (without recomputation), and its name; "none" fits.
std::string best_family(const ir::Problem& p) {
  double best = 0;
  std::string name = "none";
  for (const solver::FamilyInfo& f : solver::families()) {
    Diagnostics scratch;
    auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, scratch);
    if (!s || !ir::verify(*s).empty()) continue;
    double v = ir::simulate(*s).timeline->metrics.makespan;
    if (name == "none" || v < best) best = v, name = f.name;
  }
  if (name == "none") return name;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g (%s)", best, name.c_str());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("recompute_bench: makespan under a memory cap without, with and with full recomputation");
  double time_limit = 5, input = 0.125;
  std::vector<int> pps{4, 8};
  app.add_option("--time-limit", time_limit, "seconds per solve");
  app.add_option("--input", input, "what a checkpointed forward keeps (F = 1)");
  app.add_option("--pp", pps, "pipeline sizes");
  CLI11_PARSE(app, argc, argv);
  solver::SolveOptions o;
  o.time_limit_s = time_limit;
  o.threads = 1;
  std::printf("| pp | m | cap | best family | no recomputation | allowed | R's | all | allowed / none |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (int pp : pps) {
    const int m = 4 * pp;
    std::vector<double> caps;
    for (double c = pp; c > 1 + input; c /= 2) caps.push_back(c);
    caps.push_back(1 + 3 * input);
    caps.push_back(1 + input);
    for (double cap : caps) {
      Cell none = solve(problem(pp, m, cap, input, ir::Recompute::Off), o);
      Cell allowed = solve(problem(pp, m, cap, input, ir::Recompute::Allowed), o);
      Cell all = solve(problem(pp, m, cap, input, ir::Recompute::All), o);
      std::string ratio = none.value > 0 && allowed.value > 0 ? std::to_string(allowed.value / none.value) : "-";
      if (ratio.size() > 5) ratio.resize(5);
      std::printf("| %d | %d | %g | %s | %s | %s | %d | %s | %s |\n", pp, m, cap,
                  best_family(problem(pp, m, cap, input, ir::Recompute::Off)).c_str(), none.text.c_str(),
                  allowed.text.c_str(), allowed.recomputed, all.text.c_str(), ratio.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
