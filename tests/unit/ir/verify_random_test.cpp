// Randomized test: mutate valid schedules (swap, drop, duplicate, move to another rank, change a
// kind) and check the verifier's verdict against an independent, deliberately naive oracle.

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "ir/simulate.h"
#include "ir/verify.h"
#include "tests/common/random_schedule.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

using schedc::test::Rng;
using schedc::test::uniform;

Problem random_problem(Rng& rng) { return schedc::test::random_problem(rng, {4, 5, false}); }

// ---- the oracle: written from docs/design.md section 3 without using the verifier's helpers ----

int oracle_rank(const Problem& p, int mb, int s) {
  int r;
  if (p.placement == PlacementKind::Looped) r = s % p.ranks;
  else if (p.placement == PlacementKind::VShape) r = s < p.ranks ? s : 2 * p.ranks - 1 - s;
  else r = (s / p.ranks) % 2 == 0 ? s % p.ranks : p.ranks - 1 - s % p.ranks;
  // k directions: direction d = mb / (m/k) in pairs, pair d/2 rotated by (d/2)*pp/ceil(k/2) ranks,
  // the second of each pair mirrored.
  // The direction: m/k microbatches each in order, or the stated counts in order.
  const int k = p.directions;
  int d = k == 1 ? 0 : mb / (p.microbatches / k);
  if (!p.direction_microbatches.empty())
    for (int left = mb, i = 0; i < k; ++i) {
      d = i;
      if ((left -= p.direction_microbatches[static_cast<size_t>(i)]) < 0) break;
    }
  r = (r + (d / 2) * p.ranks / ((k + 1) / 2)) % p.ranks;
  if (d % 2 == 1) r = p.ranks - 1 - r;
  return r;
}

using Key = std::tuple<int, int, int>;  // kind, mb, stage
Key key(ActionKind k, int mb, int s) { return {static_cast<int>(k), mb, s}; }

bool oracle_valid(const Schedule& s) {
  const Problem& p = s.problem;
  const int S = p.num_stages();
  if (static_cast<int>(s.ranks.size()) != p.ranks) return false;
  std::map<Key, int> count;
  for (int r = 0; r < p.ranks; ++r)
    for (Action a : s.ranks[r]) {
      int mb = a.mb.value, st = a.stage.value;
      if (mb < 0 || mb >= p.microbatches || st < 0 || st >= S) return false;
      if (p.backward == BackwardMode::Fused && (a.kind == ActionKind::B || a.kind == ActionKind::W)) return false;
      if (p.backward == BackwardMode::Split && a.kind == ActionKind::BW) return false;
      if (oracle_rank(p, mb, st) != r) return false;
      if (++count[key(a.kind, mb, st)] > 1) return false;
    }
  auto has = [&](ActionKind k, int mb, int st) { return count.count(key(k, mb, st)) > 0; };
  for (int mb = 0; mb < p.microbatches; ++mb)
    for (int st = 0; st < S; ++st) {
      bool f = has(ActionKind::F, mb, st), b = has(ActionKind::B, mb, st), w = has(ActionKind::W, mb, st),
           bw = has(ActionKind::BW, mb, st);
      if (!f) return false;
      bool fused_ok = bw && !b && !w, split_ok = !bw && b && w;
      if (p.backward == BackwardMode::Fused && !fused_ok) return false;
      if (p.backward == BackwardMode::Split && !split_ok) return false;
      if (p.backward == BackwardMode::Mixed && !fused_ok && !split_ok) return false;
    }
  // Naive execution: run any rank whose next action has all its inputs done, until stuck.
  std::map<Key, bool> done;
  std::vector<size_t> head(s.ranks.size(), 0);
  auto is_done = [&](ActionKind k, int mb, int st) { return done.count(key(k, mb, st)) > 0; };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      if (head[r] == s.ranks[r].size()) continue;
      Action a = s.ranks[r][head[r]];
      int mb = a.mb.value, st = a.stage.value;
      bool ready = true;
      if (a.kind == ActionKind::F && st > 0) ready = is_done(ActionKind::F, mb, st - 1);
      if (a.kind == ActionKind::B || a.kind == ActionKind::BW) {
        ready = is_done(ActionKind::F, mb, st);
        if (st + 1 < S) ready = ready && (is_done(ActionKind::B, mb, st + 1) || is_done(ActionKind::BW, mb, st + 1));
      }
      if (a.kind == ActionKind::W) ready = is_done(ActionKind::B, mb, st);
      if (!ready) continue;
      done[key(a.kind, mb, st)] = true;
      ++head[r];
      progress = true;
    }
  }
  for (size_t r = 0; r < s.ranks.size(); ++r)
    if (head[r] != s.ranks[r].size()) return false;
  if (p.memory.cap)
    for (int r = 0; r < p.ranks; ++r) {
      double cur = 0;
      for (Action a : s.ranks[r]) {
        double d = a.kind == ActionKind::F ? 1 : a.kind == ActionKind::BW ? -1 : -0.5;
        cur += d;
        if (cur > p.memory.cap->at(static_cast<size_t>(r)) + 1e-9) return false;
      }
    }
  return true;
}

