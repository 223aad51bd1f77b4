#include "ir/verify.h"

#include <algorithm>
#include <set>

#include "ir/simulate.h"
#include "support/numbers.h"

namespace schedc::ir {
namespace {

std::string tok(Action a) { return backtick(format_action(a)); }

std::string at(int32_t rank, int32_t pos) {
  return "rank " + std::to_string(rank) + " position " + std::to_string(pos);
}

class Verifier {
 public:
  Verifier(const Schedule& s, const VerifyOptions& o) : s_(s), p_(s.problem), o_(o) {}

  std::vector<VerifyIssue> run() {
    if (!check_structure()) return issues_;
    check_tokens();
    if (!issues_.empty()) return issues_;
    check_complete();
    check_overlap();
    if (!issues_.empty()) return issues_;
    check_local_order();
    if (!issues_.empty()) return issues_;
    check_deadlock();
    if (!issues_.empty()) return issues_;
    if (o_.check_memory) check_memory();
    return issues_;
  }

 private:
  bool full() const { return issues_.size() >= o_.max_issues; }

  void add(DiagKind kind, int32_t rank, int32_t pos, std::optional<Action> a, std::string msg) {
    if (!full()) issues_.push_back({kind, rank, pos, a, std::move(msg)});
  }

  bool check_structure() {
    if (s_.ranks.size() != static_cast<size_t>(p_.ranks)) {
      add(DiagKind::BadValue, -1, -1, std::nullopt,
          "the schedule has " + std::to_string(s_.ranks.size()) + " rank orders, the problem has " +
              std::to_string(p_.ranks) + " ranks");
      return false;
    }
    if (!s_.overlap.empty() && s_.overlap.size() != s_.ranks.size()) {
      add(DiagKind::BadOverlap, -1, -1, std::nullopt,
          "`overlap` has " + std::to_string(s_.overlap.size()) + " lists, the schedule has " +
              std::to_string(s_.ranks.size()) + " ranks");
      return false;
    }
    return true;
  }

  bool kind_allowed(ActionKind k) const {
    if (k == ActionKind::R) return true;  // check_tokens reports an R the problem does not allow
    if (p_.backward == BackwardMode::Fused) return k == ActionKind::F || k == ActionKind::BW;
    if (p_.backward == BackwardMode::Split) return k != ActionKind::BW;
    return true;
  }

  void check_tokens() {
    std::vector<char> seen(num_action_slots(p_), 0);
    for (int32_t r = 0; r < p_.ranks; ++r) {
      const auto& order = s_.ranks[static_cast<size_t>(r)];
      for (int32_t i = 0; i < static_cast<int32_t>(order.size()); ++i) {
        Action a = order[static_cast<size_t>(i)];
        if (a.mb.value < 0 || a.mb.value >= p_.microbatches) {
          add(DiagKind::NoSuchMicrobatch, r, i, a,
              tok(a) + " names microbatch " + std::to_string(a.mb.value) + ", the problem has microbatches 0.." +
                  std::to_string(p_.microbatches - 1));
          continue;
        }
        if (a.stage.value < 0 || a.stage.value >= p_.num_stages()) {
          add(DiagKind::NoSuchStage, r, i, a,
              tok(a) + " names stage " + std::to_string(a.stage.value) + ", the problem has stages 0.." +
                  std::to_string(p_.num_stages() - 1));
          continue;
        }
        if (!kind_allowed(a.kind)) {
          add(DiagKind::BackwardMode, r, i, a,
              tok(a) + " is a " + std::string(a.kind == ActionKind::BW ? "fused" : "split") +
                  " backward, but the problem's backward is `" + std::string(to_string(p_.backward)) + "`");
          continue;
        }
        if (a.kind == ActionKind::R && p_.recompute == Recompute::Off) {
          add(DiagKind::Recompute, r, i, a,
              tok(a) + " recomputes a forward, but the problem's `recompute` is `off` (state `recompute = allowed` "
                       "to let the schedule checkpoint)");
          continue;
        }
        RankId owner = rank_of(p_, a);
        if (owner.value != r) {
          add(DiagKind::WrongRank, r, i, a,
              tok(a) + " is on rank " + std::to_string(r) + ", but stage " + std::to_string(a.stage.value) +
                  (p_.num_directions() > 1 ? " (direction " + std::to_string(p_.direction_of(a.mb)) + ")" : "") +
                  " belongs to rank " + std::to_string(owner.value));
          continue;
        }
        char& flag = seen[action_id(p_, a).index()];
        if (flag) {
          ScheduleIndex::Pos first = first_pos(a);
          add(DiagKind::DuplicateAction, r, i, a,
              tok(a) + " appears again (first at " + at(first.rank, first.index) + ")");
        }
        flag = 1;
      }
    }
  }

