#pragma once
// ir::Model: a model as the sequence of its layers (docs/dsl.md, "Model and partition"), and the
// problem a partition of it into pipeline stages gives. The frontend derives the stated
// partition's problem from it; the solver's plan layer (solver/plan) derives one per candidate
// when the partition is its to choose (`partition = auto`).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// `balanced_partition` of a model: with one body kind, the counts above (its F + B + W per layer,
/// the embedding's and the head's). With several kinds, the contiguous cut whose slowest stage is
/// as fast as possible (exact, on the values' tick), the later stages filled first: from the last
/// stage back, each takes as many layers as fit under that optimum, the first stage the rest.
std::vector<int32_t> balanced_partition(const Model& model, int32_t stages);

/// Under a cap, a partition whose every rank's static memory fits (`partition = auto` starts from
/// the balanced one, and from this where the balanced one's static memory does not fit). One
/// direction with one body kind: the counts closest to balanced that fit (each rank clamped to
/// what its room holds, the rest to the ranks with most room), and where none fits the least
/// largest excess of a rank's static memory over its cap, over every partition (each layer to the
/// rank it grows least). One direction and one stage per rank: the contiguous cut of least
/// largest excess, exact. Otherwise each stage in order takes what its rank's room still holds
/// (not a proof when it finds nothing).
struct StaticFit {
  std::optional<std::vector<int32_t>> counts;  // a partition that fits; nullopt: none found
  bool exact = false;                          // without counts: no partition fits, proved
  double excess = 0;                           // with `exact`: the least largest static above its rank's cap
};
StaticFit fit_static(const Problem& base, const Model& model);

/// The least uniform cap any partition of `model` could fit, with any order and any
/// recomputation: each rank holds its static memory and, when a backward starts, that
/// microbatch's whole activations on the stage (a recomputed forward is whole again by then), so
/// a partition needs at least the largest static + activation over its stages; the least of
/// that over every partition, by a dynamic program over contiguous cuts. One direction, one
/// stage per rank, a uniform cap and the deltas following F (memory.B and W not stated) only;
/// nullopt otherwise. A lower bound on the cap: a cap below it fits no plan; one at or above it
/// may still not.
std::optional<double> least_cap_any_partition(const Problem& base, const Model& model);

/// torchtitan's `parallelism.module_fqns_per_model_part`: per stage, in model order, the names of
/// the modules it runs in a Llama-style model: `tok_embeddings` (the embedding, stage 0 only),
/// `layers.N` (body layer N, every layer once, in order), `norm` and `output` (the head, the last
/// stage only). The layers per stage of `model` those lists state, or nullopt with `error` saying
/// which name does not fit: `stage` and `item` the list and name at fault (-1 for the whole).
std::optional<std::vector<int32_t>> parse_torchtitan_modules(const std::vector<std::vector<std::string>>& stages,
                                                             const Model& model, std::string& error, int32_t& stage,
                                                             int32_t& item);
/// The lists of `layers_per_stage`, as torchtitan's TOML writes them:
/// `[["tok_embeddings", "layers.0"], ["layers.1", "norm", "output"]]`.
std::string torchtitan_modules(const Model& model, std::span<const int32_t> layers_per_stage);

/// Megatron-Core's `--pipeline-model-parallel-layout`: the stages in model order separated by `|`,
/// `E` the embedding (stage 0 only), `L` the loss and output head (the last stage only, last), `t`
/// a decoder layer (any body layer whose kind is not named `mtp`), `m` a multi-token-prediction
/// layer (kind `mtp`), `X*N` and `(...)*N` repetition, `,` and spaces ignored: "Et*3|(tt|)*29,m|L".
/// The layers per stage of `model` that `layout` states for `stages` stages, or nullopt with
/// `error` saying what does not match.
std::optional<std::vector<int32_t>> parse_megatron_layout(std::string_view layout, const Model& model, int32_t stages,
                                                          std::string& error);
/// The layout of `layers_per_stage` in that notation (runs as `t*N`, repeated stages as `(...|)*N`).
std::string megatron_layout(const Model& model, std::span<const int32_t> layers_per_stage);

}  // namespace schedc::ir
