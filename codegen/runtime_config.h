#pragma once
// The spec's `runtime { ... }` block: the settings a generated executor starts with (flags of
// `schedc emit/build/run` and of the executor override them).

#include <optional>
#include <string>
#include <vector>

#include "ir/params.h"
#include "support/diagnostics.h"

namespace schedc::codegen {

struct RuntimeConfig {
  std::string backend = "threads";  // threads | mpi | cuda
  std::string stage = "mlp";        // mlp | synthetic | noop | a stage compiled in (--stage-source)
  std::string dtype = "fp64";       // fp64 | fp32 | bf16 (cuda only)
  int32_t hidden = 64;              // mlp: Linear(hidden, hidden)
  int32_t layers = 2;               // layers per stage, on every stage
  /// Not from the runtime block but from the spec's `model`: the layers of each stage (empty
  /// without a model, or when `--layers` replaces them), and whether the model has an embedding
  /// and a head. The executor hands them to its stages (schedrt::StageConfig).
  std::vector<int32_t> layers_per_stage;
  bool embedding = false;
  bool head = false;
  int32_t batch = 8;                // mlp: rows per microbatch
  int64_t seed = 1;
  double ms_per_unit = 10;          // synthetic: milliseconds per cost unit
  double timeout = 60;              // watchdog, seconds
  int32_t steps = 1;
  std::string trace;                // `schedc run`: write the measured timeline here
  /// The generated code's form: straight-line calls per rank, compact op tables run by the
  /// interpreter (fast to compile), or auto: compact above kCompactAboveOps ops in all.
  std::string code = "auto";        // auto | straight | compact
};

/// `code = auto` emits compact tables above this many ops (all ranks together).
inline constexpr int64_t kCompactAboveOps = 100000;

/// Whether `--check` has a sequential run of the same model to compare stage `stage` with
/// (schedrt::has_sequential_reference decides), and the stages that have one, for messages.
bool has_sequential_reference(const std::string& stage);
std::vector<std::string> reference_stages();
/// Whether `stage` is one of schedrt's own stages (registered in schedrt itself, so in every
/// executor); other names need their stage's source compiled in.
bool is_builtin_stage(const std::string& stage);
/// Whether `name` can name a stage: letters, digits and `_`, not starting with a digit.
bool is_stage_name(const std::string& name);

/// The keys of the runtime block, in documentation order.
const std::vector<std::string>& runtime_keys();

/// Reads the runtime block onto `config`: unknown keys, wrong types, values out of range and
/// duplicates are reported at their location. Returns false after reporting.
bool read_runtime_config(const ir::Params& block, RuntimeConfig& config, Diagnostics& diags);

}  // namespace schedc::codegen
