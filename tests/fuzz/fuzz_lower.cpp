// libFuzzer target: the bytes decode into a small problem (1-8 ranks, 1-4 stages per rank on every
// placement, custom included, 1-16 microbatches, every backward mode, costs and memory from a few
// profiles, no cap or a cap near the schedule's own peaks) and a random valid order, sometimes with
// overlapped F&B units, sometimes perturbed (swaps, moves, drops, duplicates) into an invalid one.
// Properties, each a bug in schedc when broken:
//   - ir::verify and ir::simulate agree: a schedule verify accepts simulates to completion;
//   - a verified schedule lowers (Auto and one other strategy) into a program that verify_program
//     accepts, apart from a memory cap broken by receive buffers (a user error; Naive may also
//     deadlock), and Auto only breaks the cap when Prefetch and JustInTime do;
//   - the emitters (text, SVG, Perfetto, torch-csv, schedule JSON, C++) never crash, and torch-csv
//     (of every schedule without a stage on two ranks) and schedule JSON read back into the same
//     orders.
// A violation prints the problem and the schedule on stderr and aborts.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "codegen/emit_cpp.h"
#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "support/diagnostics.h"
#include "support/source.h"
#include "tests/common/random_schedule.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace schedc;
using namespace schedc::ir;
using codegen::LowerStrategy;
using fuzz::Bytes;

constexpr double kCosts[] = {1, 2, 0.5, 3, 0, 1e-6, 1e6, 0.1, 1.5, 4, 2.5, 1e-3, 7, 1e5, 0.3, 1};
constexpr double kComm[] = {0, 0.1, 0.5, 1, 1e-6, 2, 1e6, 0.25};
constexpr double kFbFactor[] = {0, 0.5, 0.75, 1, 1.5, 2};
constexpr double kMemF[] = {1, 0.5, 2, 0, 1e-6, 3};
constexpr double kMemB[] = {-0.5, 0, -1, 0.5};
constexpr double kMemW[] = {-0.5, -1, 0, 0.5};
constexpr double kCapSlack[] = {0, 0.25, 0.5, 1, 2};

PerStage costs(Bytes& in, int stages) {
  if (in.pick(3) != 0) return PerStage::of(in.from(kCosts));
  std::vector<double> v;
  for (int s = 0; s < stages; ++s) v.push_back(in.from(kCosts));
  return PerStage::list(v);
}

// One byte, 0..n-1; most byte values give the lower half only, so that small problems (fast
// executions) are the common case and the largest are still reached (byte values below 64).
int pick_size(Bytes& in, int n) {
  const int b = in.pick(256);
  return b < 64 ? b % n : b % std::max(1, n / 2);
}

Problem decode(Bytes& in) {
  Problem p;
  p.ranks = 1 + pick_size(in, 8);
  switch (in.pick(4)) {
    case 0: p.placement = PlacementKind::Looped, p.stages_per_rank = 1 + pick_size(in, 4); break;
    case 1: p.placement = PlacementKind::VShape, p.stages_per_rank = 2; break;
    case 2: p.placement = PlacementKind::Wave, p.stages_per_rank = 2 + in.pick(3); break;
    default: p.placement = PlacementKind::Custom, p.stages_per_rank = 1 + pick_size(in, 4); break;
  }
  const int dir_pick = in.pick(8);
  p.directions = dir_pick < 2 ? 2 : dir_pick == 2 ? 3 + in.pick(2) : 1;
  p.microbatches = p.directions > 1 ? p.directions * (1 + pick_size(in, 8)) : 1 + pick_size(in, 16);
  if (p.placement == PlacementKind::Custom)
    for (int d = 0; d < p.num_directions(); ++d) {
      std::vector<int32_t> map;
      for (int s = 0; s < p.num_stages(); ++s) map.push_back(in.pick(p.ranks));
      p.stage_to_rank.push_back(map);
    }
  p.backward = static_cast<BackwardMode>(in.pick(3));
  const int S = p.num_stages();
  p.cost.F = costs(in, S);
  p.cost.B = costs(in, S);
  p.cost.W = costs(in, S);
  p.cost.comm = in.from(kComm);
  if (in.pick(3) == 0)
    p.cost.FB = PerStage::of(std::min(in.from(kFbFactor) * (p.cost.F.max() + p.cost.B.max()), kMaxMagnitude));
  p.memory.F = in.pick(4) == 0 ? costs(in, S) : PerStage::of(in.from(kMemF));
  p.memory.B = PerStage::of(in.from(kMemB));
  p.memory.W = PerStage::of(in.from(kMemW));
  if (in.pick(4) == 0) p.objective = Objective::MaxSpan;
  return p;
}

[[noreturn]] void report(const char* what, const Schedule& s, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_lower: %s\n%s\nproblem: %s\n%s\n", what, detail.c_str(), problem_json(s.problem).c_str(),
               write_schedule_json(s, nullptr).c_str());
  std::abort();
}

// A cap near the schedule's own peaks (uniform or per rank, with some slack or none), so that the
// receive buffers lowering adds are what decides.
void add_cap(Schedule& s, Bytes& in) {
  const int how = in.pick(3);
  if (how == 0) return;
  std::vector<double> peaks = peak_memory(s);
  const double slack = in.from(kCapSlack);
  if (how == 1) {
    s.problem.memory.cap = PerStage::of(*std::max_element(peaks.begin(), peaks.end()) + slack);
  } else {
    for (double& v : peaks) v += slack;
    s.problem.memory.cap = PerStage::list(peaks);
  }
  if (!validate(s.problem).empty()) s.problem.memory.cap.reset();
}

