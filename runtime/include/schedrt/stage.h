#pragma once
// The stage interface: one virtual stage's piece of the model on one rank (one replica of it for
// bidirectional schedules), and the registry that finds a stage by name.
//
// A stage of your own is a class derived from Stage in your own source file, registered by name:
//
//   std::unique_ptr<schedrt::Stage> make_block(const schedrt::StageConfig& c, int32_t stage,
//                                              const schedrt::StageEnv& env);
//   SCHEDRT_REGISTER_STAGE(my_block, .description = "pre-norm transformer block",
//                          .has_reference = true, .make = make_block);
//
// and compiled into the executor (`schedc run SPEC --stage-source block.cpp --stage my_block`, or
// `schedrt_add_stage_sources(executor block.cpp)` in CMake). schedrt's own stages register the
// same way: `mlp` (real math, fp64 or fp32; on the cuda backend, cuBLAS), `synthetic` (holds the
// rank for each action's cost) and `noop` (does nothing: the executor's own overhead).
// docs/runtime.md, "Your own stage", is the guide; examples/stages/block.cpp a complete stage.
//
// The interface is versioned: SCHEDRT_STAGE_API_VERSION changes whenever a declaration here
// changes meaning or layout, and a stage compiled against another version is refused when it
// registers. Version 2 added StageConfig::layers_per_stage, embedding and head (the spec's
// `model` partition): StageConfig's layout changed, and a version-1 stage, which reads `layers`
// on every stage, would build another model than the spec's partition without a word.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "schedrt/options.h"  // Dtype
#include "schedrt/types.h"

/// The version of this header's interface; a stage registered with another one is refused.
#define SCHEDRT_STAGE_API_VERSION 3

namespace schedrt {

class Backend;

/// One virtual stage's piece of the model on one rank. The executor calls it from one thread per
/// rank, in the schedule's order; microbatch `mb` is in 0..microbatches-1, and a stage keeps what
/// it needs per microbatch (activations for B, what W needs) until the end of the step. Buffers
/// are `boundary_bytes()` long and live where the stage's StageMemory says (host or device).
class Stage {
 public:
  virtual ~Stage() = default;

  /// Bytes of one boundary tensor: the activation a forward passes on, and its gradient. Every
  /// stage of a model must give the same value (the buffers between stages have this size).
  virtual size_t boundary_bytes() const = 0;

  /// F: reads `in` (nullptr on stage 0: the stage makes the microbatch's input from the seed) and
  /// writes `out` (nullptr on the last stage, which computes the microbatch's loss instead).
  virtual void forward(int32_t mb, const void* in, void* out) = 0;
  /// B: reads `grad_out` (nullptr on the last stage: the loss gradient) and writes `grad_in`
  /// (nullptr on stage 0, where no one needs it); keeps what W needs.
  virtual void backward_input(int32_t mb, const void* grad_out, void* grad_in) = 0;
  /// W: the weight gradient of microbatch `mb`, from what B kept.
  virtual void backward_weight(int32_t mb) = 0;
  /// After the forward of a checkpointed (mb, stage): drop what the backward needs except the
  /// forward's input, which `recompute` rebuilds it from. The default keeps everything (correct,
  /// saves no memory).
  virtual void checkpoint(int32_t /*mb*/) {}
  /// R: rebuild what `checkpoint` dropped, from the kept input, before the backward; the same
  /// computation as the forward, so the gradients are bit for bit those without recomputation.
  virtual void recompute(int32_t /*mb*/) {}
  /// BW (fused backward): B then W; override when doing both at once is cheaper.
  virtual void backward(int32_t mb, const void* grad_out, void* grad_in);
  /// An overlapped F&B unit: this stage's forward and `other`'s backward `b` (B or BW), as one
  /// unit. The default runs one after the other; a stage may overlap them (streams) or, like the
  /// synthetic stage, take the unit's own cost.
  virtual void overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                          void* grad_in);

  /// The loss of microbatch `mb` (last stage, after its forward; else 0). The step's loss is the
  /// mean over microbatches, so the loss gradient of each microbatch is scaled by 1/microbatches.
  virtual double loss(int32_t /*mb*/) const { return 0; }

  /// Bytes of this stage's weight gradient (0 for stages without weights).
  virtual size_t gradient_bytes() const { return 0; }
  /// Writes to `out` the sum of the gradients of microbatches `mbs`, added in exactly that order
  /// (a left fold), so that the result does not depend on the order the schedule ran them in.
  virtual void reduce_gradients(const std::vector<int32_t>& /*mbs*/, void* /*out*/) const {}
  /// out = a + b, elementwise (the sum of two replicas' partial gradients, a from direction 0);
  /// the replica exchange of schedules with several directions sends gradient_bytes() of `out` as is.
  virtual void add_gradients(const void* /*a*/, const void* /*b*/, void* /*out*/) const {}
  /// A gradient buffer (host memory, gradient_bytes() long) as doubles, for --check.
  virtual std::vector<double> gradient_values(const void* /*grads*/) const { return {}; }
};

