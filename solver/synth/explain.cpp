#include "solver/synth/explain.h"

#include <algorithm>
#include <string>

#include <z3++.h>

#include "ir/simulate.h"
#include "support/numbers.h"

namespace schedc::solver {

ir::Schedule sequential_schedule(const ir::Problem& p) {
  using ir::ActionKind;
  ir::Schedule s;
  s.problem = p;
  s.ranks.resize(static_cast<size_t>(p.ranks));
  const bool fused = p.backward == ir::BackwardMode::Fused;
  const int32_t S = p.num_stages();
  for (int32_t mb = 0; mb < p.microbatches; ++mb) {
    auto put = [&](ir::Action a) { s.ranks[ir::rank_of(p, a).index()].push_back(a); };
    for (int32_t st = 0; st < S; ++st) put(ir::F(mb, st));
    for (int32_t st = S - 1; st >= 0; --st) {
      if (fused) {
        put(ir::BW(mb, st));
      } else {
        put(ir::B(mb, st));
        put(ir::W(mb, st));
      }
    }
  }
  return s;
}

namespace {

// The memory one microbatch must hold on `rank` when its first backward starts: all of its
// forwards on that rank have run and none of its backwards.
double forward_hold(const ir::Problem& p, int32_t rank, int32_t direction) {
  double sum = 0;
  for (int32_t st = 0; st < p.num_stages(); ++st)
    if (p.rank_of(direction, ir::StageId(st)).value == rank) sum += p.memory.F.at(static_cast<size_t>(st));
  return sum;
}

// Z3 model of one microbatch on one rank: the positions of its actions, the dependencies between
// them, and the memory prefix sums under the cap, each group a named assertion. Its unsat core
// names the problem fields in conflict.
std::vector<ir::Field> unsat_core_fields(const ir::Problem& p, int32_t rank, int32_t direction, std::string* error) {
  using ir::ActionKind;
  const bool fused = p.backward == ir::BackwardMode::Fused;
  std::vector<ir::Action> acts;
  const int32_t mb = p.first_microbatch(direction);
  for (int32_t st = 0; st < p.num_stages(); ++st) {
    if (p.rank_of(direction, ir::StageId(st)).value != rank) continue;
    acts.push_back(ir::F(mb, st));
    if (fused) {
      acts.push_back(ir::BW(mb, st));
    } else {
      acts.push_back(ir::B(mb, st));
      acts.push_back(ir::W(mb, st));
    }
  }
  try {
    z3::context ctx;
    z3::solver solver(ctx);
    {
      z3::params prm(ctx);
      prm.set("ctrl_c", false);  // SIGINT is schedc's (tools/schedc/interrupt.cpp), not Z3's
      solver.set(prm);
    }
    const int n = static_cast<int>(acts.size());
    std::vector<z3::expr> pos;
    for (int i = 0; i < n; ++i) pos.push_back(ctx.int_const(("pos_" + ir::format_action(acts[i])).c_str()));
    // One assumption per field, named by the field, so that the core reads back as fields.
    auto field_const = [&](ir::Field f) { return ctx.bool_const(std::string(ir::to_string(f)).c_str()); };
    z3::expr order = field_const(ir::Field::StagesPerRank);  // which stages share the rank, and their order
    z3::expr deltas = field_const(ir::Field::MemoryF);
    z3::expr cap = field_const(ir::Field::MemoryCap);
    z3::expr_vector distinct(ctx);
    for (int i = 0; i < n; ++i) {
      solver.add(pos[i] >= 0 && pos[i] < n);
      distinct.push_back(pos[i]);
    }
    solver.add(z3::distinct(distinct));
    // Every forward of the microbatch runs before any of its backwards (the chain through the
    // last stage), and W after its B.
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        bool f_before_b = acts[i].kind == ActionKind::F && acts[j].kind != ActionKind::F;
        bool b_before_w = acts[i].kind == ActionKind::B && acts[j].kind == ActionKind::W &&
                          acts[i].stage == acts[j].stage;
        if (f_before_b || b_before_w) solver.add(z3::implies(order, pos[i] < pos[j]));
      }
    const int64_t scale = ir::memory_scale(p);
    std::vector<z3::expr> delta;
    for (int i = 0; i < n; ++i) {
      z3::expr d = ctx.int_const(("mem_" + ir::format_action(acts[i])).c_str());
      solver.add(z3::implies(
          deltas, d == ctx.int_val(static_cast<int64_t>(ir::to_fixed(ir::memory_delta(p, acts[i]), scale)))));
      delta.push_back(d);
    }
    int64_t limit = ir::to_fixed(*p.cap_of(ir::RankId(rank)), scale);
    for (int i = 0; i < n; ++i) {
      z3::expr prefix = ctx.int_val(0);
      for (int j = 0; j < n; ++j) prefix = prefix + z3::ite(pos[j] <= pos[i], delta[j], ctx.int_val(0));
      solver.add(z3::implies(cap, prefix <= ctx.int_val(static_cast<int64_t>(limit))));
    }
    z3::expr_vector assumptions(ctx);
    assumptions.push_back(order);
    assumptions.push_back(deltas);
    assumptions.push_back(cap);
    if (solver.check(assumptions) != z3::unsat) return {};
    std::vector<ir::Field> fields;
    z3::expr_vector core = solver.unsat_core();
    for (unsigned i = 0; i < core.size(); ++i)
      if (std::optional<ir::Field> f = ir::parse_field(core[i].decl().name().str())) fields.push_back(*f);
    std::sort(fields.begin(), fields.end(),
              [](ir::Field a, ir::Field b) { return ir::to_string(a) < ir::to_string(b); });
    return fields;
  } catch (const z3::exception& e) {
    *error = e.msg();
    return {};
  }
}

}  // namespace

std::optional<Infeasibility> explain_cap(const ir::Problem& p) {
  if (!p.memory.cap) return std::nullopt;
  // Needed on each rank, proved: one microbatch's forwards on the rank, all at once.
  std::optional<Infeasibility> worst;
  double smallest = 0;
  ir::Schedule seq = sequential_schedule(p);
  std::vector<double> seq_peak = ir::peak_memory(seq);
  for (int32_t r = 0; r < p.ranks; ++r) {
    // Caps are stated with the stages' static memory beside the activations.
    double stat = p.static_of(ir::RankId(r));
    smallest = std::max(smallest, seq_peak[static_cast<size_t>(r)] + stat);
    double cap = *p.cap_of(ir::RankId(r));
    for (int32_t d = 0; d < p.num_directions(); ++d) {
      double need = forward_hold(p, r, d);
      if (need <= cap + 1e-9) continue;
      if (worst && need - cap <= worst->needed - worst->cap) continue;
      Infeasibility inf;
      inf.rank = r;
      inf.cap = cap + stat;  // stated, as the spec wrote it
      inf.needed = need + stat;
      std::string error;
      inf.conflicting_fields = unsat_core_fields(p, r, d, &error);
      inf.explanation = "rank " + std::to_string(r) +
                        " must hold the activations of one microbatch on all its stages (" + format_number(need) +
                        ") before that microbatch's first backward, above its cap of " + format_number(cap + stat) +
                        (stat > 0 ? " less its static memory (" + format_number(stat) + ")" : std::string());
      if (!error.empty()) inf.explanation += " (Z3 could not name the conflicting lines: " + error + ")";
      worst = inf;
    }
  }
  if (worst) worst->smallest_cap = smallest;
  return worst;
}

}  // namespace schedc::solver