Schedule random_valid(const Problem& p, Rng& rng) { return schedc::test::random_valid(p, rng); }

void mutate(Schedule& s, Rng& rng) {
  auto& ranks = s.ranks;
  size_t r = static_cast<size_t>(uniform(rng, 0, static_cast<int>(ranks.size()) - 1));
  auto& o = ranks[r];
  if (o.empty()) return;
  auto pos = [&](const std::vector<Action>& v) {
    return static_cast<size_t>(uniform(rng, 0, static_cast<int>(v.size()) - 1));
  };
  switch (uniform(rng, 0, 6)) {
    case 0: std::swap(o[pos(o)], o[pos(o)]); break;
    case 1: {
      size_t i = pos(o);
      if (i + 1 < o.size()) std::swap(o[i], o[i + 1]);
      break;
    }
    case 2: o.erase(o.begin() + static_cast<std::ptrdiff_t>(pos(o))); break;
    case 3: o.insert(o.begin() + static_cast<std::ptrdiff_t>(pos(o)), o[pos(o)]); break;
    case 4: {
      size_t i = pos(o);
      Action a = o[i];
      o.erase(o.begin() + static_cast<std::ptrdiff_t>(i));
      auto& other = ranks[static_cast<size_t>(uniform(rng, 0, static_cast<int>(ranks.size()) - 1))];
      other.insert(other.begin() + (other.empty() ? 0 : static_cast<std::ptrdiff_t>(pos(other))), a);
      break;
    }
    case 5: o[pos(o)].kind = static_cast<ActionKind>(uniform(rng, 0, 3)); break;
    case 6: {
      Action& a = o[pos(o)];
      if (uniform(rng, 0, 1)) a.mb = MbId(a.mb.value + uniform(rng, -1, 1));
      else a.stage = StageId(a.stage.value + uniform(rng, -1, 1));
      break;
    }
  }
}

// ASAP: every action starts exactly when its rank is free and its inputs have arrived.
void check_asap(const Schedule& s, const Timeline& t) {
  const Problem& p = s.problem;
  ScheduleIndex index(s);
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (size_t i = 0; i < s.ranks[r].size(); ++i) {
      Action a = s.ranks[r][i];
      int64_t ready = i == 0 ? 0 : t.end[r][i - 1];
      for (Action d : dependencies(p, a, index)) {
        auto pos = index.find(d);
        int64_t lag = pos.rank == static_cast<int32_t>(r) ? 0 : to_fixed(p.cost.comm, t.scale);
        ready = std::max(ready, t.end[static_cast<size_t>(pos.rank)][static_cast<size_t>(pos.index)] + lag);
      }
      CHECK(t.start[r][i] == ready);
      CHECK(t.end[r][i] - t.start[r][i] == to_fixed(cost_of(p, a), t.scale));
    }
}

}  // namespace

TEST_CASE("random valid schedules verify and simulate as soon as possible") {
  Rng rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = random_problem(rng);
    REQUIRE(validate(p).empty());
    Schedule s = random_valid(p, rng);
    REQUIRE(oracle_valid(s));
    auto issues = verify(s);
    INFO((issues.empty() ? std::string() : issues[0].message));
    CHECK(issues.empty());
    SimResult sim = simulate(s);
    REQUIRE(sim.timeline.has_value());
    check_asap(s, *sim.timeline);
  }
}

TEST_CASE("mutated schedules: the verifier agrees with the oracle") {
  Rng rng(777);
  int valid = 0, invalid = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    Problem p = random_problem(rng);
    Schedule s = random_valid(p, rng);
    int mutations = uniform(rng, 1, 2);
    for (int k = 0; k < mutations; ++k) mutate(s, rng);
    bool expect = oracle_valid(s);
    auto issues = verify(s);
    INFO("trial " << trial << ": " << (issues.empty() ? std::string("no issue") : issues[0].message));
    CHECK(issues.empty() == expect);
    (expect ? valid : invalid)++;
    if (expect) CHECK(simulate(s).timeline.has_value());
  }
  // Both verdicts must be well represented, or the test says little.
  CHECK(valid > 300);
  CHECK(invalid > 1500);
}

TEST_CASE("memory caps: exactly the peak passes, anything below fails") {
  Rng rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    Problem p = random_problem(rng);
    Schedule s = random_valid(p, rng);
    auto peaks = peak_memory(s);
    double peak = *std::max_element(peaks.begin(), peaks.end());
    s.problem.memory.cap = PerStage::of(peak);
    CHECK(verify(s).empty());
    CHECK(oracle_valid(s));
    s.problem.memory.cap = PerStage::of(peak - 0.5);
    auto issues = verify(s);
    REQUIRE(!issues.empty());
    CHECK(issues[0].kind == DiagKind::MemoryCap);
    CHECK_FALSE(oracle_valid(s));
  }
}
