#include "codegen/verify_program.h"

#include <algorithm>
#include <map>

#include "support/numbers.h"

namespace schedc::codegen {
namespace {

using namespace ir;

std::string tok(Action a) { return backtick(format_action(a)); }

class ProgramVerifier {
 public:
  ProgramVerifier(const Schedule& s, const Program& p) : s_(s), p_(p), pb_(s.problem) {}

  std::vector<ProgramIssue> run() {
    if (!check_shape()) return issues_;
    check_compute();
    check_messages();
    if (!issues_.empty()) return issues_;
    check_posts();
    if (!issues_.empty()) return issues_;
    check_local_order();
    check_channels();
    if (!issues_.empty()) return issues_;
    check_deadlock();
    if (!issues_.empty()) return issues_;
    check_memory();
    return issues_;
  }

 private:
  size_t R() const { return static_cast<size_t>(pb_.ranks); }

  void bug(int32_t rank, int32_t op, std::string message) {
    if (issues_.size() < 20) issues_.push_back({DiagKind::Internal, true, rank, op, std::move(message)});
  }

  std::string op_text(size_t r, size_t i) const {
    return "op " + std::to_string(i) + " (`" + format_op(p_, RankId(static_cast<int32_t>(r)), p_.ranks[r].ops[i]) +
           "`)";
  }

  bool check_shape() {
    if (!(p_.problem == pb_)) bug(-1, -1, "the program's problem differs from the schedule's");
    if (p_.ranks.size() != R())
      bug(-1, -1, "the program has " + std::to_string(p_.ranks.size()) + " ranks, the problem " + std::to_string(R()));
    for (size_t r = 0; r < p_.ranks.size() && issues_.empty(); ++r)
      for (size_t i = 0; i < p_.ranks[r].ops.size(); ++i) {
        const Op& op = p_.ranks[r].ops[i];
        bool needs_group = op.kind == OpKind::Post || op.kind == OpKind::Wait;
        if (needs_group && (op.group < 0 || static_cast<size_t>(op.group) >= p_.ranks[r].groups.size()))
          bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
              "op " + std::to_string(i) + " names a group that does not exist");
      }
    for (const Message& m : p_.messages)
      if (!m.src.valid() || !m.dst.valid() || m.src.index() >= R() || m.dst.index() >= R() ||
          !in_range(pb_, m.producer) || !in_range(pb_, m.consumer))
        bug(-1, -1, "a message names a rank or action outside the problem");
    for (size_t r = 0; r < p_.ranks.size(); ++r)
      for (const Group& g : p_.ranks[r].groups)
        for (MessageId id : g.transfers)
          if (!id.valid() || id.index() >= p_.messages.size())
            bug(static_cast<int32_t>(r), -1, "a group names a message that does not exist");
    return issues_.empty();
  }

  // The compute ops of each rank are the schedule's units, in order.
  void check_compute() {
    compute_op_.assign(num_action_slots(pb_), -1);
    for (size_t r = 0; r < R(); ++r) {
      const auto& order = s_.ranks[r];
      size_t pos = 0;
      for (size_t i = 0; i < p_.ranks[r].ops.size(); ++i) {
        const Op& op = p_.ranks[r].ops[i];
        if (op.kind != OpKind::Compute) continue;
        bool pair = pos < order.size() && s_.overlap_starts_at(r, static_cast<int32_t>(pos)) && pos + 1 < order.size();
        bool ok = pos < order.size() && op.action == order[pos] && op.partner.has_value() == pair &&
                  (!pair || *op.partner == order[pos + 1]) && op.position == static_cast<int32_t>(pos);
        if (!ok) {
          bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
              "rank " + std::to_string(r) + " " + op_text(r, i) + " is not the schedule's unit at position " +
                  std::to_string(pos));
          return;
        }
        compute_op_[action_id(pb_, op.action).index()] = static_cast<int32_t>(i);
        if (op.partner) compute_op_[action_id(pb_, *op.partner).index()] = static_cast<int32_t>(i);
        pos += pair ? 2 : 1;
      }
      if (pos != order.size())
        bug(static_cast<int32_t>(r), -1,
            "rank " + std::to_string(r) + " computes " + std::to_string(pos) + " of its " +
                std::to_string(order.size()) + " actions");
    }
  }

