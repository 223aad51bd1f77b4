#include "solver/synth/fit_cap.h"

#include <algorithm>
#include <vector>

#include "ir/action.h"
#include "ir/schedule.h"

namespace schedc::solver {

namespace {

// One rank's order made to fit `cap`. Per microbatch: what it holds, the most its remaining actions
// still add on top of that (`need`), and what it holds once they have all run (`final`); the
// started ones in the order they started. A state is safe when, taking the started microbatches in
// that order, each one's need fits in the free memory plus what the ones before it gave back by
// finishing (the banker's rule, as in GreedyVariant::banker): then the earliest started one can
// always go on, so the walk never gets stuck while some microbatch fits on its own.
class RankFit {
 public:
  RankFit(const ir::Problem& p, const std::vector<ir::Action>& in, int64_t cap) : in_(in), cap_(cap) {
    const int64_t scale = ir::memory_scale(p);
    const auto m = static_cast<size_t>(p.microbatches);
    delta_.reserve(in.size());
    for (ir::Action a : in) delta_.push_back(ir::to_fixed(ir::memory_delta(p, a), scale));
    mine_.assign(m, {});
    for (size_t i = 0; i < in.size(); ++i) mine_[in[i].mb.index()].push_back(i);
    next_.assign(m, 0);
    hold_.assign(m, 0);
    final_.assign(m, 0);
    started_.assign(m, 0);
    for (size_t i = 0; i < in.size(); ++i) final_[in[i].mb.index()] += delta_[i];
  }

  // The order, or nullopt when some actions never fit or the deadline passes.
  std::optional<std::vector<ir::Action>> run(const Deadline* deadline) {
    Deadline::Poll poll(deadline, 256);
    std::vector<ir::Action> out;
    out.reserve(in_.size());
    std::vector<char> placed(in_.size(), 0);
    // Walk the input; an action goes when it is its microbatch's next and the state stays safe;
    // else it waits, and the waiting ones (oldest first) are retried after every placement.
    std::vector<size_t> waiting;
    auto try_place = [&](size_t i) {
      const size_t mb = in_[i].mb.index();
      if (mine_[mb][next_[mb]] != i || !safe_after(i)) return false;
      place(i);
      out.push_back(in_[i]);
      placed[i] = 1;
      return true;
    };
    auto drain = [&] {
      for (bool progress = true; progress && !waiting.empty();) {
        if (poll.passed()) return;
        progress = false;
        for (size_t k = 0; k < waiting.size(); ++k)
          if (try_place(waiting[k])) {
            waiting.erase(waiting.begin() + static_cast<long>(k));
            progress = true;
            break;
          }
      }
    };
    for (size_t i = 0; i < in_.size(); ++i) {
      if (poll.passed()) return std::nullopt;
      if (!try_place(i)) waiting.push_back(i);
      else if (!waiting.empty()) drain();
    }
    drain();
    if (!waiting.empty() || (deadline && deadline->passed())) return std::nullopt;
    return out;
  }

 private:
  // The most mb's actions from its next one on add on top of what it holds (>= 0).
  int64_t need(size_t mb, size_t skip = 0) const {
    int64_t cur = 0, top = 0;
    for (size_t k = next_[mb] + skip; k < mine_[mb].size(); ++k) top = std::max(top, cur += delta_[mine_[mb][k]]);
    return top;
  }

  // Whether running action i now leaves the rank safe (freeing memory always does).
  bool safe_after(size_t i) const {
    const size_t mb = in_[i].mb.index();
    if (delta_[i] <= 0) return true;
    if (memory_ + delta_[i] > cap_) return false;
    int64_t free = cap_ - memory_ - delta_[i];
    bool seen = false;
    for (size_t x : order_) {
      const int64_t held = hold_[x] + (x == mb ? delta_[i] : 0);
      const int64_t still = x == mb ? need(x, 1) : need(x);
      if (still > free) return false;
      free += held - final_[x];
      seen = seen || x == mb;
    }
    return seen || need(mb, 1) <= free;
  }

  void place(size_t i) {
    const size_t mb = in_[i].mb.index();
    if (!started_[mb]) {
      started_[mb] = 1;
      order_.push_back(mb);
    }
    memory_ += delta_[i];
    hold_[mb] += delta_[i];
    // A finished microbatch holds its final memory for good: the safety check skips it.
    if (++next_[mb] == mine_[mb].size()) order_.erase(std::find(order_.begin(), order_.end(), mb));
  }

  const std::vector<ir::Action>& in_;
  const int64_t cap_;
  int64_t memory_ = 0;
  std::vector<int64_t> delta_;
  std::vector<std::vector<size_t>> mine_;  // per microbatch: its positions in the input, in order
  std::vector<size_t> next_;               // per microbatch: how many of them have run
  std::vector<int64_t> hold_, final_;
  std::vector<char> started_;
  std::vector<size_t> order_;  // unfinished microbatches in the order they started
};

}  // namespace

std::optional<ir::Schedule> defer_to_cap(const ir::Schedule& s, const ir::Problem& p, const Deadline* deadline) {
  if (!p.memory.cap) return std::nullopt;
  const int64_t scale = ir::memory_scale(p);
  ir::Schedule out;
  out.problem = p;
  out.ranks.resize(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const std::optional<double> cap = p.cap_of(ir::RankId(static_cast<int32_t>(r)));
    if (!cap) {
      out.ranks[r] = s.ranks[r];
      continue;
    }
    const int64_t limit = ir::to_fixed(*cap, scale);
    int64_t memory = 0, peak = 0;
    for (ir::Action a : s.ranks[r]) peak = std::max(peak, memory += ir::to_fixed(ir::memory_delta(p, a), scale));
    if (peak <= limit) {  // fits as it is
      out.ranks[r] = s.ranks[r];
      continue;
    }
    auto order = RankFit(p, s.ranks[r], limit).run(deadline);
    if (!order) return std::nullopt;
    out.ranks[r] = std::move(*order);
  }
  return out;
}

}  // namespace schedc::solver
