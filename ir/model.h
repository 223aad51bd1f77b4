#pragma once
// ir::Model: a model as the sequence of its layers (docs/dsl.md, "Model and partition"), and the
// problem a partition of it into pipeline stages gives. The frontend derives the stated
// partition's problem from it; the solver's plan layer (solver/plan) derives one per candidate
// when the partition is its to choose (`partition = auto`).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/problem.h"

namespace schedc::ir {

/// One kind of layer, per microbatch, in the problem's units: its forward, input-gradient and
/// weight-gradient times, the activations its forward adds, what it holds for the whole step
/// (weights, gradients, optimizer state) and what it keeps when checkpointed (its input).
struct LayerKind {
  std::string name;
  double F = 0, B = 0, W = 0;
  double memory = 0;
  double static_memory = 0;
  double input = 0;
  bool operator==(const LayerKind&) const = default;
};

struct Model {
  std::vector<LayerKind> kinds;
  /// The body's layers in model order, each an index into `kinds`; a partition cuts this list.
  std::vector<int32_t> layers;
  /// Kinds run besides the body by the first stage (the embedding) and the last (the output head).
  std::optional<int32_t> embedding;
  std::optional<int32_t> head;
  /// memory.B and memory.W were not stated: each backward frees half of its stage's forward (as
  /// the frontend's default), so they follow every partition.
  bool deltas_follow = true;
  /// `recompute` is on: memory.input is derived too (each layer's `input`).
  bool derive_input = false;

  int32_t num_layers() const { return static_cast<int32_t>(layers.size()); }
  bool operator==(const Model&) const = default;
};

/// The per-stage values of `stage`'s layers (`first` is the index of its first body layer, `count`
/// how many) with the embedding on stage 0 and the head on the last: F, B, W, memory, static, input.
struct StageSums {
  double F = 0, B = 0, W = 0, memory = 0, static_memory = 0, input = 0;
};
StageSums stage_sums(const Model& m, int32_t stage, int32_t num_stages, int32_t first, int32_t count);

/// `base` with the costs and memory of `model` cut as `layers_per_stage` (one count per stage of
/// `base`, summing to the model's layers): cost.F/B/W, memory.F and memory.static per stage (a
/// uniform value where every stage has the same), memory.B and W following F when
/// `deltas_follow`, memory.input with `derive_input`. Everything else is `base`'s.
Problem with_partition(const Problem& base, const Model& model, std::span<const int32_t> layers_per_stage);

/// Layer counts per stage (summing to `layers`) that minimise the largest stage time, a stage's
/// time being its layers times `layer` plus `first` on stage 0 and `last` on the last stage.
/// Among the optimal counts: the largest stage time removed layer by layer from the heaviest
/// stage (the later one on ties), so equal stages differ by at most one layer. Deterministic.
std::vector<int32_t> balanced_partition(int32_t stages, int32_t layers, double layer, double first, double last);

/// `balanced_partition` for a model with one body kind: its F + B + W per layer, the embedding's
/// and the head's.
std::vector<int32_t> balanced_partition(const Model& model, int32_t stages);

}  // namespace schedc::ir
