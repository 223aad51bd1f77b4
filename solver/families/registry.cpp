// The table of known families, their defaults, the constraints every family shares, and the
// checks every generated schedule passes before it leaves (verifier, memory cap).

#include <algorithm>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "solver/families/common.h"
#include "solver/families/families.h"
#include "support/internal_error.h"
#include "support/numbers.h"

namespace schedc::solver {
namespace {

using fam::FamilyContext;
using fam::Generator;
using ir::BackwardMode;
using ir::PlacementKind;

struct Entry {
  FamilyInfo info;
  Generator generate;
  int32_t default_vpp;  // for families that take any number of stages per rank
  int32_t min_vpp;
  bool even_pp = false;
  int32_t min_mb_per_rank = 0;  // microbatches >= this * pp
};

FamilyInfo info(std::string name, std::string summary, std::string constraints, std::string params, BackwardMode b,
                int32_t d, PlacementKind pl, int32_t spr) {
  FamilyInfo f;
  f.name = std::move(name);
  f.summary = std::move(summary);
  f.constraints = std::move(constraints);
  f.params = std::move(params);
  f.backward = b;
  f.directions = d;
  f.placement = pl;
  f.stages_per_rank = spr;
  return f;
}

// Chimera and its generalisation: k 1F1B pipelines in pairs of mirrored directions (docs/design.md section 3).
FamilyInfo chimera_info() {
  FamilyInfo f = info("chimera",
                      "Chimera (SC'21): mirrored 1F1B pipelines, one per direction (two, or `directions = k`), "
                      "merged on every rank",
                      "direction bidirectional or more, placement looped, vpp = 1, microbatches divisible by "
                      "the directions",
                      "", BackwardMode::Fused, 2, PlacementKind::Looped, 1);
  f.any_directions = true;
  return f;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
      {info("gpipe", "all forwards, then all backwards in microbatch order (GPipe; PyTorch ScheduleGPipe)",
            "direction single, placement looped, vpp = 1", "", BackwardMode::Fused, 1, PlacementKind::Looped, 1),
       fam::generate_gpipe, 1, 1},
      {info("1f1b",
            "warm-up of pp-1-r forwards, then one forward one backward, then cool-down (PipeDream-Flush, "
            "Megatron, PyTorch Schedule1F1B)",
            "direction single, placement looped, vpp = 1", "", BackwardMode::Fused, 1, PlacementKind::Looped, 1),
       fam::generate_one_f_one_b, 1, 1},
      {info("interleaved-1f1b",
            "Megatron-Core's interleaved 1F1B over vpp model chunks per rank, microbatches taken in groups per chunk",
            "direction single, placement looped, vpp >= 2 (default 2)",
            "group_size: microbatches per chunk in Megatron-Core's schedule table (1..m; default pp, or the smallest "
            "divisor of m that is >= min(pp, m) when pp would deadlock)",
            BackwardMode::Fused, 1, PlacementKind::Looped, 0),
       fam::generate_interleaved_1f1b, 2, 2},
      {info("looped-bfs",
            "breadth-first looped schedule: every microbatch through each local stage in turn, then backwards in "
            "reverse (PyTorch ScheduleLoopedBFS)",
            "direction single, placement looped, vpp >= 1 (default 2)", "", BackwardMode::Fused, 1,
            PlacementKind::Looped, 0),
       fam::generate_looped_bfs, 2, 1},
      {info("zb-h1",
            "Zero Bubble ZB-H1: 1F1B with split backward, W passes deferred to fill the cool-down; "
            "1F1B's memory (PyTorch ScheduleInterleavedZeroBubble with one stage per rank)",
            "direction single, placement looped, vpp = 1, backward split or mixed", "", BackwardMode::Split, 1,
            PlacementKind::Looped, 1),
       fam::generate_zb_h1, 1, 1},
      {info("zb-h2", "Zero Bubble ZB-H2: up to 2pp-1 forwards in flight, W passes fill every gap (parallelogram)",
            "direction single, placement looped, vpp = 1, backward split or mixed", "", BackwardMode::Split, 1,
            PlacementKind::Looped, 1),
       fam::generate_zb_h2, 1, 1},
      {info("interleaved-zb",
            "interleaved zero bubble (ZB1P over vpp chunks, PyTorch ScheduleInterleavedZeroBubble), retimed for the "
            "problem's costs within that order's peak memory",
            "direction single, placement looped, vpp >= 2 (default 2), backward split or mixed", "",
            BackwardMode::Split, 1, PlacementKind::Looped, 0),
       fam::generate_interleaved_zb, 2, 2},
      {info("zb-v",
            "Zero Bubble ZB-V: V-shaped placement, 2pp chunk activations, no bubble when F = B = W "
            "(PyTorch ScheduleZBVZeroBubble)",
            "direction single, placement vshape, vpp = 2, backward split or mixed", "", BackwardMode::Split, 1,
            PlacementKind::VShape, 2),
       fam::generate_zb_v, 2, 2},
      {info("v-half", "V-Half (Pipeline Parallelism with Controllable Memory): about half of 1F1B's activations",
            "direction single, placement vshape, vpp = 2, backward split or mixed", "", BackwardMode::Split, 1,
            PlacementKind::VShape, 2),
       fam::generate_v_half, 2, 2},
      {info("v-min", "V-Min (Pipeline Parallelism with Controllable Memory): about a third of 1F1B's activations",
            "direction single, placement vshape, vpp = 2, backward split or mixed", "", BackwardMode::Split, 1,
            PlacementKind::VShape, 2),
       fam::generate_v_min, 2, 2},
      {chimera_info(), fam::generate_chimera, 1, 1},
      {info("dualpipe",
            "DeepSeek DualPipe: bidirectional, overlapped F&B units in the steady phase, zero-bubble W "
            "passes at the edges",
            "direction bidirectional, placement looped, vpp = 1, pp even, microbatches even and >= 2*pp, backward "
            "mixed or split",
            "", BackwardMode::Mixed, 2, PlacementKind::Looped, 1),
       fam::generate_dualpipe, 1, 1, true, 2},
      {info("dualpipev",
            "DeepSeek DualPipeV (\"cut-in-half\" DualPipe): V-shaped, overlapped F&B units "
            "(PyTorch ScheduleDualPipeV)",
            "direction single, placement vshape, vpp = 2, microbatches >= 2*pp, backward mixed or split", "",
            BackwardMode::Mixed, 1, PlacementKind::VShape, 2),
       fam::generate_dualpipev, 2, 2, false, 2},
  };
  return t;
}

const Entry* find_entry(std::string_view name) {
  for (const Entry& e : table())
    if (e.info.name == name) return &e;
  return nullptr;
}

bool has(const std::vector<ir::Field>& given, ir::Field field) {
  return std::find(given.begin(), given.end(), field) != given.end();
}

// The constraints every family states through its FamilyInfo. Reports each broken one.
bool check_common(const Entry& e, const FamilyContext& cx) {
  const ir::Problem& p = cx.problem;
  const FamilyInfo& f = e.info;
  bool ok = true;
  auto fail = [&](const std::string& msg) {
    cx.constraint(msg);
    ok = false;
  };
  const bool directions_ok = p.directions == f.directions || (f.any_directions && p.directions >= 2);
  bool odd_for_two_directions = f.directions == 2 && p.directions <= 2 && p.direction_microbatches.empty() &&
                                p.microbatches % 2 != 0;
  if (odd_for_two_directions)
    fail("an even number of microbatches (half flow in each direction), got " +
         backtick(std::to_string(p.microbatches)));
  else if (directions_ok && p.directions > 2 && p.direction_microbatches.empty() && p.microbatches % p.directions != 0)
    fail("a number of microbatches divisible by the " + std::to_string(p.directions) +
         " directions (an equal share each), got " + backtick(std::to_string(p.microbatches)));
  else if (directions_ok && p.directions > 1 && !p.direction_microbatches.empty() && !f.any_directions)
    fail("the even split of microbatches between its directions, got `directions = [...]`");
  else if (!directions_ok)
    fail("direction " + backtick(ir::direction_name(f.directions)) + (f.any_directions ? " or more" : "") + ", got " +
         backtick(ir::direction_name(p.directions)));
  // A wrong vpp kept the default `looped` placement (apply_family_defaults); report the vpp alone.
  bool vpp_wrong = f.stages_per_rank > 0 && p.stages_per_rank != f.stages_per_rank;
  bool placement_follows = vpp_wrong && p.placement == PlacementKind::Looped && f.placement == PlacementKind::VShape;
  if (p.placement != f.placement && !placement_follows)
    fail("placement " + backtick(ir::to_string(f.placement)) + ", got " + backtick(ir::to_string(p.placement)));
  if (vpp_wrong)
    fail("vpp (stages per rank) = " + std::to_string(f.stages_per_rank) + ", got " +
         backtick(std::to_string(p.stages_per_rank)));
  if (f.stages_per_rank == 0 && p.stages_per_rank < e.min_vpp)
    fail("vpp (stages per rank) >= " + std::to_string(e.min_vpp) + ", got " +
         backtick(std::to_string(p.stages_per_rank)));
  if (e.even_pp && p.ranks % 2 != 0) fail("an even pp, got " + backtick(std::to_string(p.ranks)));
  // A family places no recomputation: `allowed` takes its schedule as one without any.
  if (p.recompute == ir::Recompute::All)
    fail("`recompute` `off` or `allowed` (families place no recomputation; `schedule = solve` does), got `all`");
  if (e.min_mb_per_rank > 0 && p.microbatches < int64_t{e.min_mb_per_rank} * p.ranks)
    fail("at least " + std::to_string(e.min_mb_per_rank) + "*pp = " + std::to_string(e.min_mb_per_rank * p.ranks) +
         " microbatches, got " + backtick(std::to_string(p.microbatches)));
  if (f.backward != BackwardMode::Fused && p.backward == BackwardMode::Fused)
    fail("a split backward (`split` or `mixed`) to place its W passes, got `fused`");
  return ok;
}

ir::Provenance provenance(std::string_view name, const ir::Params& params) {
  ir::Provenance p = ir::Provenance::of("family");
  p.family = std::string(name);
  p.params = params;
  return p;
}

// Refuses a schedule whose peak exceeds a rank's cap, naming the smallest cap that works.
bool check_cap(const FamilyContext& cx, const ir::Schedule& s) {
  const ir::Problem& p = cx.problem;
  if (!p.memory.cap) return true;
  std::vector<double> peaks = ir::peak_memory(s);
  const int64_t scale = ir::memory_scale(p);
  // Compared as activations against the cap less static memory; reported as the device holds them.
  std::vector<double> held = peaks;
  for (int32_t r = 0; r < p.ranks && static_cast<size_t>(r) < held.size(); ++r)
    held[static_cast<size_t>(r)] += p.static_of(ir::RankId(r));
  int32_t worst = -1;
  for (int32_t r = 0; r < p.ranks; ++r)
    if (ir::to_fixed(peaks[static_cast<size_t>(r)], scale) > ir::to_fixed(*p.cap_of(ir::RankId(r)), scale) && worst < 0)
      worst = r;
  if (worst < 0) return true;
  // In the spec's spelling, units included (`8.4GiB`), so that the value can be pasted back.
  auto mem = [&](double v) { return format_number(v) + p.memory_unit; };
  if (p.memory.cap->is_uniform()) {
    size_t top = static_cast<size_t>(std::max_element(held.begin(), held.end()) - held.begin());
    cx.diags.error(DiagKind::CapInfeasible, cx.loc,
                   "family " + backtick(cx.name) + " needs a memory cap of at least " + backtick(mem(held[top])) +
                       " (the peak of rank " + std::to_string(top) + "), got " + backtick(mem(p.memory.cap->uniform)));
    return false;
  }
  std::string all;
  for (size_t r = 0; r < held.size(); ++r) all += (r ? ":" : "") + mem(held[r]);
  cx.diags.error(DiagKind::CapInfeasible, cx.loc,
                 "family " + backtick(cx.name) + " peaks at " + backtick(mem(held[static_cast<size_t>(worst)])) +
                     " on rank " + std::to_string(worst) + ", above its cap of " +
                     backtick(mem(*p.stated_cap_of(ir::RankId(worst)))) + "; it needs per-rank caps of at least " +
                     backtick(all));
  return false;
}

}  // namespace

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> v = [] {
    std::vector<FamilyInfo> out;
    for (const Entry& e : table()) out.push_back(e.info);
    return out;
  }();
  return v;
}

