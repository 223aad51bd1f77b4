#include "solver/families/common.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <queue>

#include "support/internal_error.h"
#include "support/numbers.h"

namespace schedc::solver::fam {

std::nullopt_t FamilyContext::constraint(const std::string& message) const {
  diags.error(DiagKind::FamilyConstraint, loc, "family " + backtick(name) + " needs " + message);
  return std::nullopt;
}

std::nullopt_t FamilyContext::bad_param(const ir::Param* param, const std::string& message) const {
  SourceLoc at = loc;
  if (param && param->value_loc.has_file()) at = param->value_loc;
  diags.error(DiagKind::FamilyParam, at, message);
  return std::nullopt;
}

std::nullopt_t FamilyContext::internal(const std::string& message) const {
  SCHEDC_INTERNAL_ERROR("family " + backtick(name) + " failed on this problem: " + message);
}

bool FamilyContext::only_params(std::initializer_list<std::string_view> known) const {
  bool ok = true;
  for (const ir::Param& prm : params.items) {
    if (std::find(known.begin(), known.end(), prm.key) != known.end()) continue;
    std::string expected;
    for (std::string_view k : known) expected += (expected.empty() ? "" : ", ") + backtick(k);
    SourceLoc at = prm.loc.has_file() ? prm.loc : loc;
    diags.error(DiagKind::FamilyParam, at,
                "family " + backtick(name) + " has no parameter " + backtick(prm.key) +
                    (expected.empty() ? std::string(", it takes none") : ", expected " + expected));
    ok = false;
  }
  return ok;
}

std::optional<int32_t> FamilyContext::int_param(std::string_view key, int32_t fallback, int32_t lo, int32_t hi) const {
  const ir::Param* prm = params.find(key);
  if (!prm) return fallback;
  std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  if (!prm->is_number() || !is_int32(prm->number()))
    return bad_param(prm, "`" + std::string(key) + "` of family " + backtick(name) + " must be an integer in " + range);
  int32_t v = static_cast<int32_t>(prm->number());
  if (v < lo || v > hi)
    return bad_param(prm, "`" + std::string(key) + "` of family " + backtick(name) + " must be in " + range + ", got " +
                              backtick(std::to_string(v)));
  return v;
}

int32_t stage_on(const ir::Problem& p, int32_t direction, int32_t rank, int32_t local) {
  // Invert the placement of docs/design.md section 3 (the direction's mirror and rotation of the rank).
  int32_t r = p.placement == ir::PlacementKind::Custom ? rank : p.base_rank(direction, rank);
  switch (p.placement) {
    case ir::PlacementKind::Looped: return local * p.ranks + r;
    case ir::PlacementKind::VShape: return local == 0 ? r : 2 * p.ranks - 1 - r;
    case ir::PlacementKind::Wave: return local * p.ranks + (local % 2 == 0 ? r : p.ranks - 1 - r);
    case ir::PlacementKind::Custom: break;
  }
  // Custom placements: the local-th stage (in model order) that the list puts on `rank`.
  const auto& list = p.stage_to_rank[static_cast<size_t>(direction)];
  int32_t seen = 0;
  for (int32_t s = 0; s < static_cast<int32_t>(list.size()); ++s)
    if (list[static_cast<size_t>(s)] == rank && seen++ == local) return s;
  SCHEDC_INTERNAL_ERROR("custom placement has fewer stages on rank " + std::to_string(rank) + " than asked for");
}

int32_t mb_of(const ir::Problem& p, int32_t direction, int32_t k) { return p.first_microbatch(direction) + k; }

OrderBuilder::OrderBuilder(const ir::Problem& p) {
  s_.problem = p;
  s_.ranks.resize(static_cast<size_t>(p.ranks));
  s_.overlap.resize(static_cast<size_t>(p.ranks));
}

void OrderBuilder::push(ir::Action a) { s_.ranks[ir::rank_of(s_.problem, a).index()].push_back(a); }

void OrderBuilder::push_overlap(ir::Action f, ir::Action b) {
  size_t r = ir::rank_of(s_.problem, f).index();
  assert(r == ir::rank_of(s_.problem, b).index() && "an overlapped unit spans two ranks");
  s_.overlap[r].push_back(static_cast<int32_t>(s_.ranks[r].size()));
  s_.ranks[r].push_back(f);
  s_.ranks[r].push_back(b);
}

ir::Schedule OrderBuilder::take() {
  if (!s_.has_overlap()) s_.overlap.clear();
  return std::move(s_);
}

PhaseSteps::PhaseSteps(const ir::Problem& p, OrderBuilder& out, int32_t rank, int32_t dir0, int32_t dir1)
    : p_(p), out_(out), dir_{dir0, dir1} {
  if (p.num_directions() == 2) {
    // Bidirectional (DualPipe): each phase is the rank's one stage of that direction.
    stage_[0] = stage_on(p, dir0, rank, 0);
    stage_[1] = stage_on(p, dir1, rank, 0);
  } else {
    // V-shape (DualPipeV): phase 0 is the first local stage, phase 1 the second.
    stage_[0] = stage_on(p, 0, rank, 0);
    stage_[1] = stage_on(p, 0, rank, 1);
  }
}

ir::Action PhaseSteps::next(ir::ActionKind kind, int32_t phase) {
  int32_t& counter = kind == ir::ActionKind::F ? f_[phase] : b_[phase];
  return ir::Action{kind, ir::MbId(mb_of(p_, dir_[phase], counter++)), ir::StageId(stage_[phase])};
}

void PhaseSteps::forward(int32_t phase) { out_.push(next(ir::ActionKind::F, phase)); }

void PhaseSteps::backward(int32_t phase, bool zero_bubble) {
  if (!zero_bubble) {
    out_.push(next(ir::ActionKind::BW, phase));
    return;
  }
  ir::Action b = next(ir::ActionKind::B, phase);
  out_.push(b);
  weights_.push_back(ir::W(b.mb.value, b.stage.value));
}

void PhaseSteps::overlapped(int32_t f_phase, int32_t b_phase) {
  ir::Action f = next(ir::ActionKind::F, f_phase);
  out_.push_overlap(f, next(ir::ActionKind::BW, b_phase));
}

void PhaseSteps::weight() {
  if (next_w_ < weights_.size()) out_.push(weights_[next_w_++]);
}

void adapt_backward(ir::Schedule& s) {
  if (s.problem.backward != ir::BackwardMode::Split) return;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& old = s.ranks[r];
    std::vector<ir::Action> out;
    std::vector<int32_t> units;
    out.reserve(old.size() * 2);
    auto expand = [&](ir::Action a, std::vector<ir::Action>& pending_w) {
      if (a.kind != ir::ActionKind::BW) {
        out.push_back(a);
        return;
      }
      out.push_back(ir::B(a.mb.value, a.stage.value));
      pending_w.push_back(ir::W(a.mb.value, a.stage.value));
    };
    for (int32_t i = 0; i < static_cast<int32_t>(old.size()); ++i) {
      std::vector<ir::Action> pending_w;
      if (s.overlap_starts_at(r, i) && i + 1 < static_cast<int32_t>(old.size())) {
        units.push_back(static_cast<int32_t>(out.size()));
        expand(old[static_cast<size_t>(i)], pending_w);
        expand(old[static_cast<size_t>(i) + 1], pending_w);
        ++i;
      } else {
        expand(old[static_cast<size_t>(i)], pending_w);
      }
      out.insert(out.end(), pending_w.begin(), pending_w.end());
    }
    s.ranks[r] = std::move(out);
    if (r < s.overlap.size()) s.overlap[r] = std::move(units);
  }
}

