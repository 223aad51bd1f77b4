// PyTorch pipelining's compute-only CSV (the form `_load_csv(..., format="compute_only")` reads):
// one row per rank, one step a cell. Our B is torch's `I` (input gradient), W is `W`, and a fused
// BW is torch's full backward `B`. An overlapped unit is written in the order of the schedule.
// A stage on two ranks (bidirectional problems) has no form: PyTorch's validator rejects a file
// where one stage appears on two rows.

#include "codegen/emit.h"

#include <array>
#include <cassert>

namespace schedc::codegen {
namespace {

void append_token(std::string& out, ir::Action a) {
  static constexpr std::array<char, ir::kNumActionKinds> kLetter = {'F', 'I', 'W', 'B'};
  out += std::to_string(a.stage.value);
  out += kLetter[static_cast<size_t>(a.kind)];
  out += std::to_string(a.mb.value);
}

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

}  // namespace schedc::codegen
