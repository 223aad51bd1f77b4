#pragma once
// The spec's `runtime { ... }` block: the settings a generated executor starts with (flags of
// `schedc emit/build/run` and of the executor override them).

#include <optional>
#include <string>
#include <vector>

#include "ir/params.h"
#include "schedrt/options.h"
#include "support/diagnostics.h"

namespace schedc::codegen {

/// The runtime options (schedrt/options.h has them, their defaults and ranges) as the runtime
/// block and schedc's flags set them, and what the executor also needs from the spec's `model`.
struct RuntimeConfig : schedrt::RuntimeSettings {
  /// From the spec's `model`, with layers_per_stage (empty without a model, or when `--layers`
  /// replaces it): whether the model has an embedding and a head (schedrt::StageConfig).
  bool embedding = false;
  bool head = false;
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
/// The keys of the runtime block, in documentation order (schedrt::kRuntimeOptions' order).
const std::vector<std::string>& runtime_keys();

/// Reads the runtime block onto `config`: unknown keys, wrong types, values out of range and
/// duplicates are reported at their location. Returns false after reporting.
bool read_runtime_config(const ir::Params& block, RuntimeConfig& config, Diagnostics& diags);

}  // namespace schedc::codegen
