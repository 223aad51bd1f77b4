#include "codegen/lower.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "ir/dep_graph.h"
#include "ir/simulate.h"
#include "support/internal_error.h"

namespace schedc::codegen {
namespace {

using namespace ir;

// One step of a rank: a single action or an overlapped F&B unit of two.
struct Unit {
  int32_t first = 0;
  int32_t count = 1;
};

class Lowering {
 public:
  Lowering(const Schedule& s, LowerStrategy strategy)
      : s_(s), p_(s.problem), strategy_(strategy), graph_(DepGraph::of_schedule(s)) {}

  Program run() {
    prog_.problem = p_;
    prog_.ranks.resize(static_cast<size_t>(p_.ranks));
    build_units();
    build_messages();
    send_group_.assign(prog_.messages.size(), -1);
    recv_group_.assign(prog_.messages.size(), -1);
    produced_.assign(prog_.messages.size(), 0);
    prog_.strategy = to_string(strategy_);
    if (strategy_ == LowerStrategy::Naive) {
      for (int32_t r = 0; r < p_.ranks; ++r) build_naive_rank(r);
    } else {
      order_messages();
      for (int32_t r = 0; r < p_.ranks; ++r) build_rank(r);
    }
    assign_sequence_numbers();
    account_memory();
    return std::move(prog_);
  }

 private:
  size_t R() const { return static_cast<size_t>(p_.ranks); }
  const Message& msg(MessageId id) const { return prog_.messages[id.index()]; }

  void build_units() {
    units_.resize(R());
    unit_of_.resize(R());
    for (size_t r = 0; r < R(); ++r) {
      const auto& order = s_.ranks[r];
      int32_t n = static_cast<int32_t>(order.size());
      unit_of_[r].assign(order.size(), -1);
      for (int32_t i = 0; i < n; ++i) {
        int32_t u = static_cast<int32_t>(units_[r].size());
        bool pair = s_.overlap_starts_at(r, i) && i + 1 < n;
        units_[r].push_back({i, pair ? 2 : 1});
        unit_of_[r][static_cast<size_t>(i)] = u;
        if (pair) unit_of_[r][static_cast<size_t>(++i)] = u;
      }
    }
  }

  Action action_at(size_t r, const Unit& u, int32_t k) const { return s_.ranks[r][static_cast<size_t>(u.first + k)]; }

  // Every cross-rank dependency becomes a message, in (producer rank, producer order) order.
  void build_messages() {
    in_.resize(R());
    out_.resize(R());
    for (size_t r = 0; r < R(); ++r) {
      in_[r].resize(units_[r].size());
      out_[r].resize(units_[r].size());
    }
    for (size_t r = 0; r < R(); ++r)
      for (size_t u = 0; u < units_[r].size(); ++u)
        for (int32_t k = 0; k < units_[r][u].count; ++k) {
          Action a = action_at(r, units_[r][u], k);
          int32_t v = graph_.node_at(static_cast<int32_t>(r), units_[r][u].first + k);
          for (const DepGraph::Edge& e : graph_.succs(v)) {
            DepGraph::Position pos = graph_.position(e.node);
            if (static_cast<size_t>(pos.rank) == r) continue;  // same rank (e.g. the V-turn): no message
            Message m;
            m.kind = a.kind == ActionKind::F ? MessageKind::Activation : MessageKind::Gradient;
            m.producer = a;
            m.consumer = graph_.action(e.node);
            m.src = RankId(static_cast<int32_t>(r));
            m.dst = RankId(pos.rank);
            m.size = std::max(0.0, p_.memory.F.at(m.consumer.stage.index()));
            MessageId id(static_cast<int32_t>(prog_.messages.size()));
            prog_.messages.push_back(m);
            producer_unit_.push_back(static_cast<int32_t>(u));
            int32_t cu = unit_of_[m.dst.index()][static_cast<size_t>(pos.index)];
            consumer_unit_.push_back(cu);
            out_[r][u].push_back(id);
            in_[m.dst.index()][static_cast<size_t>(cu)].push_back(id);
          }
        }
  }

