// PyTorch pipelining's compute-only CSV (the form `_load_csv(..., format="compute_only")` reads):
// one row per rank, one step a cell. Our B is torch's `I` (input gradient), W is `W`, and a fused
// BW is torch's full backward `B`. An overlapped unit is written in the order of the schedule.

#include "codegen/emit.h"

#include <array>

namespace schedc::codegen {
namespace {

void append_token(std::string& out, ir::Action a) {
  static constexpr std::array<char, ir::kNumActionKinds> kLetter = {'F', 'I', 'W', 'B'};
  out += std::to_string(a.stage.value);
  out += kLetter[static_cast<size_t>(a.kind)];
  out += std::to_string(a.mb.value);
}

}  // namespace

std::string emit_torch_csv(const ir::Schedule& s) {
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
