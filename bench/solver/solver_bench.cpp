// Solver benchmark: for each problem of a grid, the best applicable family, the synthesized
// schedule, the lower bound, the gap, whether optimality was proved, and the seconds taken.
//   solver_bench                      the default grid (pp*m <= 256, plus the large rows)
//   solver_bench --pp 8 --m-factor 4  one slice
//   solver_bench --help

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "ir/simulate.h"
#include "solver/families/families.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"

using namespace schedc;

namespace {

struct Row {
  ir::Problem p;
  std::string cap_name, cost_name;
};

std::string cap_text(const ir::Problem& p) { return p.memory.cap ? format_number(p.memory.cap->at(0)) : "none"; }

std::pair<std::string, double> best_family(const ir::Problem& p) {
  std::string name = "-";
  double best = 0;
  for (const auto& f : solver::families()) {
    Diagnostics d;
    auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, d);
    if (!s) continue;
    auto sim = ir::simulate(*s);
    if (!sim.timeline) continue;
    double v = sim.timeline->metrics.objective_value(p.objective);
    if (name == "-" || v < best) name = f.name, best = v;
  }
  return {name, best};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"schedc solver benchmark"};
  std::vector<int> pps{2, 4, 8, 16, 32};
  std::vector<int> factors{1, 2, 4, 8};
  std::vector<int> vpps{1, 2};
  std::vector<std::string> caps{"pp", "1.5pp", "2pp", "none"};
  std::vector<std::string> costs{"unit", "unequal"};
  double time_limit = 10, large_time_limit = 60;
  int64_t max_work = 256;
  bool deterministic = false, uneven = true;
  app.add_option("--pp", pps, "ranks");
  app.add_option("--m-factor", factors, "microbatches as multiples of pp");
  app.add_option("--vpp", vpps, "stages per rank (2 = vshape)");
  app.add_option("--caps", caps, "pp, 1.5pp, 2pp, none (in units of one microbatch's activations per rank)");
  app.add_option("--costs", costs, "unit (F=B=W=1) and/or unequal (F=2,B=2,W=1,comm=0.1)");
  app.add_option("--time-limit", time_limit, "seconds per row with pp*m <= 128");
  app.add_option("--large-time-limit", large_time_limit, "seconds per larger row");
  app.add_option("--max-work", max_work, "skip rows with pp*m above this, except pp=32,m=256 (0 = no limit)");
  app.add_flag("--deterministic", deterministic, "Z3 resource limits instead of wall time");
  app.add_flag("!--no-uneven", uneven, "skip the uneven-stage rows");
  CLI11_PARSE(app, argc, argv);

  std::vector<Row> rows;
  for (int pp : pps)
    for (int f : factors)
      for (int vpp : vpps)
        for (const auto& cost : costs)
          for (const auto& cap : caps) {
            int m = pp * f;
            bool large_row = pp == 32 && m == 256;
            if (max_work > 0 && int64_t{pp} * m > max_work && !large_row) continue;
            ir::Problem p;
            p.ranks = pp;
            p.microbatches = m;
            p.backward = ir::BackwardMode::Split;
            p.stages_per_rank = vpp;
            // One microbatch's activations on a rank (M_B) is 1 whatever vpp: a chunk holds 1 / vpp.
            if (vpp == 2) {
              p.placement = ir::PlacementKind::VShape;
              p.memory.F = ir::PerStage::of(0.5);
              p.memory.B = ir::PerStage::of(-0.25);
              p.memory.W = ir::PerStage::of(-0.25);
            }
            if (cost == "unequal") {
              p.cost.F = ir::PerStage::of(2);
              p.cost.B = ir::PerStage::of(2);
              p.cost.W = ir::PerStage::of(1);
              p.cost.comm = 0.1;
            }
            double c = cap == "pp" ? pp : cap == "1.5pp" ? 1.5 * pp : cap == "2pp" ? 2.0 * pp : 0;
            if (c > 0) p.memory.cap = ir::PerStage::of(c);
            rows.push_back({p, cap, cost});
          }
  if (uneven)
    for (int pp : {4, 8}) {
      ir::Problem p;
      p.ranks = pp;
      p.microbatches = 4 * pp;
      p.backward = ir::BackwardMode::Split;
      std::vector<double> f(static_cast<size_t>(pp), 1.0), b(static_cast<size_t>(pp), 1.0), w(static_cast<size_t>(pp), 1.0);
      f.back() = b.back() = w.back() = 1.5;  // the last stage (with the loss head) is 1.5x slower
      p.cost.F = ir::PerStage::list(f);
      p.cost.B = ir::PerStage::list(b);
      p.cost.W = ir::PerStage::list(w);
      for (double c : {double(pp), 0.0}) {
        if (c > 0) p.memory.cap = ir::PerStage::of(c);
        else p.memory.cap.reset();
        rows.push_back({p, c > 0 ? "pp" : "none", "uneven"});
      }
    }

  std::printf("| pp | vpp | m | costs | cap | best family | family obj | synthesized | lower bound | gap | proven | seconds |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    const ir::Problem& p = row.p;
    auto [fam, fam_value] = best_family(p);
    solver::SolveOptions o;
    o.time_limit_s = int64_t{p.ranks} * p.microbatches <= 128 ? time_limit : large_time_limit;
    o.deterministic = deterministic;
    auto t0 = std::chrono::steady_clock::now();
    solver::SolveResult r = solver::synthesize(p, o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string synth = r.status == solver::SolveStatus::Infeasible ? "infeasible" : format_number(r.objective);
    std::string marker;
    if (fam != "-" && r.status != solver::SolveStatus::Infeasible && r.objective > fam_value + 1e-9) marker = " WORSE";
    if (fam != "-" && r.objective < fam_value - 1e-9) marker = " better";
    char gap[32];
    std::snprintf(gap, sizeof gap, "%.2f%%", 100 * r.gap);
    std::printf("| %d | %d | %d | %s | %s | %s | %s | %s%s | %s | %s | %s | %.1f |\n", p.ranks, p.stages_per_rank,
                p.microbatches, row.cost_name.c_str(), cap_text(p).c_str(), fam.c_str(),
                fam == "-" ? "-" : format_number(fam_value).c_str(), synth.c_str(), marker.c_str(),
                format_number(r.lower_bound).c_str(), gap, r.status == solver::SolveStatus::Optimal ? "yes" : "no", secs);
    std::fflush(stdout);
  }
  return 0;
}