const FamilyInfo* find_family(std::string_view name) {
  for (const FamilyInfo& f : families())
    if (f.name == name) return &f;
  return nullptr;
}

void apply_family_defaults(const FamilyInfo& family, const std::vector<ir::Field>& given, ir::Problem& p) {
  const Entry* e = find_entry(family.name);
  if (!e) return;
  // A default is applied only where it keeps the problem valid with the fields the user set, so
  // that a field the family cannot use reaches generate_family and is reported as its constraint.
  if (!has(given, ir::Field::Backward)) p.backward = family.backward;
  if (!has(given, ir::Field::Direction) && !(family.directions == 2 && p.microbatches % 2 != 0))
    p.directions = family.directions;
  bool vpp_given = has(given, ir::Field::StagesPerRank);
  if (!has(given, ir::Field::Placement) && !has(given, ir::Field::StageToRank)) {
    bool vpp_conflict = vpp_given && family.stages_per_rank > 0 && p.stages_per_rank != family.stages_per_rank;
    bool vshape_conflict = family.placement == PlacementKind::VShape && vpp_given && p.stages_per_rank != 2;
    if (!vpp_conflict && !vshape_conflict) {
      p.placement = family.placement;
      p.stage_to_rank.clear();
    }
  }
  if (!vpp_given) {
    int32_t vpp = family.stages_per_rank > 0 ? family.stages_per_rank : e->default_vpp;
    // Keep a placement the user chose valid, so that the family reports the placement it needs.
    if (p.placement == PlacementKind::VShape) vpp = 2;
    if (p.placement == PlacementKind::Wave) vpp = std::max(vpp, 2);
    if (p.placement != PlacementKind::Custom) p.stages_per_rank = vpp;
  }
}

