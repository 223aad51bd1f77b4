// Solver benchmark: for each problem of a grid, the best applicable family, the synthesized
// schedule, the lower bound, the gap, whether optimality was proved, and the seconds taken.
//   solver_bench                      the default grid (pp*m <= 256, plus the large rows)
//   solver_bench --pp 8 --m-factor 4  one slice
//   solver_bench --zb-table5 ../shared/benchmarks/zb_table5.json --time-limit 60
//                                     the Zero Bubble paper's Table 5 workloads, paper rates beside ours
//   solver_bench --capped-grid --pp 8 --m-factor 4 --time-limit 60
//                                     the capped grid of the synthesizer issue: layouts, both
//                                     directions, caps from the smallest feasible to none; gap,
//                                     winning bound term, overshoot, evaluations/s, monotonicity
//                                     (each cap warm-started with the tighter caps' answers;
//                                     --cold solves each alone)
//   solver_bench --capped-grid --pp 64 --m-factor 8 --layouts 2L --costs unequal --grid-caps 1.5x
//                                     the scale target (60 s, peak memory printed)
//   solver_bench --scale --time-limit 10
//                                     large problems (pp up to 1024): the time limit's overshoot
//   solver_bench --overlap --time-limit 20 --deterministic
//                                     overlapped F&B units (FB below F + BW): dualpipe and
//                                     dualpipev beside the synthesized schedule
//   solver_bench --evals
//                                     the local search's evaluations per second, every candidate
//                                     timed whole beside timed incrementally (same search)
//   solver_bench --help

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "ir/lower_bound.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "solver/synth/explain.h"
#include "solver/synth/local_search.h"
#include "solver/synth/synthesize.h"
#include "support/numbers.h"

using namespace schedc;