  // One message per cross-rank dependency, none for a same-rank one.
  void check_messages() {
    ScheduleIndex index(s_);
    std::map<std::pair<int32_t, int32_t>, int32_t> by_edge;  // (producer id, consumer id) -> message
    for (size_t i = 0; i < p_.messages.size(); ++i) {
      const Message& m = p_.messages[i];
      auto key = std::make_pair(action_id(pb_, m.producer).value, action_id(pb_, m.consumer).value);
      if (!by_edge.emplace(key, static_cast<int32_t>(i)).second)
        bug(-1, -1, "two messages carry " + tok(m.producer) + " to " + tok(m.consumer));
    }
    size_t expected = 0;
    for (size_t r = 0; r < R(); ++r)
      for (Action c : s_.ranks[r])
        for (Action d : dependencies(pb_, c, index)) {
          RankId src = rank_of(pb_, d), dst = rank_of(pb_, c);
          auto it = by_edge.find({action_id(pb_, d).value, action_id(pb_, c).value});
          if (src == dst) {
            if (it != by_edge.end())
              bug(-1, -1,
                  tok(d) + " and " + tok(c) + " share rank " + std::to_string(src.value) +
                      " but a message connects them");
            continue;
          }
          ++expected;
          if (it == by_edge.end()) {
            bug(-1, -1,
                "no message carries " + tok(d) + " from rank " + std::to_string(src.value) + " to " + tok(c) +
                    " on rank " + std::to_string(dst.value));
            continue;
          }
          const Message& m = p_.messages[static_cast<size_t>(it->second)];
          MessageKind kind = d.kind == ActionKind::F ? MessageKind::Activation : MessageKind::Gradient;
          if (m.src != src || m.dst != dst || m.kind != kind)
            bug(-1, -1, "the message carrying " + tok(d) + " to " + tok(c) + " has the wrong ranks or kind");
        }
    if (expected != p_.messages.size())
      bug(-1, -1,
          "the program has " + std::to_string(p_.messages.size()) + " messages, the schedule needs " +
              std::to_string(expected));
  }

