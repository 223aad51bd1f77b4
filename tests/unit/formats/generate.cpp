#include "tests/unit/formats/generate.h"

#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "ir/verify.h"

namespace schedc::test {

ir::Problem problem(int32_t pp, int32_t vpp, int32_t m, ir::PlacementKind placement, ir::BackwardMode backward,
                    int32_t directions) {
  ir::Problem p;
  p.ranks = pp;
  p.stages_per_rank = vpp;
  p.microbatches = m;
  p.placement = placement;
  p.backward = backward;
  p.directions = directions;
  return p;
}

namespace {

bool fused(const ir::Problem& p, int32_t mb) {
  if (p.backward == ir::BackwardMode::Mixed) return mb % 2 == 0;
  return p.backward == ir::BackwardMode::Fused;
}

// The actions a (mb, stage) needs, and what each waits for (docs/design.md section 3).
std::vector<ir::Action> deps(const ir::Problem& p, ir::Action a) {
  int32_t mb = a.mb.value, s = a.stage.value;
  auto backward = [&](int32_t st) { return fused(p, mb) ? ir::BW(mb, st) : ir::B(mb, st); };
  switch (a.kind) {
    case ir::ActionKind::F: return s > 0 ? std::vector{ir::F(mb, s - 1)} : std::vector<ir::Action>{};
    case ir::ActionKind::W: return {ir::B(mb, s)};
    case ir::ActionKind::R: return {ir::F(mb, s)};
    default:
      if (s + 1 < p.num_stages()) return {ir::F(mb, s), backward(s + 1)};
      return {ir::F(mb, s)};
  }
}

// Lower is more urgent: backward, then forward, then weight gradient; earlier microbatches first.
int priority(ir::Action a) {
  int k = ir::is_backward(a.kind) ? 0 : a.kind == ir::ActionKind::F ? 1 : 2;
  return k * 1'000'000 + a.mb.value * 1000 - (ir::is_backward(a.kind) ? a.stage.value : -a.stage.value);
}

}  // namespace

ir::Schedule greedy_schedule(const ir::Problem& p, bool overlap) {
  std::vector<std::vector<ir::Action>> todo(static_cast<size_t>(p.ranks));
  for (int32_t mb = 0; mb < p.microbatches; ++mb)
    for (int32_t s = 0; s < p.num_stages(); ++s) {
      size_t r = p.rank_of(ir::MbId(mb), ir::StageId(s)).index();
      todo[r].push_back(ir::F(mb, s));
      if (fused(p, mb)) {
        todo[r].push_back(ir::BW(mb, s));
      } else {
        todo[r].push_back(ir::B(mb, s));
        todo[r].push_back(ir::W(mb, s));
      }
    }
  ir::Schedule sched;
  sched.problem = p;
  sched.ranks.resize(static_cast<size_t>(p.ranks));
  std::vector<int> done_step(ir::num_action_slots(p), -1);
  size_t left = 0;
  for (const auto& t : todo) left += t.size();
  for (int step = 0; left > 0; ++step) {
    REQUIRE(step < 1'000'000);
    std::vector<ir::Action> chosen;
    for (size_t r = 0; r < todo.size(); ++r) {
      int best = -1;
      for (size_t i = 0; i < todo[r].size(); ++i) {
        bool ready = true;
        for (ir::Action d : deps(p, todo[r][i])) {
          int at = done_step[ir::action_id(p, d).index()];
          ready &= at >= 0 && at < step;
        }
        if (ready && (best < 0 || priority(todo[r][i]) < priority(todo[r][static_cast<size_t>(best)]))) best = int(i);
      }
      if (best < 0) continue;
      ir::Action a = todo[r][static_cast<size_t>(best)];
      todo[r].erase(todo[r].begin() + best);
      sched.ranks[r].push_back(a);
      chosen.push_back(a);
      --left;
    }
    for (ir::Action a : chosen) done_step[ir::action_id(p, a).index()] = step;
  }
  REQUIRE(ir::verify(sched).empty());
  if (!overlap) return sched;
  sched.overlap.assign(sched.ranks.size(), {});
  for (size_t r = 0; r < sched.ranks.size(); ++r)
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(sched.ranks[r].size()); ++i) {
      ir::Action a = sched.ranks[r][static_cast<size_t>(i)], b = sched.ranks[r][static_cast<size_t>(i + 1)];
      bool pair = (a.kind == ir::ActionKind::F && ir::is_backward(b.kind)) ||
                  (b.kind == ir::ActionKind::F && ir::is_backward(a.kind));
      if (!pair) continue;
      sched.overlap[r].push_back(i);
      if (!ir::verify(sched).empty()) {
        sched.overlap[r].pop_back();
        continue;
      }
      ++i;
    }
  if (!sched.has_overlap()) sched.overlap.clear();
  return sched;
}

ir::Timeline timeline(const ir::Schedule& s) {
  ir::SimResult r = ir::simulate(s);
  REQUIRE(r.timeline.has_value());
  return *r.timeline;
}

std::string read_data(const std::string& relative_path) {
  std::ifstream f(std::string(SCHEDC_TEST_DATA) + "/" + relative_path, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace schedc::test