namespace {

struct Row {
  ir::Problem p;
  std::string cap_name, cost_name;
};

std::string fmt4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string cap_text(const ir::Problem& p) { return p.memory.cap ? format_number(p.memory.cap->at(0)) : "none"; }

// A solve and its wall seconds.
std::pair<solver::SolveResult, double> timed_solve(const ir::Problem& p, double time_limit, bool deterministic,
                                                   int threads,
                                                   std::vector<solver::SolveOptions::WarmStart> warm_starts = {}) {
  solver::SolveOptions o;
  o.warm_starts = std::move(warm_starts);
  o.time_limit_s = time_limit;
  o.deterministic = deterministic;
  o.threads = threads;
  auto t0 = std::chrono::steady_clock::now();
  solver::SolveResult r = solver::synthesize(p, o);
  return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// The best family schedule of `p` (that fits its cap), its name and objective.
struct FamilyBest {
  std::string name = "-";
  double value = 0;
  std::optional<ir::Schedule> schedule;
};

FamilyBest best_family_schedule(const ir::Problem& p) {
  FamilyBest best;
  for (const auto& f : solver::families()) {
    Diagnostics d;
    auto s = solver::generate_family(f.name, p, {}, SourceLoc{}, d);
    if (!s) continue;
    auto sim = ir::simulate(*s);
    if (!sim.timeline) continue;
    double v = sim.timeline->metrics.objective_value(p.objective);
    if (!best.schedule || v < best.value) best = {f.name, v, std::move(*s)};
  }
  return best;
}

std::pair<std::string, double> best_family(const ir::Problem& p) {
  FamilyBest b = best_family_schedule(p);
  return {b.name, b.value};
}

// The Zero Bubble paper's own workloads (shared/benchmarks/zb_table5.json): p, m, profiled costs
// in ms, memory in the paper's activation units (F adds M_B, B adds M_W - M_B, W frees M_W), caps
// p M_B (ZB-1p's memory) and 2p M_B (ZB-2p's), objective max-span; the paper's bubble rates
// beside ours, in the paper's own units.
int zb_table5(const std::string& path, double time_limit, bool deterministic, const std::vector<std::string>& caps) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  nlohmann::json doc = nlohmann::json::parse(in);
  std::printf(
      "| model | p | m | cap | paper | paper rate | 1F1B-split rate | ours | bound rate | found by | status | seconds |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& cap : caps)
    for (const auto& row : doc["rows"]) {
      ir::Problem p;
      p.ranks = row["p"].get<int>();
      p.microbatches = row["m"].get<int>();
      p.backward = ir::BackwardMode::Split;
      p.objective = ir::Objective::MaxSpan;
      p.cost.F = ir::PerStage::of(row["T_F_ms"].get<double>());
      p.cost.B = ir::PerStage::of(row["T_B_ms"].get<double>());
      p.cost.W = ir::PerStage::of(row["T_W_ms"].get<double>());
      p.cost.comm = row["T_comm_ms"].get<double>();
      auto mb = row["M_B_units"].get<double>(), mw = row["M_W_units"].get<double>();
      p.memory.F = ir::PerStage::of(mb);
      p.memory.B = ir::PerStage::of(mw - mb);
      p.memory.W = ir::PerStage::of(-mw);
      p.memory.cap = ir::PerStage::of((cap == "2p" ? 2 : 1) * p.ranks * mb);
      if (!ir::validate(p).empty()) {
        std::fprintf(stderr, "row %s p=%d m=%d: %s\n", row["model"].get<std::string>().c_str(), p.ranks, p.microbatches,
                     ir::validate(p).front().message.c_str());
        return 1;
      }
      std::string paper = cap == "2p" ? "ZB-2p" : "ZB-1p";
      double paper_rate = row["paper_bubble_rate"][paper].get<double>();
      // Our 1F1B with split backward (W right after its B), for scale.
      std::string base = "-";
      {
        Diagnostics d;
        if (auto s = solver::generate_family("1f1b", p, {}, SourceLoc{}, d))
          if (auto sim = ir::simulate(*s); sim.timeline) base = fmt4(sim.timeline->metrics.span_bubble_rate);
      }
      solver::SolveOptions o;
      o.time_limit_s = time_limit;
      o.deterministic = deterministic;
      auto t0 = std::chrono::steady_clock::now();
      solver::SolveResult r = solver::synthesize(p, o);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!r.schedule) {
        std::printf("| %s | %d | %d | %s | %s | %.4f | %s | infeasible | - | - | - | %.1f |\n",
                    row["model"].get<std::string>().c_str(), p.ranks, p.microbatches, cap.c_str(), paper.c_str(),
                    paper_rate, base.c_str(), secs);
        continue;
      }
      ir::Metrics m = ir::simulate(*r.schedule).timeline->metrics;
      double busy = *std::max_element(m.busy.begin(), m.busy.end());
      // The rate a schedule at the bound would have: (bound - max busy) / bound.
      double bound_rate = r.lower_bound > 0 ? std::max(0.0, (r.lower_bound - busy) / r.lower_bound) : 0;
      auto prov = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance));
      std::string mark = m.span_bubble_rate < paper_rate - 5e-5   ? " below"
                         : m.span_bubble_rate > paper_rate + 5e-5 ? " ABOVE"
                                                                  : " equal";
      std::printf("| %s | %d | %d | %s | %s | %.4f | %s | %s%s | %s | %s | %s | %.1f |\n",
                  row["model"].get<std::string>().c_str(), p.ranks, p.microbatches, cap.c_str(), paper.c_str(),
                  paper_rate, base.c_str(), fmt4(m.span_bubble_rate).c_str(), mark.c_str(), fmt4(bound_rate).c_str(),
                  prov.value("found_by", "").c_str(), std::string(solver::to_string(r.status)).c_str(), secs);
      std::fflush(stdout);
    }
  return 0;
}