  // The global order every rank posts in: a topological order of the execution (units run in
  // rank order once their inputs are ordered), choosing among the ready messages the one with the
  // earliest simulated send time (Prefetch) or need time (JustInTime), the other time second.
  void order_messages() {
    SimResult sim = simulate(s_);
    if (!sim.timeline) SCHEDC_INTERNAL_ERROR("lowering needs a schedule that completes in simulation");
    const Timeline& t = *sim.timeline;
    using Key = std::tuple<int64_t, int64_t, int32_t, int32_t, int32_t>;
    auto key = [&](MessageId id) {
      const Message& m = msg(id);
      const Unit& pu = units_[m.src.index()][static_cast<size_t>(producer_unit_[id.index()])];
      const Unit& cu = units_[m.dst.index()][static_cast<size_t>(consumer_unit_[id.index()])];
      int64_t sent = t.end[m.src.index()][static_cast<size_t>(pu.first)];
      int64_t needed = t.start[m.dst.index()][static_cast<size_t>(cu.first)];
      if (strategy_ == LowerStrategy::JustInTime) std::swap(sent, needed);
      return Key{sent, needed, m.src.value, producer_unit_[id.index()], id.value};
    };
    std::vector<std::vector<size_t>> remaining(R());
    for (size_t r = 0; r < R(); ++r)
      for (const auto& ins : in_[r]) remaining[r].push_back(ins.size());
    std::vector<size_t> next(R(), 0);
    std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
    auto advance = [&](size_t r) {
      while (next[r] < units_[r].size() && remaining[r][next[r]] == 0) {
        for (MessageId id : out_[r][next[r]]) ready.push(key(id));
        ++next[r];
      }
    };
    for (size_t r = 0; r < R(); ++r) advance(r);
    while (!ready.empty()) {
      MessageId id(std::get<4>(ready.top()));
      ready.pop();
      order_.push_back(id);
      const Message& m = msg(id);
      --remaining[m.dst.index()][static_cast<size_t>(consumer_unit_[id.index()])];
      advance(m.dst.index());
    }
    for (size_t r = 0; r < R(); ++r)
      if (next[r] != units_[r].size()) SCHEDC_INTERNAL_ERROR("lowering: the execution order did not complete");
  }

  int32_t new_group(size_t r, int32_t position, Group g) {
    RankProgram& rp = prog_.ranks[r];
    int32_t gi = static_cast<int32_t>(rp.groups.size());
    for (MessageId id : g.transfers) (msg(id).src.index() == r ? send_group_ : recv_group_)[id.index()] = gi;
    rp.groups.push_back(std::move(g));
    Op op;
    op.kind = OpKind::Post;
    op.group = gi;
    op.position = position;
    rp.ops.push_back(std::move(op));
    return gi;
  }

  void add_wait(size_t r, int32_t group, std::vector<MessageId> needs, int32_t position) {
    Op op;
    op.kind = OpKind::Wait;
    op.group = group;
    op.needs = std::move(needs);
    op.position = position;
    prog_.ranks[r].ops.push_back(std::move(op));
  }

  void add_compute(size_t r, const Unit& u) {
    Op op;
    op.kind = OpKind::Compute;
    op.action = action_at(r, u, 0);
    if (u.count == 2) op.partner = action_at(r, u, 1);
    op.position = u.first;
    prog_.ranks[r].ops.push_back(std::move(op));
  }

  // Waits for the receives a unit reads: one wait per group, in group order.
  void add_waits(size_t r, const std::vector<MessageId>& ins, int32_t position) {
    std::map<int32_t, std::vector<MessageId>> by_group;
    for (MessageId id : ins) by_group[recv_group_[id.index()]].push_back(id);
    for (auto& [g, needs] : by_group) add_wait(r, g, std::move(needs), position);
  }

  void build_rank(int32_t rank) {
    size_t r = static_cast<size_t>(rank);
    std::vector<MessageId> queue;
    std::vector<size_t> qpos(prog_.messages.size(), 0);
    for (MessageId id : order_)
      if (msg(id).src == RankId(rank) || msg(id).dst == RankId(rank)) {
        qpos[id.index()] = queue.size();
        queue.push_back(id);
      }
    auto is_send = [&](MessageId id) { return msg(id).src == RankId(rank); };
    size_t q = 0;
    // Posts queue[q..last] as one group.
    auto flush = [&](size_t last, int32_t position) {
      Group g;
      for (; q <= last; ++q) {
        MessageId id = queue[q];
        if (is_send(id) && !produced_[id.index()])
          SCHEDC_INTERNAL_ERROR("lowering: a send is ordered before a receive its producer depends on");
        g.transfers.push_back(id);
      }
      new_group(r, position, std::move(g));
    };
    for (size_t u = 0; u < units_[r].size(); ++u) {
      const Unit& unit = units_[r][u];
      const auto& ins = in_[r][u];
      std::optional<size_t> last;
      for (MessageId id : ins)
        if (recv_group_[id.index()] < 0) last = std::max(last.value_or(0), qpos[id.index()]);
      if (last) flush(*last, unit.first);
      add_waits(r, ins, unit.first);
      add_compute(r, unit);
      for (MessageId id : out_[r][u]) produced_[id.index()] = 1;
      // Post the sends produced so far: Prefetch with the receives ordered before them (posted
      // late, but before their consumer), JustInTime only up to the next receive.
      std::optional<size_t> last_send;
      for (size_t j = q; j < queue.size(); ++j) {
        if (!is_send(queue[j])) {
          if (strategy_ == LowerStrategy::JustInTime) break;
          continue;
        }
        if (!produced_[queue[j].index()]) break;
        last_send = j;
      }
      if (last_send) flush(*last_send, unit.first);
    }
    if (q < queue.size()) flush(queue.size() - 1, units_[r].empty() ? -1 : units_[r].back().first);
    Op all;
    all.kind = OpKind::WaitAll;
    prog_.ranks[r].ops.push_back(all);
  }