  ScheduleIndex::Pos first_pos(Action a) const {
    for (size_t r = 0; r < s_.ranks.size(); ++r) {
      auto it = std::find(s_.ranks[r].begin(), s_.ranks[r].end(), a);
      if (it != s_.ranks[r].end()) return {static_cast<int32_t>(r), static_cast<int32_t>(it - s_.ranks[r].begin())};
    }
    return {};
  }

  void missing(Action a, const std::string& why) {
    add(DiagKind::MissingAction, rank_of(p_, a).value, -1, a,
        tok(a) + " is missing from rank " + std::to_string(rank_of(p_, a).value) + why);
  }

  void check_complete() {
    ScheduleIndex index(s_);
    for (int32_t mb = 0; mb < p_.microbatches && !full(); ++mb)
      for (int32_t st = 0; st < p_.num_stages() && !full(); ++st) {
        if (!index.contains(F(mb, st))) missing(F(mb, st), "");
        if (p_.recompute == Recompute::All && !index.contains(R(mb, st)))
          add(DiagKind::Recompute, rank_of(p_, R(mb, st)).value, -1, R(mb, st),
              tok(R(mb, st)) + " is missing from rank " + std::to_string(rank_of(p_, R(mb, st)).value) +
                  " (`recompute = all` recomputes every forward before its backward)");
        bool has_b = index.contains(B(mb, st)), has_w = index.contains(W(mb, st));
        bool has_bw = index.contains(BW(mb, st));
        if (has_bw && (has_b || has_w)) {
          Action extra = has_b ? B(mb, st) : W(mb, st);
          ScheduleIndex::Pos pos = index.find(extra);
          add(DiagKind::DuplicateAction, pos.rank, pos.index, extra,
              tok(extra) + " repeats the backward that " + tok(BW(mb, st)) + " already does");
          continue;
        }
        if (has_bw) continue;
        if (p_.backward == BackwardMode::Fused) {
          missing(BW(mb, st), "");
          continue;
        }
        if (has_b && !has_w) missing(W(mb, st), " (its " + tok(B(mb, st)) + " is present)");
        if (!has_b && has_w) missing(B(mb, st), " (its " + tok(W(mb, st)) + " is present)");
        if (!has_b && !has_w) {
          if (p_.backward == BackwardMode::Mixed) {
            missing(B(mb, st), " (a mixed backward needs " + tok(BW(mb, st)) + ", or " + tok(B(mb, st)) + " and " +
                                   tok(W(mb, st)) + ")");
          } else {
            missing(B(mb, st), "");
            missing(W(mb, st), "");
          }
        }
      }
  }

  void check_overlap() {
    ScheduleIndex index(s_);
    for (size_t r = 0; r < s_.overlap.size(); ++r) {
      const auto& units = s_.overlap[r];
      const auto& order = s_.ranks[r];
      int32_t n = static_cast<int32_t>(order.size());
      int32_t prev_end = -1;
      for (int32_t i : units) {
        int32_t rank = static_cast<int32_t>(r);
        if (i < 0 || i + 1 >= n) {
          add(DiagKind::BadOverlap, rank, i, std::nullopt,
              "overlapped unit [" + std::to_string(i) + ", " + std::to_string(i + 1) + "] is outside rank " +
                  std::to_string(r) + "'s " + std::to_string(n) + " actions");
          continue;
        }
        if (i <= prev_end) {
          add(DiagKind::BadOverlap, rank, i, order[static_cast<size_t>(i)],
              "overlapped units on rank " + std::to_string(r) + " must be sorted and disjoint, got [" +
                  std::to_string(i) + ", " + std::to_string(i + 1) + "] after one ending at " +
                  std::to_string(prev_end));
          continue;
        }
        prev_end = i + 1;
        Action a = order[static_cast<size_t>(i)], b = order[static_cast<size_t>(i + 1)];
        bool ok = (a.kind == ActionKind::F && is_backward(b.kind)) || (b.kind == ActionKind::F && is_backward(a.kind));
        if (!ok) {
          add(DiagKind::BadOverlap, rank, i, a,
              "overlapped unit (" + tok(a) + ", " + tok(b) + ") must be one forward and one `B` or `BW`");
          continue;
        }
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
          for (Action d : dependencies(p_, x, index))
            if (d == y)
              add(DiagKind::BadOverlap, rank, i, x,
                  tok(x) + " depends on " + tok(y) + " in the same overlapped unit, so the unit can never start");
      }
    }
  }

  // An action placed after a same-rank action that depends on it can never run.
  void check_local_order() {
    ScheduleIndex index(s_);
    for (int32_t r = 0; r < p_.ranks && !full(); ++r) {
      const auto& order = s_.ranks[static_cast<size_t>(r)];
      for (int32_t i = 0; i < static_cast<int32_t>(order.size()); ++i) {
        Action a = order[static_cast<size_t>(i)];
        for (Action d : dependencies(p_, a, index)) {
          ScheduleIndex::Pos pos = index.find(d);
          if (pos.rank != r) continue;
          bool same_unit = pos.index == i + 1 && s_.overlap_starts_at(static_cast<size_t>(r), i);
          if (pos.index > i)
            add(DiagKind::DependencyOrder, r, i, a,
                tok(a) + " runs before " + tok(d) + " (position " + std::to_string(pos.index) + "), which it " +
                    (same_unit ? "depends on and cannot overlap" : "depends on"));
        }
      }
    }
  }