// ---------------------------------------------------------------------------------------------
// ListScheduler

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
}

ListScheduler::ListScheduler(const ir::Problem& p, const Deadline* deadline)
    : p_(p), time_scale_(ir::time_scale(p)), memory_scale_(ir::memory_scale(p)), deadline_(deadline) {
  size_t R = static_cast<size_t>(p.ranks);
  streams_.resize(R);
  next_.resize(R);
  weights_.resize(R);
  weights_next_.assign(R, 0);
  state_.resize(R);
  orders_.resize(R);
}

const ir::DepGraph& ListScheduler::graph() const {
  if (graph_) return *graph_;
  // Nodes in action-id order (microbatch, stage, kind), so that an action and its inputs lie close.
  std::vector<char> present(ir::num_action_slots(p_), 0);
  for (const auto& rank_streams : streams_)
    for (const auto& stream : rank_streams)
      for (ir::Action a : stream) {
        present[ir::action_id(p_, a).index()] = 1;
        if (queue_weights_ && a.kind == ir::ActionKind::B)
          present[ir::action_id(p_, ir::W(a.mb.value, a.stage.value)).index()] = 1;
      }
  std::vector<ir::Action> actions;
  for (size_t id = 0; id < present.size(); ++id)
    if (present[id]) actions.push_back(ir::action_at(p_, ir::ActionId(static_cast<int32_t>(id))));
  graph_.emplace(p_, actions);
  stream_nodes_.resize(streams_.size());
  for (size_t r = 0; r < streams_.size(); ++r)
    for (const auto& stream : streams_[r]) {
      std::vector<int32_t> nodes;
      nodes.reserve(stream.size());
      for (ir::Action a : stream) nodes.push_back(graph_->node_of(a));
      stream_nodes_[r].push_back(std::move(nodes));
    }
  const size_t n = graph_->size();
  node_.assign(n, NodeState{});
  for (size_t v = 0; v < n; ++v) {
    auto x = static_cast<int32_t>(v);
    node_[v].waiting = static_cast<int32_t>(graph_->preds(x).size()) + graph_->missing_inputs(x);
  }
  memo_.assign(graph_->size(), 0);
  memo_stamp_.assign(graph_->size(), 0);
  return *graph_;
}