// Small edits that usually break the order: a swap within a rank, a move to another rank, a
// dropped or a duplicated action. Only a swap keeps the overlapped units (their indices stay in
// range; whether they still make sense is verify's to say).
void perturb(Schedule& s, Bytes& in) {
  const int edits = in.pick(4) == 0 ? 1 + in.pick(3) : 0;
  for (int e = 0; e < edits; ++e) {
    const size_t r = static_cast<size_t>(in.pick(s.problem.ranks));
    auto& order = s.ranks[r];
    if (order.empty()) continue;
    const size_t i = static_cast<size_t>(in.pick(static_cast<int>(order.size())));
    const size_t j = static_cast<size_t>(in.pick(static_cast<int>(order.size())));
    switch (in.pick(4)) {
      case 0: std::swap(order[i], order[j]); break;
      case 1: {
        Action a = order[i];
        order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
        s.ranks[static_cast<size_t>(in.pick(s.problem.ranks))].push_back(a);
        s.overlap.clear();
        break;
      }
      case 2: order.erase(order.begin() + static_cast<std::ptrdiff_t>(i)), s.overlap.clear(); break;
      default: order.insert(order.begin() + static_cast<std::ptrdiff_t>(j), order[i]), s.overlap.clear(); break;
    }
  }
}

bool same_orders(const Schedule& a, const Schedule& b) {
  auto units = [](const Schedule& s) { return s.has_overlap() ? s.overlap : std::vector<std::vector<int32_t>>{}; };
  return a.ranks == b.ranks && units(a) == units(b);
}

// Auto, which CLI commands use, and one other strategy the input picks (each lowering and its
// verification cost about as much as all the emitters together).
void check_lowering(const Schedule& s, LowerStrategy other) {
  bool other_clean = false;
  for (LowerStrategy strategy : {other, LowerStrategy::Auto}) {
    const Program prog = codegen::lower(s, {strategy});
    const std::vector<codegen::ProgramIssue> issues = codegen::verify_program(s, prog);
    if (strategy == LowerStrategy::Naive) continue;  // allowed to deadlock: it exists to be rejected
    for (const codegen::ProgramIssue& i : issues)
      if (i.is_bug)
        report("verify_program rejects what lower made", s,
               std::string(codegen::to_string(strategy)) + ": rank " + std::to_string(i.rank) + " op " +
                   std::to_string(i.op) + ": " + i.message);
    if (strategy == other) {
      other_clean = issues.empty();
      continue;
    }
    if (!issues.empty() && other_clean)
      report("Auto lowering breaks the cap although Prefetch or JustInTime meets it", s, issues.front().message);
    codegen::EmitOptions eo;
    eo.source_name = "fuzz";
    eo.simulated_makespan = 1;
    for (const codegen::EmittedFile& f : codegen::emit_cpp(prog, eo))
      if (f.content.empty()) report("emit_cpp wrote an empty file", s, f.name);
  }
}

void check_round_trips(const Schedule& s, const Metrics& metrics) {
  if (!codegen::torch_csv_conflict(s.problem)) {  // bidirectional schedules have no torch-csv form
    SourceManager sources;
    int32_t file = sources.add("fuzz.csv", codegen::emit_torch_csv(s));
    Diagnostics diags(&sources);
    // The shape is given (the problem's own), so the import checks the file against it.
    ir::FieldLocs given;
    using ir::Field;
    for (Field f : {Field::Ranks, Field::StagesPerRank, Field::Microbatches, Field::Direction, Field::Placement,
                    Field::StageToRank, Field::Backward})
      given.emplace(f, SourceLoc{});
    auto back = frontend::read_torch_csv(sources, file, s.problem, given, diags);
    if (!back) report("the exported torch-csv does not import", s, diags.str() + sources.text(file));
    if (!same_orders(*back, s)) report("torch-csv does not round-trip", s, sources.text(file));
  }
  {
    SourceManager sources;
    int32_t file = sources.add("fuzz.json", write_schedule_json(s, &metrics));
    Diagnostics diags(&sources);
    auto back = read_schedule_json(sources, file, diags);
    if (!back) report("the written schedule JSON does not read back", s, diags.str());
    if (!same_orders(*back, s) || !(back->problem == s.problem)) report("schedule JSON does not round-trip", s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const Problem p = decode(in);
  if (!validate(p).empty()) return 0;
  const int pair_percent = in.pick(3) * 40;
  const bool overlap = in.pick(2) == 1;
  constexpr LowerStrategy kOthers[] = {LowerStrategy::Prefetch, LowerStrategy::JustInTime, LowerStrategy::Naive};
  const LowerStrategy other = kOthers[in.pick(3)];
  test::Rng rng(in.seed());
  Schedule s = fuzz::random_order(p, rng, pair_percent);
  // add_random_overlap simulates once per candidate: only on small schedules.
  if (overlap && p.microbatches * p.num_stages() <= 64) test::add_random_overlap(s, rng);
  add_cap(s, in);
  perturb(s, in);

  const bool valid = verify(s).empty();
  SimResult sim = simulate(s);
  if (!valid) return 0;
  if (!sim.timeline) report("a schedule ir::verify accepts deadlocks in simulation", s);
  const Timeline& t = *sim.timeline;

  check_lowering(s, other);
  (void)codegen::emit_text(s, t);
  (void)codegen::emit_svg(s, t);
  (void)codegen::emit_perfetto(s, t);
  check_round_trips(s, t.metrics);
  return 0;
}