// The capped grid (issue: the synthesizer at real scale): pp x m x layout x costs, and for each
// the caps from the smallest feasible (the sequential schedule's peak) through 1x, 1.5x and 2x of
// one 1F1B's worth (pp microbatches' activations per rank) to none. Memory: a microbatch's
// activations on a rank are 1 whatever vpp (a chunk holds 1 / vpp); B frees half, W the rest.
// Each group of caps is checked for monotonicity: a looser cap never gives a worse schedule. The
// caps of a group are solved tightest first, each warm-started with the answers of the tighter
// ones (the pool a user keeps by passing `--warm-start`), unless `cold`: then every row is solved
// alone, as a user who never passes one sees it.
int capped_grid(const std::vector<int>& pps, const std::vector<int>& factors, const std::vector<std::string>& layouts,
                const std::vector<std::string>& costs, const std::vector<std::string>& grid_caps, double time_limit,
                bool deterministic, int threads, bool cold) {
  // "closed form" is ir::lower_bound alone (the terms of docs/solver.md section 1); "lower bound"
  // what the solve proved on top of it (the relaxation, exact probes).
  std::printf(
      "| pp | layout | m | costs | cap | best family | family obj | synthesized | closed form | lower bound | gap | proven | bound term | found by | seconds | over | evals/s | monotone |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> gaps;
  int rows = 0, non_monotone = 0, within3 = 0;
  double worst_over = 0;
  for (int pp : pps)
    for (int f : factors)
      for (const std::string& layout : layouts)
        for (const std::string& cost : costs) {
          ir::Problem p;
          p.ranks = pp;
          p.microbatches = pp * f;
          p.backward = ir::BackwardMode::Split;
          int vpp = layout[0] - '0';
          p.stages_per_rank = vpp;
          if (layout.size() > 1 && layout[1] == 'V') p.placement = ir::PlacementKind::VShape;
          if (layout.find("bi") != std::string::npos) p.directions = 2;
          double chunk = 1.0 / vpp;
          p.memory.F = ir::PerStage::of(chunk);
          p.memory.B = ir::PerStage::of(-chunk / 2);
          p.memory.W = ir::PerStage::of(-chunk / 2);
          int stages = pp * vpp;
          std::vector<double> fc(static_cast<size_t>(stages), 2.0), bc(fc), wc(static_cast<size_t>(stages), 1.0);
          if (cost == "uneven") fc.back() = bc.back() = 3, wc.back() = 1.5;  // the loss head's stage is 1.5x slower
          p.cost.F = ir::PerStage::list(fc);
          p.cost.B = ir::PerStage::list(bc);
          p.cost.W = ir::PerStage::list(wc);
          p.cost.comm = 0.1;
          if (!ir::validate(p).empty()) continue;
          ir::SimResult seq = ir::simulate(solver::sequential_schedule(p));
          double smallest = seq.timeline ? *std::max_element(seq.timeline->metrics.peak_memory.begin(),
                                                             seq.timeline->metrics.peak_memory.end())
                                         : 1;
          // "smallest", "none", or k x one 1F1B's worth ("0.5x"); solved tightest first, none last.
          std::vector<std::pair<std::string, double>> caps;
          for (const std::string& name : grid_caps) {
            double c = name == "smallest" ? smallest : name == "none" ? 0 : std::stod(name) * pp;
            caps.emplace_back(name, c);
          }
          std::stable_sort(caps.begin(), caps.end(), [](const auto& a, const auto& b) {
            return (a.second > 0 ? a.second : 1e300) < (b.second > 0 ? b.second : 1e300);
          });
          double previous = -1;
          std::vector<solver::SolveOptions::WarmStart> pool;  // the tighter caps' answers
          for (const auto& [cap_name, c] : caps) {
            if (c > 0) p.memory.cap = ir::PerStage::of(c);
            else p.memory.cap.reset();
            auto [fam, fam_value] = best_family(p);
            auto [r, secs] = timed_solve(p, time_limit, deterministic, threads, pool);
            if (r.schedule && !cold) pool.push_back({"cap-" + cap_name, *r.schedule});
            ++rows;
            double over = secs - time_limit;
            worst_over = std::max(worst_over, over);
            std::string synth = "infeasible", term = "-", found = "-", evals = "-";
            if (r.schedule) {
              synth = format_number(r.objective);
              auto prov = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance));
              found = prov.value("found_by", "");
              char buf[32];
              std::snprintf(buf, sizeof buf, "%.0f",
                            prov["local_search"]["evaluations"].get<double>() / std::max(1e-9, secs));
              evals = buf;
              term = r.bound_reason.substr(0, r.bound_reason.find(';'));
              if (term.size() > 48) term = term.substr(0, 45) + "...";
              gaps.push_back(100 * r.gap);
              if (r.gap <= 0.03 + 1e-12) ++within3;
            }
            // Caps only loosen along a group; a looser cap must not give a worse schedule.
            std::string mono = "yes";
            if (r.schedule && previous >= 0 && r.objective > previous + 1e-9) mono = "NO", ++non_monotone;
            if (r.schedule) previous = previous < 0 ? r.objective : std::min(previous, r.objective);
            std::string marker;
            if (fam != "-" && r.schedule && r.objective > fam_value + 1e-9) marker = " WORSE";
            char gap[32];
            std::snprintf(gap, sizeof gap, "%.2f%%", 100 * r.gap);
            std::printf(
                "| %d | %s | %d | %s | %s %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %.1f | %+.1f | %s | %s |\n",
                pp, layout.c_str(), p.microbatches, cost.c_str(), cap_name.c_str(),
                c > 0 ? format_number(c).c_str() : "", fam.c_str(), fam == "-" ? "-" : format_number(fam_value).c_str(),
                synth.c_str(), marker.c_str(), format_number(ir::lower_bound(p).value).c_str(),
                format_number(r.lower_bound).c_str(), r.schedule ? gap : "-",
                r.status == solver::SolveStatus::Optimal ? "yes" : "no", term.c_str(), found.c_str(), secs, over,
                evals.c_str(), mono.c_str());
            std::fflush(stdout);
          }
        }
  std::sort(gaps.begin(), gaps.end());
  double median = gaps.empty() ? 0 : gaps[gaps.size() / 2];
  std::printf("\n%d rows; gap at most 3%% on %d of %zu feasible rows; median gap %.2f%%, largest %.2f%%; "
              "%d not monotone in the cap; largest overshoot of the time limit %+.1f s\n",
              rows, within3, gaps.size(), median, gaps.empty() ? 0 : gaps.back(), non_monotone, worst_over);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak resident memory of the whole run: %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}

}  // namespace

