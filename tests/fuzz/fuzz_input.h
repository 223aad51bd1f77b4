#pragma once
// Shared by the libFuzzer targets that build problems and schedules from bytes: a byte reader
// whose input never runs out, and a random valid order in linear time.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/action.h"
#include "ir/schedule.h"
#include "tests/common/random_schedule.h"

namespace schedc::fuzz {

/// Reads the input a byte at a time; past its end every byte is 0 (so short inputs are the
/// simplest problems).
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int pick(int n) { return static_cast<int>(next() % static_cast<unsigned>(n)); }
  template <size_t N> double from(const double (&table)[N]) {
    return table[static_cast<size_t>(pick(static_cast<int>(N)))];
  }
  /// A hash of the bytes not read yet, to seed a generator with.
  uint32_t seed() const {
    uint32_t h = 2166136261u;
    for (size_t i = pos_; i < size_; ++i) h = (h ^ data_[i]) * 16777619u;
    return h;
  }
  /// Whatever the input holds after the bytes read so far.
  const uint8_t* rest() const { return data_ + pos_; }
  size_t rest_size() const { return size_ - pos_; }

 private:
  uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/// A random valid order (a random topological order dealt out to the owning ranks), each backward
/// of a mixed problem fused or split at random, with R's where the problem recomputes; with `pair_percent`, a dealt F
/// or B/BW is often followed on its rank by a ready action of the other sort (a candidate overlapped unit). The same as
/// tests/common's random_order, in linear time: that one keeps a map and rescans every action per step, which took 40%
/// of an execution.
inline ir::Schedule random_order(const ir::Problem& p, test::Rng& rng, int pair_percent) {
  using namespace ir;
  Schedule s;
  s.problem = p;
  s.ranks.assign(static_cast<size_t>(p.ranks), {});
  std::vector<Action> all;
  for (int32_t mb = 0; mb < p.microbatches; ++mb)
    for (int32_t st = 0; st < p.num_stages(); ++st) {
      all.push_back(F(mb, st));
      // Recomputation: every forward's R under `all`, about half of them under `allowed`.
      if (p.recompute == Recompute::All || (p.recompute == Recompute::Allowed && test::uniform(rng, 0, 1)))
        all.push_back(R(mb, st));
      bool fused = p.backward == BackwardMode::Fused || (p.backward == BackwardMode::Mixed && test::uniform(rng, 0, 1));
      if (fused) {
        all.push_back(BW(mb, st));
      } else {
        all.push_back(B(mb, st));
        all.push_back(W(mb, st));
      }
    }
  Schedule members = s;  // every action once, so that dependencies() sees the backward forms
  members.ranks[0] = all;
  const ScheduleIndex index(members);
  std::vector<int32_t> waiting(num_action_slots(p), 0);
  std::vector<std::vector<Action>> users(num_action_slots(p));
  std::vector<Action> ready;
  for (Action a : all) {
    auto deps = dependencies(p, a, index);
    for (Action d : deps) users[action_id(p, d).index()].push_back(a);
    waiting[action_id(p, a).index()] = static_cast<int32_t>(deps.size());
  }
  for (Action a : all)
    if (waiting[action_id(p, a).index()] == 0) ready.push_back(a);
  auto deal = [&](size_t i) {
    Action a = ready[i];
    ready[i] = ready.back();
    ready.pop_back();
    s.ranks[rank_of(p, a).index()].push_back(a);
    for (Action u : users[action_id(p, a).index()])
      if (--waiting[action_id(p, u).index()] == 0) ready.push_back(u);
    return a;
  };
  while (!ready.empty()) {
    Action a = deal(static_cast<size_t>(test::uniform(rng, 0, static_cast<int>(ready.size()) - 1)));
    if (pair_percent <= 0 || a.kind == ActionKind::W || a.kind == ActionKind::R ||
        test::uniform(rng, 1, 100) > pair_percent)
      continue;
    std::vector<size_t> partners;
    for (size_t i = 0; i < ready.size(); ++i) {
      Action b = ready[i];
      bool other_sort = a.kind == ActionKind::F ? is_backward(b.kind) : b.kind == ActionKind::F;
      if (other_sort && b.mb != a.mb && rank_of(p, b) == rank_of(p, a)) partners.push_back(i);
    }
    if (!partners.empty())
      deal(partners[static_cast<size_t>(test::uniform(rng, 0, static_cast<int>(partners.size()) - 1))]);
  }
  return s;
}

}  // namespace schedc::fuzz