std::optional<ir::Schedule> generate_family(std::string_view name, const ir::Problem& p, const ir::Params& params,
                                            SourceLoc loc, Diagnostics& diags, const Deadline* deadline) {
  const Entry* e = find_entry(name);
  if (!e) {
    std::string known;
    for (const Entry& x : table()) known += (known.empty() ? "" : ", ") + x.info.name;
    diags.error(DiagKind::UnknownFamily, loc, "unknown family " + backtick(name) + ", expected one of " + known);
    return std::nullopt;
  }
  FamilyContext cx{e->info.name, p, params, loc, diags, deadline};
  if (!check_common(*e, cx)) return std::nullopt;
  std::optional<ir::Schedule> s = e->generate(cx);
  if (!s) return std::nullopt;
  fam::adapt_backward(*s);
  s->provenance = provenance(name, params);
  // The cap first: it is one pass over the orders, where verifying simulates (at pp 1024 a family
  // over the cap is refused in a fraction of the time).
  if (!check_cap(cx, *s)) return std::nullopt;

  ir::VerifyOptions opts;
  opts.check_memory = false;  // the cap is checked below, with a message that names the cap needed
  std::vector<ir::VerifyIssue> issues = ir::verify(*s, opts);
  if (!issues.empty()) {
    SCHEDC_INTERNAL_ERROR("family " + backtick(name) +
                          " produced an invalid schedule for this problem: " + issues.front().message);
  }
  return s;
}

}  // namespace schedc::solver