// The time limit at scale (issue: hardening, limits that hold): large problems under a short
// limit; each row prints the wall seconds of the solve plus what `schedc schedule` does after it
// (verify, simulate, write the JSON), and how far past the limit that ran.
int scale_rows(double time_limit) {
  struct Size {
    int pp, m;
    double cap;
  };
  const Size sizes[] = {{64, 128, 0}, {64, 512, 0}, {256, 512, 0}, {256, 512, 200}, {1024, 1302, 0}, {1024, 1302, 900}};
  std::printf("## the time limit at scale, %.0f s per row\n\n", time_limit);
  std::printf("| pp | m | actions | cap | synthesized | lower bound | gap | status | found by | seconds | over |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  double worst = -time_limit;
  for (const Size& z : sizes) {
    ir::Problem p;
    p.ranks = z.pp;
    p.microbatches = z.m;
    p.backward = ir::BackwardMode::Split;
    if (z.cap > 0) p.memory.cap = ir::PerStage::of(z.cap);
    solver::SolveOptions o;
    o.time_limit_s = time_limit;
    auto t0 = std::chrono::steady_clock::now();
    solver::SolveResult r = solver::synthesize(p, o);
    if (r.schedule) {  // the driver's part: verify (its simulation gives the metrics), write
      ir::SimResult sim;
      ir::VerifyOptions vo;
      vo.simulation = &sim;
      if (!ir::verify(*r.schedule, vo).empty() || !sim.timeline) std::printf("(the schedule does not verify)\n");
      else if (ir::write_schedule_json(*r.schedule, &sim.timeline->metrics).empty()) std::printf("(no JSON)\n");
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    worst = std::max(worst, secs - time_limit);
    std::string found = "-";
    if (r.schedule) found = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance)).value("found_by", "");
    std::printf("| %d | %d | %lld | %s | %s | %s | %.1f%% | %s | %s | %.1f | %+.1f |\n", z.pp, z.m,
                static_cast<long long>(z.pp) * z.m * 3, z.cap > 0 ? format_number(z.cap).c_str() : "none",
                r.schedule ? format_number(r.objective).c_str() : "-", format_number(r.lower_bound).c_str(),
                100 * r.gap, std::string(solver::to_string(r.status)).c_str(), found.c_str(), secs, secs - time_limit);
    std::fflush(stdout);
  }
  std::printf(
      "\nlargest overshoot of the time limit: %+.1f s (verified and serialised as schedc does; writing the file adds a little)\n",
      worst);
  return 0;
}