std::optional<ir::Action> ListScheduler::head(int32_t rank, int32_t stream) const {
  size_t r = static_cast<size_t>(rank), k = static_cast<size_t>(stream);
  if (next_[r][k] >= streams_[r][k].size()) return std::nullopt;
  return streams_[r][k][next_[r][k]];
}

int64_t ListScheduler::earliest_start(ir::Action a) const {
  const ir::DepGraph& g = graph();
  if (++stamp_ == 0) std::fill(memo_stamp_.begin(), memo_stamp_.end(), 0), stamp_ = 1;
  const int32_t v = g.node_of(a);
  assert(v >= 0 && "earliest_start asks for an action of a stream");
  if (v < 0) return state_[ir::rank_of(p_, a).index()].free_at;
  // Start of node x: its rank free, and every input's end (its tick once run, else a bound) plus lag.
  auto start = [&](auto& self, int32_t x) -> int64_t {
    auto i = static_cast<size_t>(x);
    if (memo_stamp_[i] == stamp_) return memo_[i];
    int64_t t = state_[static_cast<size_t>(g.rank(x))].free_at;
    for (const ir::DepGraph::Edge& e : g.preds(x)) {
      int64_t done = node_[static_cast<size_t>(e.node)].end;
      int64_t end = done >= 0 ? done : self(self, e.node) + g.duration(e.node);
      t = std::max(t, end + e.lag);
    }
    memo_stamp_[i] = stamp_;
    memo_[i] = t;
    return t;
  };
  return start(start, v);
}

void ListScheduler::add_stream(int32_t rank, std::vector<ir::Action> actions) {
  assert(!graph_ && "streams are added before the scheduler runs");
  streams_[static_cast<size_t>(rank)].push_back(std::move(actions));
  next_[static_cast<size_t>(rank)].push_back(0);
}

int64_t ListScheduler::memory_delta(ir::Action a) const { return ir::to_fixed(ir::memory_delta(p_, a), memory_scale_); }

int64_t ListScheduler::duration(ir::Action a) const { return ir::to_fixed(ir::cost_of(p_, a), time_scale_); }

ListScheduler::Choice ListScheduler::decide(int32_t rank, const Policy* policy) const {
  size_t r = static_cast<size_t>(rank);
  const RankState& st = state_[r];
  const ir::DepGraph& g = *graph_;
  std::vector<Candidate> cands;
  // The node of a candidate: the next one of its stream, or of the weight queue.
  auto node = [&](const Candidate& c) {
    if (c.stream < 0) return weights_[r][weights_next_[r]];
    auto k = static_cast<size_t>(c.stream);
    return stream_nodes_[r][k][next_[r][k]];
  };
  for (size_t k = 0; k < streams_[r].size(); ++k) {
    if (next_[r][k] >= streams_[r][k].size()) continue;
    auto ready = ready_time(stream_nodes_[r][k][next_[r][k]]);
    if (ready) cands.push_back({streams_[r][k][next_[r][k]], static_cast<int32_t>(k), *ready});
  }
  if (weights_next_[r] < weights_[r].size()) {
    int32_t w = weights_[r][weights_next_[r]];
    cands.push_back({g.action(w), -1, *ready_time(w)});
  }
  std::vector<std::optional<int64_t>> keys(cands.size());
  int64_t first = kNever;
  for (size_t i = 0; i < cands.size(); ++i) {
    keys[i] = policy ? (*policy)(rank, cands[i], st) : std::optional<int64_t>(cands[i].ready);
    if (keys[i]) first = std::min(first, cands[i].ready);
  }
  if (first == kNever) return {};
  int64_t at = std::max(st.free_at, first);
  // Among the candidates ready at `at`: the lowest key, then the lowest stream (weight queue last).
  auto order = [](int32_t stream) { return stream < 0 ? std::numeric_limits<int32_t>::max() : stream; };
  size_t best = cands.size();
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!keys[i] || cands[i].ready > at) continue;
    if (best < cands.size() &&
        (*keys[i] > *keys[best] || (*keys[i] == *keys[best] && order(cands[i].stream) >= order(cands[best].stream))))
      continue;
    best = i;
  }
  assert(best < cands.size() && "the earliest allowed candidate is ready at the decision time");
  return Choice{at, cands[best], node(cands[best])};
}

