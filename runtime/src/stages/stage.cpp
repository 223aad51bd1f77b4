#include "schedrt/stage.h"

#include "stages/stages_internal.h"

namespace schedrt {

void Stage::backward(int32_t mb, const void* grad_out, void* grad_in) {
  backward_input(mb, grad_out, grad_in);
  backward_weight(mb);
}

void Stage::overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                       void* grad_in) {
  forward(f_mb, in, out);
  if (b.kind == Kind::BW) other.backward(b.mb, grad_out, grad_in);
  else other.backward_input(b.mb, grad_out, grad_in);
}

std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage) {
  switch (config.kind) {
    case StageKind::Mlp:
      if (config.dtype == Dtype::BF16) throw Error("the mlp stage computes in bf16 only on the cuda backend");
      return make_mlp_stage(config, stage);
    case StageKind::Synthetic: return make_synthetic_stage(config, stage);
    case StageKind::Noop: return make_noop_stage(config, stage);
  }
  return nullptr;
}

std::string to_string(StageKind k) {
  switch (k) {
    case StageKind::Mlp: return "mlp";
    case StageKind::Synthetic: return "synthetic";
    case StageKind::Noop: return "noop";
  }
  return "mlp";
}

std::optional<StageKind> stage_kind(std::string_view name) {
  for (StageKind k : kStageKinds)
    if (to_string(k) == name) return k;
  return std::nullopt;
}

bool has_sequential_reference(StageKind k) { return k == StageKind::Mlp; }

std::string to_string(Dtype d) { return d == Dtype::F64 ? "fp64" : d == Dtype::F32 ? "fp32" : "bf16"; }

}  // namespace schedrt