// Overlapped F&B units: two directions (dualpipe's problem) and V-shapes (dualpipev's), mixed
// backward, F = B = W = 1, comm 0.1, FB from well below F + BW to near it, uncapped and capped at
// the family's own peak; the family, the synthesized schedule and the bound side by side.
int overlap_rows(const std::vector<int>& pps, const std::vector<int>& factors, double time_limit, bool deterministic,
                 int threads) {
  std::printf(
      "| layout | pp | m | FB | cap | family | family makespan | ours | vs family | bound | gap | found by | seconds |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::string layout : {"bi", "V"})
    for (int pp : pps)
      for (int f : factors)
        for (double fb : {1.5, 2.2, 2.6})
          for (bool capped : {false, true}) {
            ir::Problem p;
            p.ranks = pp;
            p.microbatches = f * pp;
            p.backward = ir::BackwardMode::Mixed;
            p.cost.comm = 0.1;
            p.cost.FB = ir::PerStage::of(fb);
            std::string family = layout == "bi" ? "dualpipe" : "dualpipev";
            if (layout == "bi") p.directions = 2;
            else p.stages_per_rank = 2, p.placement = ir::PlacementKind::VShape;
            Diagnostics d;
            auto fam = solver::generate_family(family, p, {}, SourceLoc{}, d);
            if (!fam) continue;
            if (capped) {
              auto peaks = ir::peak_memory(*fam);
              p.memory.cap = ir::PerStage::of(*std::max_element(peaks.begin(), peaks.end()));
              fam->problem = p;
            }
            double fam_v = ir::simulate(*fam).timeline->metrics.makespan;
            auto [r, secs] = timed_solve(p, time_limit, deterministic, threads);
            if (!r.schedule) continue;
            double v = ir::simulate(*r.schedule).timeline->metrics.makespan;
            auto prov = nlohmann::json::parse(ir::provenance_json(*r.schedule->provenance));
            std::printf("| %s | %d | %d | %s | %s | %s | %s | %s | %+.2f%% | %s | %.1f%% | %s | %.1f |\n",
                        layout.c_str(), pp, p.microbatches, format_number(fb).c_str(), cap_text(p).c_str(),
                        family.c_str(), format_number(fam_v).c_str(), format_number(v).c_str(),
                        100 * (v - fam_v) / fam_v, format_number(r.lower_bound).c_str(), 100 * r.gap,
                        prov.value("found_by", "").c_str(), secs);
            std::fflush(stdout);
          }
  return 0;
}

// The local search's throughput: the same search (same seed, same evaluation budget) with every
// candidate timed whole and timed incrementally, from the best family schedule, on problems of
// the capped grid's layouts at cap 1.5x (activations of one microbatch per rank = 1).
int eval_rows(const std::vector<int>& pps, uint64_t evals) {
  std::printf(
      "| layout | pp | m | actions | start | evals | whole: evals/s | incremental: evals/s | ratio | re-timed share | same result |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (std::string layout : {"1", "2V", "4L", "1bi"})
    for (int pp : pps) {
      ir::Problem p;
      p.ranks = pp;
      p.microbatches = 4 * pp;
      p.backward = ir::BackwardMode::Split;
      p.cost.F = ir::PerStage::of(2);
      p.cost.B = ir::PerStage::of(2);
      p.cost.W = ir::PerStage::of(1);
      p.cost.comm = 0.1;
      if (layout == "2V") p.stages_per_rank = 2, p.placement = ir::PlacementKind::VShape;
      if (layout == "4L") p.stages_per_rank = 4;
      if (layout == "1bi") p.directions = 2;
      if (p.stages_per_rank > 1) {
        double per = 1.0 / p.stages_per_rank;
        p.memory.F = ir::PerStage::of(per);
        p.memory.B = ir::PerStage::of(-per / 2);
        p.memory.W = ir::PerStage::of(-per / 2);
      }
      p.memory.cap = ir::PerStage::of(1.5 * pp);
      // The best family schedule that fits the cap starts both searches.
      auto [name, best, start] = best_family_schedule(p);
      if (!start) continue;
      double rate[2] = {0, 0}, value[2] = {0, 0}, share = 0;
      for (int inc = 0; inc < 2; ++inc) {
        solver::LocalSearchOptions o;
        o.max_evals = evals;
        o.incremental = inc == 1;
        solver::LocalSearchStats st;
        auto t0 = std::chrono::steady_clock::now();
        ir::Schedule out = solver::local_search(*start, o, st);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rate[inc] = static_cast<double>(st.evals) / secs;
        value[inc] = ir::simulate(out).timeline->metrics.objective_value(p.objective);
        if (inc == 1)
          share = static_cast<double>(st.retimed) /
                  (static_cast<double>(st.evals) * static_cast<double>(start->num_actions()));
      }
      std::printf("| %s | %d | %d | %zu | %s %s | %llu | %.0f | %.0f | %.2fx | %.0f%% | %s |\n", layout.c_str(), pp,
                  p.microbatches, start->num_actions(), name.c_str(), format_number(best).c_str(),
                  static_cast<unsigned long long>(evals), rate[0], rate[1], rate[1] / rate[0], 100 * share,
                  value[0] == value[1] ? ("yes, " + format_number(value[1])).c_str() : "NO");
      std::fflush(stdout);
    }
  return 0;
}

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
  std::string zb_path;
  std::vector<std::string> zb_caps{"1p", "2p"};
  app.add_option(
      "--zb-table5", zb_path,
      "run the Zero Bubble paper's workloads from this JSON (shared/benchmarks/zb_table5.json) instead of the grid");
  app.add_option("--zb-caps", zb_caps, "with --zb-table5: 1p and/or 2p (caps p M_B and 2p M_B)");
  bool grid_mode = false;
  std::vector<std::string> layouts{"1", "2L", "2V", "4L", "1bi"};
  int threads = 0;
  app.add_flag(
      "--capped-grid", grid_mode,
      "the capped grid: caps smallest, 1x, 1.5x, 2x of one 1F1B's worth, none (--pp, --m-factor, --layouts, --costs)");
  std::vector<std::string> grid_caps{"smallest", "1x", "1.5x", "2x", "none"};
  app.add_option("--grid-caps", grid_caps,
                 "with --capped-grid: which caps (smallest, none, or k x one 1F1B's worth: 0.5x, 1x, 1.5x, 2x)")
      ->check([](const std::string& s) -> std::string {
        if (s == "smallest" || s == "none") return "";
        size_t used = 0;
        double k = 0;
        try {
          k = std::stod(s, &used);
        } catch (const std::exception&) {
        }
        return used + 1 == s.size() && s.back() == 'x' && k > 0 ? "" : "smallest, none or a positive k followed by x";
      });
  bool cold = false;
  app.add_flag("--cold", cold,
               "with --capped-grid: solve every cap alone (no warm start from the tighter caps' answers)");
  app.add_option("--layouts", layouts,
                 "with --capped-grid: 1, 2L, 2V, 4L (vpp and L looped / V vshape), 1bi (bidirectional)");
  app.add_option("--threads", threads, "local search threads (0: every core)");
  bool scale_mode = false;
  app.add_flag("--scale", scale_mode,
               "large problems (pp 64 to 1024, m up to 1302) under --time-limit (default 10 s): seconds and overshoot");
  bool overlap_mode = false;
  app.add_flag("--overlap", overlap_mode,
               "overlapped F&B units: dualpipe and dualpipev beside the synthesized schedule (--pp, --m-factor)");
  bool evals_mode = false;
  uint64_t evals = 200'000;
  app.add_flag("--evals", evals_mode,
               "the local search's evaluations per second, timed whole and incrementally (--pp, --max-evals)");
  app.add_option("--max-evals", evals, "with --evals: evaluations per search");
  CLI11_PARSE(app, argc, argv);
  if (evals_mode) {
    if (!app.count("--pp")) pps = {8, 16, 32};
    return eval_rows(pps, evals);
  }
  if (overlap_mode) {
    if (!app.count("--pp")) pps = {4, 8};
    if (!app.count("--m-factor")) factors = {4};
    return overlap_rows(pps, factors, app.count("--time-limit") ? time_limit : 20, deterministic, threads);
  }
  if (scale_mode) return scale_rows(app.count("--time-limit") ? time_limit : 10);
  if (!zb_path.empty()) return zb_table5(zb_path, time_limit, deterministic, zb_caps);
  if (grid_mode) {
    if (!app.count("--pp")) pps = {8, 16, 32};
    if (!app.count("--m-factor")) factors = {4, 8};
    if (!app.count("--costs")) costs = {"unequal", "uneven"};
    if (!app.count("--time-limit")) time_limit = 60;
    return capped_grid(pps, factors, layouts, costs, grid_caps, time_limit, deterministic, threads, cold);
  }

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
      std::vector<double> f(static_cast<size_t>(pp), 1.0), b(static_cast<size_t>(pp), 1.0),
          w(static_cast<size_t>(pp), 1.0);
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

  std::printf(
      "| pp | vpp | m | costs | cap | best family | family obj | synthesized | lower bound | gap | proven | seconds |\n");
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
                format_number(r.lower_bound).c_str(), gap, r.status == solver::SolveStatus::Optimal ? "yes" : "no",
                secs);
    std::fflush(stdout);
  }
  return 0;
}
