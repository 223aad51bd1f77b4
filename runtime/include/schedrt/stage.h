#pragma once
// The stage interface: one virtual stage's piece of the model on one rank (one replica of it for
// bidirectional schedules), and the stages schedrt ships: `mlp` (real math, fp64 or fp32),
// `synthetic` (holds the rank for each action's cost) and `noop` (does nothing; for measuring the
// executor's own overhead). A GPU stage implements the same interface with device pointers.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedrt/types.h"

namespace schedrt {

class Stage {
 public:
  virtual ~Stage() = default;

  /// Bytes of one boundary tensor: the activation a forward passes on, and its gradient.
  virtual size_t boundary_bytes() const = 0;

  /// F: reads `in` (nullptr on stage 0: the stage makes the microbatch's input from the seed) and
  /// writes `out` (nullptr on the last stage, which computes the microbatch's loss instead).
  virtual void forward(int32_t mb, const void* in, void* out) = 0;
  /// B: reads `grad_out` (nullptr on the last stage: the loss gradient) and writes `grad_in`
  /// (nullptr on stage 0, where no one needs it); keeps what W needs.
  virtual void backward_input(int32_t mb, const void* grad_out, void* grad_in) = 0;
  /// W: the weight gradient of microbatch `mb`, from what B kept.
  virtual void backward_weight(int32_t mb) = 0;
  /// BW: B then W.
  virtual void backward(int32_t mb, const void* grad_out, void* grad_in);
  /// An overlapped F&B unit: this stage's forward and `other`'s backward `b` (B or BW), as one
  /// unit. The default runs one after the other; a stage may overlap them (streams) or, like the
  /// synthetic stage, take the unit's own cost.
  virtual void overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                          void* grad_in);

  /// The mean-squared-error loss of microbatch `mb` (last stage, after its forward; else 0).
  virtual double loss(int32_t mb) const { return 0; }

  /// Bytes of this stage's weight gradient (0 for stages without weights).
  virtual size_t gradient_bytes() const { return 0; }
  /// Writes to `out` the sum of the gradients of microbatches `mbs`, added in exactly that order
  /// (a left fold), so that the result does not depend on the order the schedule ran them in.
  virtual void reduce_gradients(const std::vector<int32_t>& mbs, void* out) const {}
  /// out = a + b, elementwise (the sum of two replicas' partial gradients, a from direction 0).
  virtual void add_gradients(const void* a, const void* b, void* out) const {}
  /// A gradient buffer as doubles, for comparisons.
  virtual std::vector<double> gradient_values(const void* grads) const { return {}; }
};

enum class StageKind { Mlp, Synthetic, Noop };
/// bf16 (storage in bfloat16, accumulation in fp32) exists only on the cuda backend's stages.
enum class Dtype { F64, F32, BF16 };

/// Everything a stage needs to know; filled from the runtime block, flags and the program.
struct StageConfig {
  StageKind kind = StageKind::Mlp;
  int32_t hidden = 64;     // width h of Linear(h, h)
  int32_t layers = 2;      // layers per stage
  int32_t batch = 8;       // rows per microbatch
  Dtype dtype = Dtype::F64;
  uint64_t seed = 1;
  double ms_per_unit = 10;  // synthetic: milliseconds per cost unit
  int32_t num_stages = 1;
  int32_t microbatches = 1;
  /// Synthetic: per-stage costs in the problem's time units; fb empty = F + B.
  std::vector<double> cost_f, cost_b, cost_w, cost_fb;
};

/// A new stage object for virtual stage `stage` (one replica).
std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage);

std::string to_string(StageKind k);
std::string to_string(Dtype d);

/// The stages schedrt ships, in documentation order.
inline constexpr StageKind kStageKinds[] = {StageKind::Mlp, StageKind::Synthetic, StageKind::Noop};
/// The stage called `name` (`mlp`, `synthetic`, `noop`), or nullopt.
std::optional<StageKind> stage_kind(std::string_view name);
/// Whether `--check` can compare the stage with a sequential run of the same model: it needs
/// weights and a loss (mlp); the others compute nothing to compare.
bool has_sequential_reference(StageKind k);

}  // namespace schedrt
