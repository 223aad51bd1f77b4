#include "ir/problem.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>

#include "ir/schedule.h"
#include "support/numbers.h"

namespace schedc::ir {

namespace {

// Each enum's names, indexed by its value: what to_string writes and the parse_* functions read.
constexpr std::array<std::string_view, 4> kPlacementNames = {"looped", "vshape", "wave", "custom"};
constexpr std::array<std::string_view, 3> kBackwardNames = {"fused", "split", "mixed"};
constexpr std::array<std::string_view, 2> kObjectiveNames = {"makespan", "max-span"};
constexpr std::array<std::string_view, 3> kRecomputeNames = {"off", "allowed", "all"};

template <class Enum, size_t N>
std::optional<Enum> parse_name(const std::array<std::string_view, N>& names, std::string_view s) {
  auto it = std::find(names.begin(), names.end(), s);
  if (it == names.end()) return std::nullopt;
  return static_cast<Enum>(it - names.begin());
}

}  // namespace

std::string direction_name(int32_t directions) {
  if (directions == 1) return "single";
  if (directions == 2) return "bidirectional";
  return std::to_string(directions) + " directions";
}
std::string_view to_string(PlacementKind p) { return kPlacementNames[static_cast<size_t>(p)]; }
std::string_view to_string(BackwardMode b) { return kBackwardNames[static_cast<size_t>(b)]; }
std::string_view to_string(Objective o) { return kObjectiveNames[static_cast<size_t>(o)]; }
std::string_view to_string(Recompute r) { return kRecomputeNames[static_cast<size_t>(r)]; }

std::optional<int32_t> parse_direction(std::string_view s) {
  if (s == "single") return 1;
  if (s == "bidirectional") return 2;
  return std::nullopt;
}
std::optional<PlacementKind> parse_placement(std::string_view s) {
  return parse_name<PlacementKind>(kPlacementNames, s);
}
std::optional<BackwardMode> parse_backward(std::string_view s) { return parse_name<BackwardMode>(kBackwardNames, s); }

std::optional<Objective> parse_objective(std::string_view s) {
  if (s == "max_span") return Objective::MaxSpan;  // also accepted with an underscore
  return parse_name<Objective>(kObjectiveNames, s);
}
std::optional<Recompute> parse_recompute(std::string_view s) { return parse_name<Recompute>(kRecomputeNames, s); }

double PerStage::max() const {
  if (values.empty()) return uniform;
  return *std::max_element(values.begin(), values.end());
}

int32_t Problem::direction_of(MbId mb) const {
  if (directions <= 1) return 0;
  if (!direction_microbatches.empty()) {
    int32_t first = 0;
    for (size_t d = 0; d + 1 < direction_microbatches.size(); ++d) {
      first += direction_microbatches[d];
      if (mb.value < first) return static_cast<int32_t>(d);
    }
    return static_cast<int32_t>(direction_microbatches.size()) - 1;
  }
  const int32_t per = std::max(microbatches / directions, 1);
  return std::min(mb.value / per, directions - 1);
}

int32_t Problem::first_microbatch(int32_t direction) const {
  if (direction_microbatches.empty()) return direction * (microbatches / std::max(directions, 1));
  int32_t first = 0;
  for (int32_t d = 0; d < direction && static_cast<size_t>(d) < direction_microbatches.size(); ++d)
    first += direction_microbatches[static_cast<size_t>(d)];
  return first;
}

int32_t Problem::microbatches_of(int32_t direction) const {
  if (direction_microbatches.empty()) return microbatches / std::max(directions, 1);
  return direction_microbatches.at(static_cast<size_t>(direction));
}

int32_t Problem::direction_rank(int32_t dir, int32_t r) const {
  if (dir == 0) return r;
  const int64_t pairs = (directions + 1) / 2;
  r = static_cast<int32_t>((r + (dir / 2) * int64_t{ranks} / pairs) % ranks);
  return dir % 2 == 1 ? ranks - 1 - r : r;
}

int32_t Problem::base_rank(int32_t dir, int32_t rank) const {
  if (dir == 0) return rank;
  const int64_t pairs = (directions + 1) / 2;
  int32_t r = dir % 2 == 1 ? ranks - 1 - rank : rank;
  return static_cast<int32_t>((r - (dir / 2) * int64_t{ranks} / pairs % ranks + ranks) % ranks);
}

RankId Problem::rank_of(int32_t dir, StageId stage) const {
  assert(stage.value >= 0 && stage.value < num_stages() && "stage out of range");
  int32_t s = stage.value;
  int32_t r = 0;
  switch (placement) {
    case PlacementKind::Looped: r = s % ranks; break;
    case PlacementKind::VShape: r = s < ranks ? s : 2 * ranks - 1 - s; break;
    case PlacementKind::Wave: r = (s / ranks) % 2 == 0 ? s % ranks : ranks - 1 - s % ranks; break;
    case PlacementKind::Custom:
      // Custom lists name the rank of every direction explicitly: no mirroring.
      return RankId(stage_to_rank[static_cast<size_t>(dir)][static_cast<size_t>(s)]);
  }
  return RankId(direction_rank(dir, r));
}

std::optional<double> Problem::stated_cap_of(RankId rank) const {
  if (!memory.cap) return std::nullopt;
  return memory.cap->at(rank.index());
}

bool Problem::has_static_memory() const {
  const PerStage& v = memory.static_memory;
  if (v.is_uniform()) return v.uniform != 0;
  return std::any_of(v.values.begin(), v.values.end(), [](double x) { return x != 0; });
}

double Problem::static_of(RankId rank) const {
  if (!has_static_memory()) return 0;
  const PerStage& v = memory.static_memory;
  if (!v.is_uniform() && v.values.size() != static_cast<size_t>(num_stages())) return 0;  // validate() reports it
  double sum = 0;
  for (int32_t d = 0; d < num_directions(); ++d)
    for (int32_t s = 0; s < num_stages(); ++s)
      if (rank_of(d, StageId(s)) == rank) sum += v.at(static_cast<size_t>(s));
  return sum;
}

std::optional<RankId> Problem::static_over_cap() const {
  if (!memory.cap || !has_static_memory()) return std::nullopt;
  for (int32_t r = 0; r < ranks; ++r)
    if (static_of(RankId(r)) > *stated_cap_of(RankId(r))) return RankId(r);
  return std::nullopt;
}

std::optional<double> Problem::cap_of(RankId rank) const {
  if (!memory.cap) return std::nullopt;
  return memory.cap->at(rank.index()) - static_of(rank);
}

namespace {

void check_per_stage(const PerStage& v, size_t expected, const char* what, Field field, bool non_negative,
                     std::vector<ProblemError>& out) {
  const std::string name(to_string(field));
  // Magnitudes up to 1e15; validate() checks separately that the fixed-point sums fit in int64.
  auto bad = [&](double x) { return !std::isfinite(x) || (non_negative && x < 0) || std::abs(x) > kMaxMagnitude; };
  if (v.is_uniform()) {
    if (bad(v.uniform))
      out.push_back({field, DiagKind::OutOfRange,
                     "`" + name + "` must be a number in " + (non_negative ? std::string("0") : std::string("-1e15")) +
                         "..1e15, got `" + format_number(v.uniform) + "`"});
    return;
  }
  if (v.values.size() != expected) {
    out.push_back({field, DiagKind::BadValue,
                   "`" + name + "` needs one value per " + what + " (" + std::to_string(expected) + "), got " +
                       std::to_string(v.values.size())});
    return;
  }
  for (double x : v.values)
    if (bad(x)) {
      out.push_back({field, DiagKind::OutOfRange,
                     "`" + name + "` values must be numbers in " +
                         (non_negative ? std::string("0") : std::string("-1e15")) + "..1e15, got `" + format_number(x) +
                         "`"});
      return;
    }
}

// Recomputation needs what a checkpointed F keeps (`memory.input`), from 0 to the F's own memory;
// without recomputation neither `input` nor the R cost means anything, so stating them is an error.
void check_recompute(const Problem& p, size_t stages, std::vector<ProblemError>& out) {
  if (p.cost.R) check_per_stage(*p.cost.R, stages, "stage", Field::CostR, true, out);
  if (p.memory.input) check_per_stage(*p.memory.input, stages, "stage", Field::MemoryInput, true, out);
  if (p.recompute == Recompute::Off) {
    for (auto [given, field] :
         {std::pair{p.cost.R.has_value(), Field::CostR}, {p.memory.input.has_value(), Field::MemoryInput}})
      if (given)
        out.push_back({field, DiagKind::BadValue,
                       "`" + std::string(to_string(field)) +
                           "` only matters with recomputation: add `recompute = allowed` (or `all`), or remove it"});
    return;
  }
  if (!p.memory.input) {
    out.push_back({Field::Recompute, DiagKind::MissingKey,
                   "`recompute = " + std::string(to_string(p.recompute)) +
                       "` needs `memory.input`: what a checkpointed forward keeps until its recomputation "
                       "(its stage's input), e.g. `memory { input = 0.1 }`"});
    return;
  }
  if (!out.empty()) return;
  for (size_t s = 0; s < stages; ++s) {
    double in = p.memory.input->at(s), f = p.memory.F.at(s);
    if (in <= f) continue;
    out.push_back({Field::MemoryInput, DiagKind::BadValue,
                   "`memory.input` of stage " + std::to_string(s) + " (" + format_number(in) +
                       ") is more than the forward's own memory `memory.F` (" + format_number(f) +
                       "): a checkpointed forward keeps part of what it would keep"});
    return;
  }
}

// The simulator times in ticks of 1 / time_scale and counts memory in units of 1 / memory_scale
// (the finest decimal any value needs, at most 1e-15), in int64: every sum must stay below
// kMaxFixedSum. Sums bounded from the problem alone: every start and end is at most the total of
// all durations and lags; a rank's memory prefix sums at most the total of its deltas' magnitudes.
void check_fixed_point_sums(const Problem& p, std::vector<ProblemError>& out) {
  const int32_t S = p.num_stages();
  const auto m = static_cast<long double>(p.microbatches);
  long double time = 0;
  std::vector<long double> memory(static_cast<size_t>(p.ranks), 0);
  for (int32_t s = 0; s < S; ++s) {
    auto i = static_cast<size_t>(s);
    // Overheads: F and B exchange at most two messages each, W none; every action pays one.
    long double per = static_cast<long double>(p.cost.F.at(i)) + p.cost.B.at(i) + p.cost.W.at(i) + 3.0L * p.cost.comm +
                      3.0L * p.cost.action_overhead + 4.0L * p.cost.message_overhead;
    if (p.cost.FB) per += p.cost.FB->at(i);
    if (p.cost.R) per += p.cost.R->at(i) + p.cost.action_overhead;
    else if (p.recompute != Recompute::Off) per += p.cost.F.at(i) + p.cost.action_overhead;
    time += m * per;
    // A checkpointed F and its R add F in two parts (input, F - input): at most 2|F| + |input|.
    long double mem = std::abs(static_cast<long double>(p.memory.F.at(i))) + std::abs(p.memory.B.at(i)) +
                      std::abs(p.memory.W.at(i));
    if (p.memory.input) mem += std::abs(static_cast<long double>(p.memory.F.at(i))) + std::abs(p.memory.input->at(i));
    for (int32_t d = 0; d < p.num_directions(); ++d) memory[p.rank_of(d, StageId(s)).index()] += m * mem;
  }
  // Every value on one tick of its kind, or refused: a value rounded to a coarser tick can turn a
  // peak above the cap into one at it, or a cost into zero. The message names the value no tick
  // holds (each value alone has a tick when all together have none only past a double's digits).
  auto off_tick = [](const std::vector<double>& values) {
    for (double v : values)
      if (!exact_scale_of({v})) return v;
    return values.empty() ? 0.0 : values.front();
  };
  bool exact = true;
  for (bool time : {true, false}) {
    const std::vector<double> values = time ? time_values(p) : memory_values(p);
    if (exact_scale_of(values)) continue;
    exact = false;
    out.push_back({time ? Field::CostF : Field::MemoryF, DiagKind::BadValue,
                   std::string(time ? "the time value " : "the memory value ") + format_number(off_tick(values)) +
                       (time ? " cannot be timed exactly" : " cannot be counted exactly") +
                       ": it needs a tick finer than 1e-" + std::to_string(kMaxScaleExponent) +
                       " or more digits than a double holds; state it in a finer unit or with fewer digits"});
  }
  if (!exact) return;
  const auto limit = static_cast<long double>(kMaxFixedSum);
  const auto tscale = static_cast<long double>(time_scale(p)), mscale = static_cast<long double>(memory_scale(p));
  if (time * tscale > limit)
    out.push_back({Field::CostF, DiagKind::OutOfRange,
                   "the costs are too large for exact timing: all durations and comm lags add up to " +
                       format_number(static_cast<double>(time)) + " time units at a resolution of " +
                       format_number(1.0 / static_cast<double>(tscale)) + ", more than " +
                       format_number(static_cast<double>(limit / tscale)) + "; use a coarser unit or fewer decimals"});
  for (int32_t r = 0; r < p.ranks; ++r) {
    auto cap = p.stated_cap_of(RankId(r));
    long double sum = memory[static_cast<size_t>(r)] + (cap ? static_cast<long double>(*cap) : 0.0L) +
                      p.static_of(RankId(r));
    if (sum * mscale <= limit) continue;
    out.push_back({Field::MemoryF, DiagKind::OutOfRange,
                   "the memory values are too large for exact accounting: rank " + std::to_string(r) +
                       "'s deltas add up to " + format_number(static_cast<double>(sum)) + " at a resolution of " +
                       format_number(1.0 / static_cast<double>(mscale)) + ", more than " +
                       format_number(static_cast<double>(limit / mscale)) + "; use a coarser unit or fewer decimals"});
    break;
  }
}

}  // namespace

std::vector<ProblemError> validate(const Problem& p) {
  std::vector<ProblemError> out;
  auto range = [&](Field field, int32_t v, int32_t lo, int32_t hi) {
    if (v >= lo && v <= hi) return true;
    out.push_back({field, DiagKind::OutOfRange,
                   "`" + std::string(to_string(field)) + "` must be in " + std::to_string(lo) + ".." +
                       std::to_string(hi) + ", got `" + std::to_string(v) + "`"});
    return false;
  };
  bool sizes_ok = range(Field::Ranks, p.ranks, 1, kMaxRanks);
  sizes_ok &= range(Field::StagesPerRank, p.stages_per_rank, 1, kMaxStagesPerRank);
  sizes_ok &= range(Field::Microbatches, p.microbatches, 1, kMaxMicrobatches);
  if (p.directions < 1 || p.directions > kMaxDirections) {
    out.push_back({Field::Direction, DiagKind::OutOfRange,
                   "`directions` must be in 1.." + std::to_string(kMaxDirections) + ", got `" +
                       std::to_string(p.directions) + "`"});
    sizes_ok = false;
  }
  if (!sizes_ok) return out;
  int64_t actions = int64_t{p.recompute == Recompute::Off ? 3 : 4} * p.microbatches * p.num_stages();
  if (actions > kMaxActions) {
    out.push_back({Field::Microbatches, DiagKind::OutOfRange,
                   "the problem has " + std::to_string(actions) + " actions, more than the limit of " +
                       std::to_string(kMaxActions)});
    return out;
  }
  if (p.placement == PlacementKind::VShape && p.stages_per_rank != 2)
    out.push_back({Field::StagesPerRank, DiagKind::BadValue,
                   "placement `vshape` needs `stages_per_rank` = 2, got `" + std::to_string(p.stages_per_rank) + "`"});
  if (p.placement == PlacementKind::Wave && p.stages_per_rank < 2)
    out.push_back({Field::StagesPerRank, DiagKind::BadValue,
                   "placement `wave` needs `stages_per_rank` >= 2, got `" + std::to_string(p.stages_per_rank) + "`"});
  if (!p.direction_microbatches.empty()) {
    int64_t sum = 0;
    bool positive = true;
    for (int32_t n : p.direction_microbatches) sum += n, positive &= n >= 1;
    if (p.direction_microbatches.size() != static_cast<size_t>(p.directions))
      out.push_back({Field::Direction, DiagKind::BadValue,
                     "the stated microbatches per direction need one count for each of the " +
                         std::to_string(p.directions) + " directions, got " +
                         std::to_string(p.direction_microbatches.size())});
    else if (!positive || sum != p.microbatches)
      out.push_back({Field::Microbatches, DiagKind::BadValue,
                     "the stated microbatches per direction must be at least 1 each and sum to `microbatches` = " +
                         std::to_string(p.microbatches) + ", got a sum of " + std::to_string(sum)});
  } else if (p.directions == 2 && p.microbatches % 2 != 0)
    out.push_back({Field::Microbatches, DiagKind::BadValue,
                   "direction `bidirectional` needs an even number of microbatches, got `" +
                       std::to_string(p.microbatches) + "`"});
  else if (p.directions > 2 && p.microbatches % p.directions != 0)
    out.push_back({Field::Microbatches, DiagKind::BadValue,
                   "`directions` = " + std::to_string(p.directions) + " needs a number of microbatches divisible by " +
                       std::to_string(p.directions) + " (an equal share per direction), got `" +
                       std::to_string(p.microbatches) + "`"});
  if (p.placement == PlacementKind::Custom) {
    size_t dirs = static_cast<size_t>(p.num_directions());
    if (p.stage_to_rank.size() != dirs) {
      out.push_back({Field::StageToRank, DiagKind::BadValue,
                     "placement `custom` needs `stage_to_rank` with " + std::to_string(dirs) +
                         (dirs == 1 ? " list" : " lists (one per direction)") + ", got " +
                         std::to_string(p.stage_to_rank.size())});
    } else {
      for (const auto& list : p.stage_to_rank) {
        if (list.size() != static_cast<size_t>(p.num_stages())) {
          out.push_back({Field::StageToRank, DiagKind::BadValue,
                         "`stage_to_rank` needs one rank per stage (" + std::to_string(p.num_stages()) + "), got " +
                             std::to_string(list.size())});
          break;
        }
        auto bad = std::find_if(list.begin(), list.end(), [&](int32_t r) { return r < 0 || r >= p.ranks; });
        if (bad != list.end()) {
          out.push_back({Field::StageToRank, DiagKind::OutOfRange,
                         "`stage_to_rank` entries must be ranks in 0.." + std::to_string(p.ranks - 1) + ", got `" +
                             std::to_string(*bad) + "`"});
          break;
        }
      }
    }
  } else if (!p.stage_to_rank.empty()) {
    out.push_back({Field::StageToRank, DiagKind::BadValue,
                   "`stage_to_rank` is only allowed with placement `custom`, got placement `" +
                       std::string(to_string(p.placement)) + "`"});
  }
  size_t stages = static_cast<size_t>(p.num_stages());
  check_per_stage(p.cost.F, stages, "stage", Field::CostF, true, out);
  check_per_stage(p.cost.B, stages, "stage", Field::CostB, true, out);
  check_per_stage(p.cost.W, stages, "stage", Field::CostW, true, out);
  if (p.cost.FB) check_per_stage(*p.cost.FB, stages, "stage", Field::CostFB, true, out);
  for (auto [field, v] : {std::pair{Field::CostComm, p.cost.comm},
                          {Field::CostActionOverhead, p.cost.action_overhead},
                          {Field::CostMessageOverhead, p.cost.message_overhead}})
    if (!std::isfinite(v) || v < 0 || v > kMaxMagnitude)
      out.push_back(
          {field, DiagKind::OutOfRange,
           "`" + std::string(to_string(field)) + "` must be a number in 0..1e15, got `" + format_number(v) + "`"});
  check_per_stage(p.memory.F, stages, "stage", Field::MemoryF, false, out);
  check_per_stage(p.memory.B, stages, "stage", Field::MemoryB, false, out);
  check_per_stage(p.memory.W, stages, "stage", Field::MemoryW, false, out);
  if (p.memory.cap) check_per_stage(*p.memory.cap, static_cast<size_t>(p.ranks), "rank", Field::MemoryCap, true, out);
  check_per_stage(p.memory.static_memory, stages, "stage", Field::MemoryStatic, true, out);
  check_recompute(p, stages, out);
  if (out.empty()) check_fixed_point_sums(p, out);
  if (out.empty())
    if (const std::optional<RankId> r = p.static_over_cap())
      out.push_back({Field::MemoryStatic, DiagKind::CapInfeasible,
                     "rank " + std::to_string(r->index()) + "'s static memory (" + format_number(p.static_of(*r)) +
                         ", `memory.static` of the stages it holds) is above its cap of " +
                         format_number(*p.stated_cap_of(*r)) + ": no schedule fits, whatever its activations"});
  return out;
}

Problem with_stages_per_rank(const Problem& base, int32_t v) {
  assert(base.stages_per_rank == 1 && v >= 1 && "the base problem has one stage per rank");
  Problem p = base;
  p.stages_per_rank = v;
  auto cut = [&](PerStage& x) {
    if (x.is_uniform()) {
      x.uniform /= v;
      return;
    }
    std::vector<double> finer;
    for (double value : x.values)
      for (int32_t k = 0; k < v; ++k) finer.push_back(value / v);
    x.values = std::move(finer);
  };
  for (PerStage* x : {&p.cost.F, &p.cost.B, &p.cost.W, &p.memory.F, &p.memory.B, &p.memory.W, &p.memory.static_memory})
    cut(*x);
  if (p.cost.FB) cut(*p.cost.FB);
  if (p.cost.R) cut(*p.cost.R);
  if (p.memory.input) cut(*p.memory.input);
  return p;
}

}  // namespace schedc::ir
