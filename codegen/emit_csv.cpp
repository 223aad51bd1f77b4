// PyTorch pipelining's compute-only CSV (the form `_load_csv(..., format="compute_only")` reads):
// one row per rank, one step a cell. Our B is torch's `I` (input gradient), W is `W`, and a fused
// BW is torch's full backward `B`. An overlapped unit is written in the order of the schedule.
// A stage on two ranks (bidirectional problems) has no form: PyTorch's validator rejects a file
// where one stage appears on two rows.
//
// The compute-and-comms form (`format="compute_comms"`, what _PipelineScheduleRuntime runs as
// written) is taken from the lowered program, so torch runs schedc's communication order, not its
// own `_add_send_recv` lowering. docs/formats.md has the mapping and why it is deadlock-free.

#include "codegen/emit.h"

#include "ir/torch_token.h"

#include <cassert>
#include <vector>

namespace schedc::codegen {
namespace {

void append_token(std::string& out, ir::Action a) { out += ir::torch_token(a); }

void append_compute(std::string& out, const ir::Op& op) {
  if (!op.partner) return append_token(out, op.action);
  out += '(';
  append_token(out, op.action);
  out += ';';
  append_token(out, *op.partner);
  out += ")OVERLAP_F_B";
}

// torch names a transfer by the stage at its own end: SEND_F/SEND_B by the producer's stage, RECV_F
// by the consuming forward's stage (s+1), RECV_B by the consuming backward's stage (s-1).
void append_transfer(std::string& out, const ir::Message& m, ir::RankId on_rank) {
  bool send = ir::is_send_on(m, on_rank);
  ir::Action end = send ? m.producer : m.consumer;
  out += std::to_string(end.stage.value);
  out += send ? "SEND_" : "RECV_";
  out += m.kind == ir::MessageKind::Activation ? 'F' : 'B';
  out += std::to_string(end.mb.value);
}

// The backward kinds torch counts towards a stage's REDUCE_GRAD: its W and full B (not I).
bool ends_a_gradient(ir::ActionKind k) { return k == ir::ActionKind::W || k == ir::ActionKind::BW; }

}  // namespace

std::optional<StageOnTwoRanks> torch_csv_conflict(const ir::Problem& p) {
  for (int32_t st = 0; st < p.num_stages(); ++st) {
    ir::StageId stage(st);
    ir::RankId first = p.rank_of(0, stage);
    for (int32_t d = 1; d < p.num_directions(); ++d)
      if (ir::RankId other = p.rank_of(d, stage); other != first) return StageOnTwoRanks{stage, first, other};
  }
  return std::nullopt;
}

std::string emit_torch_csv(const ir::Schedule& s) {
  assert(!torch_csv_conflict(s.problem) && "torch-csv cannot express a stage on two ranks; the caller refuses it");
  std::string out;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    const auto& order = s.ranks[r];
    for (size_t i = 0; i < order.size(); ++i) {
      if (i) out += ',';
      if (s.overlap_starts_at(r, static_cast<int32_t>(i)) && i + 1 < order.size()) {
        out += '(';
        append_token(out, order[i]);
        out += ';';
        append_token(out, order[i + 1]);
        out += ")OVERLAP_F_B";
        ++i;
        continue;
      }
      append_token(out, order[i]);
    }
    // Python's csv writer ends rows with CRLF; PyTorch's checked-in files (and Git) use LF.
    out += '\n';
  }
  return out;
}

std::string emit_torch_csv_comms(const ir::Program& prog) {
  const ir::Problem& p = prog.problem;
  assert(!torch_csv_conflict(p) && "torch-csv cannot express a stage on two ranks; the caller refuses it");
  std::string out;
  for (size_t r = 0; r < prog.ranks.size(); ++r) {
    const ir::RankId rank(static_cast<int32_t>(r));
    const std::vector<ir::Op>& ops = prog.ranks[r].ops;
    std::vector<int32_t> gradients(static_cast<size_t>(p.num_stages()), 0);
    std::vector<ir::StageId> reduce;  // stages whose last W/B has run, their REDUCE_GRAD not written
    bool first = true;
    auto cell = [&]() -> std::string& {
      if (!first) out += ',';
      first = false;
      return out;
    };
    for (size_t k = 0; k < ops.size(); ++k) {
      const ir::Op& op = ops[k];
      if (op.kind == ir::OpKind::Compute) {
        append_compute(cell(), op);
        for (const std::optional<ir::Action>& a : {std::optional<ir::Action>(op.action), op.partner})
          if (a && ends_a_gradient(a->kind) && ++gradients[a->stage.index()] == p.microbatches)
            reduce.push_back(a->stage);
      } else if (op.kind == ir::OpKind::Post) {
        for (ir::MessageId id : prog.ranks[r].groups[static_cast<size_t>(op.group)].transfers)
          append_transfer(cell(), prog.message(id), rank);
      }
      // Waits have no action: torch waits for a receive right before the compute that reads it,
      // and for its sends at the end of the step.
      if (reduce.empty()) continue;
      // After the sends posted with the compute that ended the stage's gradients, so that the
      // reduction does not hold back the pipeline.
      bool posts_follow = k + 1 < ops.size() && ops[k + 1].kind == ir::OpKind::Post &&
                          ops[k + 1].position == op.position;
      if (posts_follow) continue;
      for (ir::StageId st : reduce) cell() += std::to_string(st.value) + "REDUCE_GRAD";
      reduce.clear();
    }
    out += '\n';
  }
  return out;
}

}  // namespace schedc::codegen