  void check_deadlock() {
    SimResult local;
    SimResult& sim = o_.simulation ? *o_.simulation : local;
    sim = simulate(s_);
    if (sim.stalls.empty()) return;
    // Follow "waits for" from rank to rank until a rank repeats: that is the cycle to print.
    std::vector<const Stall*> by_rank(static_cast<size_t>(p_.ranks), nullptr);
    for (const Stall& st : sim.stalls) by_rank[st.rank.index()] = &st;
    const Stall* cur = &sim.stalls.front();
    std::vector<int32_t> visited;
    std::string chain;
    while (cur && std::find(visited.begin(), visited.end(), cur->rank.value) == visited.end()) {
      visited.push_back(cur->rank.value);
      RankId other = rank_of(p_, cur->waits_for);
      if (!chain.empty()) chain += ", which ";
      chain += "rank " + std::to_string(cur->rank.value) + " waits at position " + std::to_string(cur->position) +
               " (" + tok(cur->action) + ") for " + tok(cur->waits_for) + " on rank " + std::to_string(other.value);
      cur = by_rank[other.index()];
    }
    const Stall& first = sim.stalls.front();
    add(DiagKind::Deadlock, first.rank.value, first.position, first.action, "deadlock: " + chain);
  }

  void check_memory() {
    const int64_t scale = memory_scale(p_);
    ScheduleIndex index(s_);
    for (int32_t r = 0; r < p_.ranks && !full(); ++r) {
      auto cap = p_.cap_of(RankId(r));
      if (!cap) continue;
      int64_t limit = to_fixed(*cap, scale), cur = 0;
      const auto& order = s_.ranks[static_cast<size_t>(r)];
      for (int32_t i = 0; i < static_cast<int32_t>(order.size()); ++i) {
        Action a = order[static_cast<size_t>(i)];
        cur += to_fixed(memory_delta(p_, a, index.checkpointed(a.mb, a.stage)), scale);
        if (cur <= limit) continue;
        // In the device's terms: the activations held and the stages' static memory beside them.
        double stat = p_.static_of(RankId(r));
        std::string held = format_number(static_cast<double>(cur) / scale + stat) +
                           (stat > 0 ? " (" + format_number(stat) + " of it static)" : "");
        add(DiagKind::MemoryCap, r, i, order[static_cast<size_t>(i)],
            "rank " + std::to_string(r) + " holds " + held + " after " + tok(order[static_cast<size_t>(i)]) +
                " (position " + std::to_string(i) + "), above its cap of " +
                format_number(*p_.stated_cap_of(RankId(r))));
        break;
      }
    }
  }

  const Schedule& s_;
  const Problem& p_;
  const VerifyOptions& o_;
  std::vector<VerifyIssue> issues_;
};

}  // namespace

std::vector<VerifyIssue> verify(const Schedule& s, const VerifyOptions& options) { return Verifier(s, options).run(); }

std::string render_order(const Schedule& s, int32_t rank, int32_t mark) {
  if (rank < 0 || static_cast<size_t>(rank) >= s.ranks.size()) return {};
  const auto& order = s.ranks[static_cast<size_t>(rank)];
  const auto n = static_cast<int32_t>(order.size());
  const auto r = static_cast<size_t>(rank);
  // A long order shows the actions around the mark only, whole overlapped units at the edges.
  constexpr int32_t kContext = 12;
  int32_t first = 0, last = n;
  if (n > 2 * kContext + 1) {
    int32_t at = std::clamp(mark, 0, n - 1);
    first = std::max(0, at - kContext);
    last = std::min(n, at + kContext + 1);
    if (first > 0 && s.overlap_starts_at(r, first - 1)) --first;
    if (last < n && s.overlap_starts_at(r, last - 1)) ++last;
  }
  std::string out = "rank " + std::to_string(rank) + ":";
  size_t col = out.size();
  auto put = [&](const std::string& t) {
    if (col + 1 + t.size() > 100) {
      out += "\n       ";
      col = 7;
    }
    out += ' ';
    out += t;
    col += 1 + t.size();
  };
  if (first > 0) put("[" + std::to_string(first) + " earlier]");
  for (int32_t i = first; i < last; ++i) {
    std::string t = format_action(order[static_cast<size_t>(i)]);
    if (i == mark) t = ">>" + t + "<<";
    if (s.overlap_starts_at(r, i)) t = "(" + t;
    if (i > 0 && s.overlap_starts_at(r, i - 1)) t += ")";
    put(t);
  }
  if (last < n) put("[" + std::to_string(n - last) + " more]");
  return out + "\n";
}

}  // namespace schedc::ir
