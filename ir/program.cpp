#include "ir/program.h"

#include "support/numbers.h"

namespace schedc::ir {

std::string_view to_string(MessageKind k) { return k == MessageKind::Activation ? "activation" : "gradient"; }

size_t Program::num_ops() const {
  size_t n = 0;
  for (const RankProgram& r : ranks) n += r.ops.size();
  return n;
}

size_t Program::num_groups() const {
  size_t n = 0;
  for (const RankProgram& r : ranks) n += r.groups.size();
  return n;
}

std::string format_transfer(const Message& m, RankId on_rank) {
  std::string s = is_send_on(m, on_rank) ? "send " : "recv ";
  s += format_action(m.producer);
  s += is_send_on(m, on_rank) ? " -> r" + std::to_string(m.dst.value) : " <- r" + std::to_string(m.src.value);
  s += " #" + std::to_string(m.seq);
  return s;
}

std::string format_op(const Program& p, RankId rank, const Op& op) {
  const RankProgram& rp = p.ranks[rank.index()];
  switch (op.kind) {
    case OpKind::Compute:
      if (op.partner) return "(" + format_action(op.action) + " " + format_action(*op.partner) + ")";
      return format_action(op.action);
    case OpKind::Post: {
      std::string s = "post g" + std::to_string(op.group) + " {";
      const Group& g = rp.groups[static_cast<size_t>(op.group)];
      for (size_t i = 0; i < g.transfers.size(); ++i) {
        if (i) s += ", ";
        s += format_transfer(p.message(g.transfers[i]), rank);
      }
      return s + "}";
    }
    case OpKind::Wait: {
      std::string s = "wait g" + std::to_string(op.group) + " (";
      for (size_t i = 0; i < op.needs.size(); ++i) {
        if (i) s += ", ";
        s += format_action(p.message(op.needs[i]).producer);
      }
      return s + ")";
    }
    case OpKind::WaitAll: return "wait all";
  }
  return "";
}

std::string format_program(const Program& p) {
  size_t channels = 0;
  {
    std::vector<char> used(static_cast<size_t>(p.problem.ranks) * static_cast<size_t>(p.problem.ranks), 0);
    for (const Message& m : p.messages) {
      char& u = used[m.src.index() * static_cast<size_t>(p.problem.ranks) + m.dst.index()];
      channels += u == 0;
      u = 1;
    }
  }
  std::string out = "# schedc program: " + std::to_string(p.problem.ranks) + " ranks, " +
                    std::to_string(p.problem.microbatches) + " microbatches, " + std::to_string(p.messages.size()) +
                    " messages on " + std::to_string(channels) + " channels, " + std::to_string(p.num_groups()) +
                    " groups\n";
  if (!p.strategy.empty()) out += "# lowering: " + p.strategy + "\n";
  out += "# a message is named by the action that produces it (F: activation, B/BW: input gradient);\n";
  out += "# #k is its position on the channel between the two ranks (first in, first out)\n";
  out += "# peak memory incl. receive buffers:";
  for (size_t r = 0; r < p.ranks.size(); ++r)
    out += " r" + std::to_string(r) + " " + format_number(p.ranks[r].peak_memory);
  out += "\n";
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const RankProgram& rp = p.ranks[r];
    out += "rank " + std::to_string(r) + ":\n";
    size_t width = std::to_string(rp.ops.empty() ? 0 : rp.ops.size() - 1).size();
    for (size_t i = 0; i < rp.ops.size(); ++i) {
      std::string num = std::to_string(i);
      out += "  " + std::string(width - num.size(), ' ') + num + "  ";
      out += format_op(p, RankId(static_cast<int32_t>(r)), rp.ops[i]);
      out += "\n";
    }
  }
  return out;
}

}  // namespace schedc::ir
