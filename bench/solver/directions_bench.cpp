// directions_bench: where more directions stop paying (issue 14, part 1). For pp 4, 8, 16, m from
// pp to 8 pp and k = 1, 2, 4, 8 directions (where k divides m), prints a markdown table of the
// k-direction Chimera (1F1B at k = 1) and the solver on the same problem capped at the family's
// peak: makespan, bubble ratio, peak activations, and what the k replicas cost: the parameters a rank holds and the
// gradient bytes it sends in the step's replica reduction (the runtime's exchange). Measured by
// the simulator; not a timed test.

#include <algorithm>
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

ir::Problem problem(int pp, int m, int k, ir::BackwardMode backward) {
  ir::Problem p;
  p.ranks = pp;
  p.microbatches = m;
  p.directions = k;
  p.backward = backward;
  // F : B : W = 1 : 1 : 1 (a fused backward costs B + W = 2 F), one unit of activations per
  // microbatch and stage, freed by the backward.
  p.cost.F = ir::PerStage::of(1);
  p.cost.B = ir::PerStage::of(1);
  p.cost.W = ir::PerStage::of(1);
  p.memory.F = ir::PerStage::of(1);
  p.memory.B = ir::PerStage::of(-0.5);
  p.memory.W = ir::PerStage::of(-0.5);
  return p;
}

// The stage replicas a rank holds (parameters, in stages' worth) and the gradients it sends in the
// step's reduction, in stages' worth: as the runtime does it (runtime/src/context.cpp,
// finish_step: every holder but the root, direction 0's rank, sends the root the replicas it
// holds; the root sends each other holder the sum), and as a ring all-reduce over the ranks
// holding each stage would (2 (h-1)/h). The most of any rank.
struct ReplicaCost {
  int held = 0;
  int sent = 0;
  double ring = 0;
};

ReplicaCost replica_cost(const ir::Problem& p) {
  std::vector<int> held(static_cast<size_t>(p.ranks), 0), sent(static_cast<size_t>(p.ranks), 0);
  std::vector<double> ring(static_cast<size_t>(p.ranks), 0);
  for (int32_t s = 0; s < p.num_stages(); ++s) {
    std::vector<int> count(static_cast<size_t>(p.ranks), 0);
    for (int32_t d = 0; d < p.num_directions(); ++d) ++count[p.rank_of(d, ir::StageId(s)).index()];
    const auto holders = static_cast<int>(p.ranks - std::count(count.begin(), count.end(), 0));
    const int32_t root = p.rank_of(0, ir::StageId(s)).value;
    for (int32_t r = 0; r < p.ranks; ++r) {
      const int n = count[static_cast<size_t>(r)];
      held[static_cast<size_t>(r)] += n;
      if (n == 0 || holders == 1) continue;
      sent[static_cast<size_t>(r)] += r == root ? holders - 1 : n;
      ring[static_cast<size_t>(r)] += 2.0 * (holders - 1) / holders;
    }
  }
  return {*std::max_element(held.begin(), held.end()), *std::max_element(sent.begin(), sent.end()),
          *std::max_element(ring.begin(), ring.end())};
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"k directions: bubbles against replica costs"};
  std::vector<int> pps{4, 8, 16}, factors{1, 2, 4, 8}, ks{1, 2, 4, 8};
  double time_limit = 2;
  std::string backward = "fused";
  app.add_option("--backward", backward, "fused, or split (the families run B then W; the solver places W)");
  app.add_option("--pp", pps, "ranks");
  app.add_option("--m-factor", factors, "microbatches as multiples of pp");
  app.add_option("--directions", ks, "numbers of directions (rows where k divides m)");
  app.add_option("--time-limit", time_limit, "solver seconds per row (0: the family only)");
  CLI11_PARSE(app, argc, argv);

  std::printf("| pp | m | k | family | makespan | bubble | peak act. | solver | bubble | peak act. | replicas "
              "held | grad. sent | ring |\n");
  std::printf("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int pp : pps)
    for (int f : factors)
      for (int k : ks) {
        const int m = f * pp;
        if (m % k != 0) continue;
        ir::Problem p = problem(pp, m, k, backward == "split" ? ir::BackwardMode::Split : ir::BackwardMode::Fused);
        const char* family = k == 1 ? "1f1b" : "chimera";
        Diagnostics diags;
        auto s = solver::generate_family(family, p, {}, SourceLoc{}, diags);
        if (!s || !ir::verify(*s).empty()) {
          std::printf("| %d | %d | %d | %s | failed: %s |\n", pp, m, k, family, diags.str().c_str());
          continue;
        }
        ir::Metrics fm = ir::simulate(*s).timeline->metrics;
        std::string solved = "-", solved_bubble = "-", solved_peak = "-";
        if (time_limit > 0) {
          solver::SolveOptions o;
          o.time_limit_s = time_limit;
          o.threads = 1;
          // At the family's memory: what the solver gains without holding more activations.
          ir::Problem capped = p;
          capped.memory.cap = ir::PerStage::of(max_of(fm.peak_memory));
          solver::SolveResult r = solver::synthesize(capped, o);
          if (r.schedule) {
            ir::Metrics sm = ir::simulate(*r.schedule).timeline->metrics;
            char buf[64];
            std::snprintf(buf, sizeof buf, "%g", sm.makespan);
            solved = buf;
            std::snprintf(buf, sizeof buf, "%.3f", sm.bubble_ratio);
            solved_bubble = buf;
            std::snprintf(buf, sizeof buf, "%g", max_of(sm.peak_memory));
            solved_peak = buf;
          }
        }
        ReplicaCost rc = replica_cost(p);
        std::printf("| %d | %d | %d | %s | %g | %.3f | %g | %s | %s | %s | %d | %d | %.2f |\n", pp, m, k, family,
                    fm.makespan, fm.bubble_ratio, max_of(fm.peak_memory), solved.c_str(), solved_bubble.c_str(),
                    solved_peak.c_str(), rc.held, rc.sent, rc.ring);
        std::fflush(stdout);
      }
  return 0;
}