  void build_naive_rank(int32_t rank) {
    size_t r = static_cast<size_t>(rank);
    for (size_t u = 0; u < units_[r].size(); ++u) {
      const Unit& unit = units_[r][u];
      for (MessageId id : in_[r][u]) add_wait(r, new_group(r, unit.first, Group{{id}}), {id}, unit.first);
      add_compute(r, unit);
      for (MessageId id : out_[r][u]) add_wait(r, new_group(r, unit.first, Group{{id}}), {id}, unit.first);
    }
    Op all;
    all.kind = OpKind::WaitAll;
    prog_.ranks[r].ops.push_back(all);
  }

  // The seq-th send of a channel, in the sender's posting order.
  void assign_sequence_numbers() {
    std::vector<int32_t> next(R() * R(), 0);
    for (size_t r = 0; r < R(); ++r)
      for (const Op& op : prog_.ranks[r].ops) {
        if (op.kind != OpKind::Post) continue;
        for (MessageId id : prog_.ranks[r].groups[static_cast<size_t>(op.group)].transfers) {
          Message& m = prog_.messages[id.index()];
          if (m.src.index() == r) m.seq = next[r * R() + m.dst.index()]++;
        }
      }
  }

  // Peak per rank of (prefix sum of deltas) + (receive buffers posted and not yet consumed), at
  // every compute; a buffer a compute reads is that compute's own input, not extra memory.
  void account_memory() {
    const int64_t scale = memory_scale(p_);
    const ScheduleIndex index(s_);
    for (size_t r = 0; r < R(); ++r) {
      RankProgram& rp = prog_.ranks[r];
      int64_t cur = 0, held = 0, peak = 0;
      for (const Op& op : rp.ops) {
        if (op.kind == OpKind::Post) {
          for (MessageId id : rp.groups[static_cast<size_t>(op.group)].transfers)
            if (msg(id).dst.index() == r) held += to_fixed(msg(id).size, scale);
        } else if (op.kind == OpKind::Compute) {
          size_t u = static_cast<size_t>(unit_of_[r][static_cast<size_t>(op.position)]);
          for (MessageId id : in_[r][u]) held -= to_fixed(msg(id).size, scale);
          // Per action, as ir::peak_memory counts an overlapped unit's two actions.
          for (int32_t k = 0; k < units_[r][u].count; ++k) {
            Action a = action_at(r, units_[r][u], k);
            cur += to_fixed(memory_delta(p_, a, index.checkpointed(a.mb, a.stage)), scale);
            peak = std::max(peak, cur + held);
          }
        }
      }
      rp.peak_memory = static_cast<double>(peak) / static_cast<double>(scale);
    }
  }

  const Schedule& s_;
  const Problem& p_;
  LowerStrategy strategy_;
  DepGraph graph_;  // the schedule's dependencies: a cross-rank edge is a message
  Program prog_;
  std::vector<std::vector<Unit>> units_;
  std::vector<std::vector<int32_t>> unit_of_;                  // [rank][position] -> unit
  std::vector<std::vector<std::vector<MessageId>>> in_, out_;  // [rank][unit]
  std::vector<int32_t> producer_unit_, consumer_unit_;         // [message]
  std::vector<MessageId> order_;
  std::vector<int32_t> send_group_, recv_group_;  // [message] -> rank-local group, -1 before posting
  std::vector<char> produced_;                    // [message]: its producer has been emitted
};

}  // namespace

std::string_view to_string(LowerStrategy s) {
  switch (s) {
    case LowerStrategy::Auto: return "auto";
    case LowerStrategy::Prefetch: return "prefetch";
    case LowerStrategy::JustInTime: return "just-in-time";
    case LowerStrategy::Naive: return "naive";
  }
  return "auto";
}

namespace {

bool within_caps(const Program& p) {
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    auto cap = p.problem.cap_of(RankId(static_cast<int32_t>(r)));
    int64_t scale = memory_scale(p.problem);
    if (cap && to_fixed(p.ranks[r].peak_memory, scale) > to_fixed(*cap, scale)) return false;
  }
  return true;
}

}  // namespace

Program lower(const Schedule& s, const LowerOptions& options) {
  if (options.strategy != LowerStrategy::Auto) return Lowering(s, options.strategy).run();
  Program prefetch = Lowering(s, LowerStrategy::Prefetch).run();
  if (within_caps(prefetch)) return prefetch;
  return Lowering(s, LowerStrategy::JustInTime).run();
}

}  // namespace schedc::codegen