/// Everything a stage needs to know; filled from the runtime block, flags and the program. The
/// meaning of hidden, layers and batch is the stage's own (the mlp stage: Linear(h, h) x layers
/// on `batch` rows; a transformer block: model width, blocks per stage, tokens per microbatch).
/// A stage builds layers_of(stage) layers: the spec's `model` partition where it has one.
struct StageConfig {
  std::string stage = "mlp";  // the registered name
  int32_t hidden = 64;        // width h of Linear(h, h)
  int32_t layers = 2;         // layers per stage: the runtime block's `layers` (or --layers)
  int32_t batch = 8;          // rows per microbatch
  Dtype dtype = Dtype::F64;
  uint64_t seed = 1;
  double ms_per_unit = 10;  // synthetic: milliseconds per cost unit
  int32_t num_stages = 1;
  int32_t microbatches = 1;
  /// Synthetic: per-stage costs in the problem's time units; fb empty = F + B.
  std::vector<double> cost_f, cost_b, cost_w, cost_fb, cost_r;  // cost_r empty: a recomputation costs F
  /// The layers of each virtual stage (num_stages entries): the spec's `model { layers = N
  /// partition = ... }` as `schedc check` prints it, else `layers` on every stage (and always
  /// `layers` on every stage when --layers is given). Empty in a config made by hand.
  std::vector<int32_t> layers_per_stage;
  /// The spec's model has an embedding (`embedding { }`), run by stage 0, and an output head
  /// (`head { }`), run by the last stage; their costs are in cost_f etc. A stage may build them
  /// or, like examples/stages' block, stand in for them with its own input and loss.
  bool embedding = false;
  bool head = false;

  /// The layers virtual stage `stage` builds: layers_per_stage[stage], or `layers` when that is
  /// empty.
  int32_t layers_of(int32_t stage) const {
    return layers_per_stage.empty() ? layers : layers_per_stage[static_cast<size_t>(stage)];
  }
};

/// Where the pointers a stage is handed (boundary buffers, and its own tensors) live.
enum class StageMemory {
  Host,    // host memory: the threads and mpi backends
  Device,  // CUDA device memory: the cuda backend; work goes on StageEnv::stream
  None,    // touches no tensors (synthetic, noop): runs on every backend
};

std::string to_string(StageMemory m);

/// What the backend gives a stage when it makes one.
struct StageEnv {
  StageMemory memory = StageMemory::Host;
  /// The CUDA device ordinal and the rank's compute stream (a cudaStream_t) for device stages:
  /// enqueue every kernel and copy on it, never synchronise the device in F, B or W (the backend
  /// orders communication after the stream with events). -1 and nullptr on the CPU backends.
  int device = -1;
  void* stream = nullptr;
  /// The rank's backend: allocate()/deallocate() give memory of the right kind (its pool on the
  /// GPU). nullptr where no backend runs (the sequential reference of --check, unit tests): a host
  /// stage then allocates as it likes.
  Backend* backend = nullptr;
};

/// Makes virtual stage `stage` (0..num_stages-1) with `config`, in `env`. Throws schedrt::Error
/// for a configuration the stage does not support (the message reaches the user).
using StageFactory =
    std::function<std::unique_ptr<Stage>(const StageConfig& config, int32_t stage, const StageEnv& env)>;

/// One registered stage implementation. A name may have one Host and one Device implementation
/// (the mlp stage has both), or one None implementation.
struct StageInfo {
  // Every field has a default initializer, so that a designated initializer may leave any out
  // (GCC's -Wmissing-field-initializers accepts that).
  std::string name = {};         // what `--stage` and `runtime { stage = ... }` say
  std::string description = {};  // one line, for --list-stages
  /// The stage has weights and a loss, and is deterministic for a seed: --check can run it
  /// sequentially and compare. Needs reduce_gradients, add_gradients and gradient_values.
  bool has_reference = false;
  StageMemory memory = StageMemory::Host;
  StageFactory make = {};
  int api_version = SCHEDRT_STAGE_API_VERSION;  // the header the stage was compiled with
};

/// Adds `info` to the registry (safe during static initialisation, in any order). A second
/// implementation of a name for the same memory, a missing factory, a bad name or another API
/// version is recorded as an error, which the executor reports when it starts. Returns true.
bool register_stage(StageInfo info);
/// Every registered implementation: schedrt's own stages first (mlp, synthetic, noop), then the
/// others by name, Host before Device.
std::vector<StageInfo> registered_stages();
/// The errors register_stage recorded, in registration order (empty when all went well).
std::vector<std::string> registry_errors();
/// The implementation of stage `name` for `memory` (a None implementation serves both), or
/// nullptr.
const StageInfo* find_stage(std::string_view name, StageMemory memory);
/// The registered names, each once, in registered_stages() order.
std::vector<std::string> stage_names();

/// A new stage object for virtual stage `stage` (one replica), from the implementation of
/// `config.stage` for `env.memory`. Throws Error naming the registered stages when there is none.
std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage, const StageEnv& env);
/// The host implementation, with no backend (the sequential reference, tests).
std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage);

/// Whether `--check` can compare stage `name` with a sequential run of the same model (its host
/// implementation has_reference).
bool has_sequential_reference(std::string_view name);

}  // namespace schedrt

#define SCHEDRT_STAGE_CONCAT_(a, b) a##b
#define SCHEDRT_STAGE_CONCAT(a, b) SCHEDRT_STAGE_CONCAT_(a, b)

/// Registers a stage called NAME (an identifier) when the program starts; the rest are
/// StageInfo's fields after `name`, as designated initializers:
///   SCHEDRT_REGISTER_STAGE(my_block, .description = "...", .has_reference = true, .make = f);
/// Use it at namespace scope in a source file compiled into the executor itself (not into a
/// static library, whose unreferenced objects the linker drops); once per implementation.
#define SCHEDRT_REGISTER_STAGE(NAME, ...)                                                                              \
  [[maybe_unused]] static const bool SCHEDRT_STAGE_CONCAT(                                                             \
      schedrt_registered_stage_,                                                                                       \
      __COUNTER__) = ::schedrt::register_stage(::schedrt::StageInfo{.name = #NAME, __VA_ARGS__})