  // Every message is posted once by its sender and once by its receiver; groups posted once.
  void check_posts() {
    send_group_.assign(p_.messages.size(), -1);
    recv_group_.assign(p_.messages.size(), -1);
    post_op_.resize(R());
    for (size_t r = 0; r < R(); ++r) {
      const RankProgram& rp = p_.ranks[r];
      post_op_[r].assign(rp.groups.size(), -1);
      for (size_t i = 0; i < rp.ops.size(); ++i) {
        const Op& op = rp.ops[i];
        if (op.kind != OpKind::Post) continue;
        int32_t& at = post_op_[r][static_cast<size_t>(op.group)];
        if (at >= 0)
          bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
              "rank " + std::to_string(r) + " posts g" + std::to_string(op.group) + " twice");
        at = static_cast<int32_t>(i);
      }
      for (size_t g = 0; g < rp.groups.size(); ++g) {
        if (post_op_[r][g] < 0)
          bug(static_cast<int32_t>(r), -1, "rank " + std::to_string(r) + " never posts g" + std::to_string(g));
        for (MessageId id : rp.groups[g].transfers) {
          const Message& m = p_.message(id);
          bool send = m.src.index() == r, recv = m.dst.index() == r;
          if (!send && !recv) {
            bug(static_cast<int32_t>(r), -1,
                "rank " + std::to_string(r) + "'s g" + std::to_string(g) + " holds a message between two other ranks");
            continue;
          }
          int32_t& slot = send ? send_group_[id.index()] : recv_group_[id.index()];
          if (slot >= 0)
            bug(static_cast<int32_t>(r), -1,
                "rank " + std::to_string(r) + " posts " +
                    backtick(format_transfer(m, RankId(static_cast<int32_t>(r)))) + " twice");
          slot = static_cast<int32_t>(g);
        }
      }
    }
    for (size_t i = 0; i < p_.messages.size(); ++i) {
      const Message& m = p_.messages[i];
      if (send_group_[i] < 0)
        bug(m.src.value, -1,
            "rank " + std::to_string(m.src.value) + " never posts " + backtick(format_transfer(m, m.src)));
      if (recv_group_[i] < 0)
        bug(m.dst.value, -1,
            "rank " + std::to_string(m.dst.value) + " never posts " + backtick(format_transfer(m, m.dst)));
    }
  }

  // Sends after their producer; receives waited after posting and before their consumer.
  void check_local_order() {
    for (size_t i = 0; i < p_.messages.size(); ++i) {
      const Message& m = p_.messages[i];
      int32_t producer = compute_op_[action_id(pb_, m.producer).index()];
      int32_t post = post_op_[m.src.index()][static_cast<size_t>(send_group_[i])];
      if (post < producer)
        bug(m.src.value, post,
            "rank " + std::to_string(m.src.value) + " posts " + backtick(format_transfer(m, m.src)) + " at op " +
                std::to_string(post) + ", before its producer at op " + std::to_string(producer));
      size_t d = m.dst.index();
      int32_t consumer = compute_op_[action_id(pb_, m.consumer).index()];
      int32_t recv_post = post_op_[d][static_cast<size_t>(recv_group_[i])];
      bool waited = false;
      for (int32_t k = recv_post + 1; k < consumer && !waited; ++k) {
        const Op& op = p_.ranks[d].ops[static_cast<size_t>(k)];
        waited = op.kind == OpKind::Wait && op.group == recv_group_[i] &&
                 std::find(op.needs.begin(), op.needs.end(), MessageId(static_cast<int32_t>(i))) != op.needs.end();
      }
      if (!waited)
        bug(m.dst.value, consumer,
            "rank " + std::to_string(d) + " runs " + tok(m.consumer) + " at op " + std::to_string(consumer) +
                " without waiting for " + backtick(format_transfer(m, m.dst)) + " after posting it");
    }
    for (size_t r = 0; r < R(); ++r) {
      const auto& ops = p_.ranks[r].ops;
      for (size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        if (op.kind == OpKind::WaitAll && i + 1 != ops.size())
          bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
              "rank " + std::to_string(r) + "'s `wait all` is not its last op");
        if (op.kind != OpKind::Wait) continue;
        if (post_op_[r][static_cast<size_t>(op.group)] > static_cast<int32_t>(i))
          bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
              "rank " + std::to_string(r) + " waits for g" + std::to_string(op.group) + " before posting it");
        const auto& tr = p_.ranks[r].groups[static_cast<size_t>(op.group)].transfers;
        for (MessageId id : op.needs)
          if (std::find(tr.begin(), tr.end(), id) == tr.end())
            bug(static_cast<int32_t>(r), static_cast<int32_t>(i),
                "rank " + std::to_string(r) + " " + op_text(r, i) + " needs a message its group does not hold");
      }
      if (ops.empty() || ops.back().kind != OpKind::WaitAll)
        bug(static_cast<int32_t>(r), -1, "rank " + std::to_string(r) + " does not end with `wait all`");
    }
  }

  // Per channel, the senders' posting order and the receivers' posting order are the same list.
  void check_channels() {
    std::vector<std::vector<int32_t>> sends(R() * R()), recvs(R() * R());
    for (size_t r = 0; r < R(); ++r)
      for (const Op& op : p_.ranks[r].ops) {
        if (op.kind != OpKind::Post) continue;
        for (MessageId id : p_.ranks[r].groups[static_cast<size_t>(op.group)].transfers) {
          const Message& m = p_.message(id);
          size_t ch = m.src.index() * R() + m.dst.index();
          (m.src.index() == r ? sends : recvs)[ch].push_back(id.value);
        }
      }
    for (size_t ch = 0; ch < sends.size(); ++ch) {
      size_t src = ch / R(), dst = ch % R();
      for (size_t k = 0; k < sends[ch].size(); ++k) {
        const Message& m = p_.messages[static_cast<size_t>(sends[ch][k])];
        if (m.seq != static_cast<int32_t>(k))
          bug(static_cast<int32_t>(src), -1,
              backtick(format_transfer(m, m.src)) + " is the channel's message " + std::to_string(k) +
                  " but carries #" + std::to_string(m.seq));
        if (k >= recvs[ch].size() || recvs[ch][k] != sends[ch][k]) {
          std::string got = k < recvs[ch].size() ? tok(p_.messages[static_cast<size_t>(recvs[ch][k])].producer)
                                                 : "nothing";
          bug(static_cast<int32_t>(dst), -1,
              "channel " + std::to_string(src) + "->" + std::to_string(dst) + ": send #" + std::to_string(k) +
                  " carries " + tok(m.producer) + " but receive #" + std::to_string(k) + " expects " + got +
                  " (first in, first out)");
          break;
        }
      }
    }
  }

  // Executes the program under rendezvous with in-order groups until nothing moves.
  void check_deadlock() {
    const size_t M = p_.messages.size();
    std::vector<char> send_active(M, 0), recv_active(M, 0), done(M, 0);
    std::vector<size_t> pc(R(), 0), head(R(), 0);
    std::vector<std::vector<int32_t>> queue(R()), remaining(R());
    for (size_t r = 0; r < R(); ++r)
      for (const Group& g : p_.ranks[r].groups) remaining[r].push_back(static_cast<int32_t>(g.transfers.size()));
    std::vector<size_t> work;
    std::vector<char> queued(R(), 0);
    auto wake = [&](size_t r) {
      if (!queued[r]) queued[r] = 1, work.push_back(r);
    };
    // Activates groups from the head of r's queue while they complete.
    auto activate = [&](size_t r) {
      while (head[r] < queue[r].size()) {
        int32_t g = queue[r][head[r]];
        for (MessageId id : p_.ranks[r].groups[static_cast<size_t>(g)].transfers) {
          const Message& m = p_.message(id);
          (m.src.index() == r ? send_active : recv_active)[id.index()] = 1;
          if (done[id.index()] || !send_active[id.index()] || !recv_active[id.index()]) continue;
          done[id.index()] = 1;
          --remaining[m.src.index()][static_cast<size_t>(send_group_[id.index()])];
          --remaining[m.dst.index()][static_cast<size_t>(recv_group_[id.index()])];
          wake(m.src.index());
          wake(m.dst.index());
        }
        if (remaining[r][static_cast<size_t>(g)] > 0) break;
        ++head[r];
      }
    };
    for (size_t r = R(); r-- > 0;) wake(r);
    while (!work.empty()) {
      size_t r = work.back();
      work.pop_back();
      queued[r] = 0;
      activate(r);
      const auto& ops = p_.ranks[r].ops;
      while (pc[r] < ops.size()) {
        const Op& op = ops[pc[r]];
        if (op.kind == OpKind::Post) {
          queue[r].push_back(op.group);
          activate(r);
        } else if (op.kind == OpKind::Wait) {
          if (remaining[r][static_cast<size_t>(op.group)] > 0) break;
        } else if (op.kind == OpKind::WaitAll) {
          if (head[r] < p_.ranks[r].groups.size()) break;
        }
        ++pc[r];
      }
    }
    std::vector<int32_t> blocked_on(R(), -1);  // the message a stuck rank waits for
    for (size_t r = 0; r < R(); ++r) {
      if (pc[r] == p_.ranks[r].ops.size()) continue;
      // Groups complete in order: a stuck rank waits for its first unfinished group.
      int32_t g = queue[r][head[r]];
      for (MessageId id : p_.ranks[r].groups[static_cast<size_t>(g)].transfers)
        if (!done[id.index()]) {
          blocked_on[r] = id.value;
          break;
        }
    }
    auto first = std::find_if(blocked_on.begin(), blocked_on.end(), [](int32_t m) { return m >= 0; });
    if (first == blocked_on.end()) return;
    std::string chain;
    std::vector<size_t> seen;
    size_t r = static_cast<size_t>(first - blocked_on.begin());
    while (std::find(seen.begin(), seen.end(), r) == seen.end() && blocked_on[r] >= 0) {
      seen.push_back(r);
      size_t id = static_cast<size_t>(blocked_on[r]);
      const Message& m = p_.messages[id];
      size_t peer = m.src.index() == r ? m.dst.index() : m.src.index();
      int32_t peer_group = m.src.index() == peer ? send_group_[id] : recv_group_[id];
      bool peer_posted = std::find(queue[peer].begin(), queue[peer].end(), peer_group) != queue[peer].end();
      if (!chain.empty()) chain += "; ";
      chain += "rank " + std::to_string(r) + " is stuck at " + op_text(r, pc[r]) + " until " +
               backtick(format_transfer(m, RankId(static_cast<int32_t>(r)))) + " completes, and rank " +
               std::to_string(peer) +
               (peer_posted ? " posted its side in g" + std::to_string(peer_group) + " behind unfinished g" +
                                  std::to_string(queue[peer][head[peer]])
                            : " has not posted its side");
      r = peer;
    }
    if (std::find(seen.begin(), seen.end(), r) != seen.end())
      chain += " (a cycle back to rank " + std::to_string(r) + ")";
    bug(static_cast<int32_t>(seen.front()), static_cast<int32_t>(pc[seen.front()]),
        "the lowered program deadlocks when a send completes only once its receive is posted: " + chain);
  }

  // Receive buffers held while other compute runs count as activation memory (as in lower.cpp,
  // recomputed here from the program alone).
  void check_memory() {
    const int64_t scale = memory_scale(pb_);
    // An F whose R the program runs is checkpointed (ir::memory_delta).
    std::vector<char> checkpointed(num_action_slots(pb_), 0);
    for (const RankProgram& rp : p_.ranks)
      for (const Op& op : rp.ops)
        if (op.kind == OpKind::Compute && op.action.kind == ActionKind::R && in_range(pb_, op.action))
          checkpointed[action_id(pb_, F(op.action.mb.value, op.action.stage.value)).index()] = 1;
    for (size_t r = 0; r < R(); ++r) {
      const RankProgram& rp = p_.ranks[r];
      int64_t cur = 0, held = 0, peak = 0, peak_held = 0;
      int32_t peak_op = -1;
      std::vector<std::vector<int32_t>> consumed_at(rp.ops.size());  // op -> messages it reads
      for (size_t m = 0; m < p_.messages.size(); ++m)
        if (p_.messages[m].dst.index() == r)
          consumed_at[static_cast<size_t>(compute_op_[action_id(pb_, p_.messages[m].consumer).index()])].push_back(
              static_cast<int32_t>(m));
      for (size_t i = 0; i < rp.ops.size(); ++i) {
        const Op& op = rp.ops[i];
        if (op.kind == OpKind::Post) {
          for (MessageId id : rp.groups[static_cast<size_t>(op.group)].transfers)
            if (p_.message(id).dst.index() == r) held += to_fixed(p_.message(id).size, scale);
        }
        if (op.kind != OpKind::Compute) continue;
        for (int32_t m : consumed_at[i]) held -= to_fixed(p_.messages[static_cast<size_t>(m)].size, scale);
        for (Action a : {op.action, op.partner.value_or(op.action)}) {
          const bool ck = a.kind == ActionKind::F && in_range(pb_, a) && checkpointed[action_id(pb_, a).index()];
          cur += to_fixed(memory_delta(pb_, a, ck), scale);
          if (cur + held > peak) peak = cur + held, peak_held = held, peak_op = static_cast<int32_t>(i);
          if (!op.partner) break;
        }
      }
      double value = static_cast<double>(peak) / static_cast<double>(scale);
      if (to_fixed(rp.peak_memory, scale) != peak)
        bug(static_cast<int32_t>(r), -1,
            "rank " + std::to_string(r) + "'s recorded peak memory " + format_number(rp.peak_memory) +
                " differs from the recomputed " + format_number(value));
      auto cap = pb_.cap_of(RankId(static_cast<int32_t>(r)));
      if (!cap || peak <= to_fixed(*cap, scale)) continue;
      issues_.push_back({DiagKind::MemoryCap, false, static_cast<int32_t>(r), peak_op,
                         "rank " + std::to_string(r) + " needs " + format_number(value) +
                             " of activation memory once receive buffers are counted (" +
                             format_number(static_cast<double>(peak_held) / static_cast<double>(scale)) +
                             " in buffers at " + op_text(r, static_cast<size_t>(peak_op)) + "), above its cap of " +
                             format_number(*cap)});
    }
  }

  const Schedule& s_;
  const Program& p_;
  const Problem& pb_;
  std::vector<ProgramIssue> issues_;
  std::vector<int32_t> compute_op_;               // [action id] -> op index on its rank
  std::vector<int32_t> send_group_, recv_group_;  // [message]
  std::vector<std::vector<int32_t>> post_op_;     // [rank][group] -> op index
};

}  // namespace

std::vector<ProgramIssue> verify_program(const Schedule& s, const Program& p) { return ProgramVerifier(s, p).run(); }

}  // namespace schedc::codegen