void ListScheduler::commit(int32_t rank, const Choice& choice) {
  size_t r = static_cast<size_t>(rank);
  const Candidate& c = choice.cand;
  ir::Action a = c.action;
  int64_t end = choice.at + graph_->duration(choice.node);
  RankState& st = state_[r];
  st.free_at = end;
  st.memory += graph_->memory(choice.node);
  node_[static_cast<size_t>(choice.node)].end = end;
  for (const ir::DepGraph::Edge& e : graph_->succs(choice.node)) {
    NodeState& next = node_[static_cast<size_t>(e.node)];
    next.ready = std::max(next.ready, end + e.lag);
    --next.waiting;
  }
  switch (a.kind) {
    case ir::ActionKind::F: ++st.forwards; break;
    case ir::ActionKind::B:
    case ir::ActionKind::BW:
      ++st.backwards;
      if (a.kind == ir::ActionKind::B && queue_weights_)
        weights_[r].push_back(graph_->node_of(ir::W(a.mb.value, a.stage.value)));
      break;
    case ir::ActionKind::W: ++st.weights; break;
    case ir::ActionKind::R: break;  // the canonical graph has no recomputation
  }
  if (c.stream >= 0) ++next_[r][static_cast<size_t>(c.stream)];
  else ++weights_next_[r];
  orders_[r].push_back(a);
  ++runs_;
}

bool ListScheduler::run(const Policy& policy) {
  const int32_t R = p_.ranks;
  graph();  // decide, ready_time and commit read graph_
  size_t remaining = 0;
  for (const auto& rank_streams : streams_)
    for (const auto& s : rank_streams) remaining += s.size();
  // Each rank's choice, recomputed only when it can have changed; a min-heap of (decision time,
  // rank) finds the next rank to run, stale entries skipped by their version.
  struct Entry {
    int64_t at;
    int32_t rank;
    uint64_t version;
    bool operator>(const Entry& o) const { return at != o.at ? at > o.at : rank > o.rank; }
  };
  std::vector<Choice> choice(static_cast<size_t>(R));
  std::vector<uint64_t> version(static_cast<size_t>(R), 0);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto refresh = [&](int32_t r) {
    size_t i = static_cast<size_t>(r);
    choice[i] = decide(r, &policy);
    ++version[i];
    if (choice[i].at >= 0) heap.push({choice[i].at, r, version[i]});
  };
  for (int32_t r = 0; r < R; ++r) refresh(r);
  Deadline::Poll poll(deadline_);
  while (remaining > 0) {
    if (poll.passed()) {
      expired_ = true;
      return false;
    }
    while (!heap.empty() && heap.top().version != version[static_cast<size_t>(heap.top().rank)]) heap.pop();
    int32_t pick = -1;
    Choice chosen;
    if (!heap.empty()) {
      pick = heap.top().rank;
      heap.pop();
      chosen = choice[static_cast<size_t>(pick)];
    } else {
      // The policy allows nothing anywhere (its memory limit is too tight): take the earliest
      // action any rank could run, ignoring the policy for this one step.
      for (int32_t r = 0; r < R; ++r) {
        Choice c = decide(r, nullptr);
        if (c.at >= 0 && (pick < 0 || c.at < chosen.at)) pick = r, chosen = c;
      }
      if (pick < 0) return false;
      ++overrides_;
    }
    commit(pick, chosen);
    --remaining;  // a queued W counts once its B has run
    if (queue_weights_ && chosen.cand.action.kind == ir::ActionKind::B) ++remaining;
    // Only the owner and the ranks of the neighbouring stages can see a new candidate.
    ir::Action a = chosen.cand.action;
    refresh(pick);
    for (int32_t ds = -1; ds <= 1; ds += 2) {
      int32_t st = a.stage.value + ds;
      if (st < 0 || st >= p_.num_stages()) continue;
      int32_t r = p_.rank_of(a.mb, ir::StageId(st)).value;
      if (r != pick) refresh(r);
    }
  }
  return true;
}

ir::Schedule ListScheduler::take() {
  ir::Schedule s;
  s.problem = p_;
  s.ranks = std::move(orders_);
  return s;
}

}  // namespace schedc::solver::fam
