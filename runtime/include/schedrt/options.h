#pragma once
// The runtime options, once: the spec's `runtime { ... }` block (codegen/runtime_config.cpp), the
// flags of `schedc emit/build/run/profile` (tools/schedc/runtime_flags.cpp) and the generated
// executor's own flags (runtime/src/command_line.cpp) are all made from kRuntimeOptions below:
// name, type, default (RuntimeSettings' initializers), range or allowed values, help, and how
// schedc hands the option on to the executor. Adding an option is a row here, a field in
// RuntimeSettings and a case in set_option/get_option; tests/unit/options checks that all three
// surfaces accept and refuse the same values.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace schedrt {

/// How the executor runs its ranks.
enum class BackendKind { Threads, Mpi, Cuda };
/// The stages' precision. bf16 (storage in bfloat16, accumulation in fp32) exists only on the cuda
/// backend's stages (check_combination).
enum class Dtype { F64, F32, BF16 };
/// The generated code's form: straight-line calls per rank, compact op tables (fast to compile),
/// or compact above a size (codegen::kCompactAboveOps).
enum class CodeForm { Auto, Straight, Compact };

inline constexpr std::string_view kBackendNames[] = {"threads", "mpi", "cuda"};
inline constexpr std::string_view kBackendEnumerators[] = {"schedrt::BackendKind::Threads", "schedrt::BackendKind::Mpi",
                                                           "schedrt::BackendKind::Cuda"};
inline constexpr std::string_view kDtypeNames[] = {"fp64", "fp32", "bf16"};
inline constexpr std::string_view kDtypeEnumerators[] = {"schedrt::Dtype::F64", "schedrt::Dtype::F32",
                                                         "schedrt::Dtype::BF16"};
inline constexpr std::string_view kCodeNames[] = {"auto", "straight", "compact"};
inline constexpr std::string_view kCodeEnumerators[] = {"schedrt::CodeForm::Auto", "schedrt::CodeForm::Straight",
                                                        "schedrt::CodeForm::Compact"};

std::string to_string(BackendKind b);
std::string to_string(Dtype d);
std::string to_string(CodeForm c);

/// The values of the runtime options; the initializers are the defaults everywhere (the spec's
/// runtime block starts from them, and so does an executor without one).
struct RuntimeSettings {
  BackendKind backend = BackendKind::Threads;
  std::string stage = "mlp";  // a registered stage (schedrt/stage.h): mlp, synthetic, noop or the user's
  Dtype dtype = Dtype::F64;
  int32_t hidden = 64;  // mlp: Linear(hidden, hidden)
  int32_t layers = 2;   // layers per stage, on every stage
  /// Not an option: the spec's `model` partition, the layers of each stage (empty: `layers` on
  /// every stage). Setting `layers` empties it.
  std::vector<int32_t> layers_per_stage;
  int32_t batch = 8;  // mlp: rows per microbatch
  uint64_t seed = 1;
  double ms_per_unit = 10;  // synthetic: milliseconds per cost unit
  double timeout = 60;      // watchdog, seconds
  int32_t steps = 1;
  std::string trace;  // write the measured timeline here ("": none)
  CodeForm code = CodeForm::Auto;
};

enum class OptionId { Backend, Stage, Dtype, Hidden, Layers, Batch, Seed, MsPerUnit, Timeout, Steps, Trace, Code };

enum class OptionKind {
  Name,     // one of `names`
  Stage,    // a stage name: letters, digits and `_` (is_stage_name); registered ones only where known
  Integer,  // an integer in lo..hi
  Number,   // a finite number in lo..hi
  Path,     // a file path, not empty
};

/// How `schedc run/profile` hands an option to the executor, whose defaults are the runtime block.
enum class ToExecutor {
  Always,     // `--flag VALUE` with the value in effect
  WhenGiven,  // `--flag VALUE` when given on schedc's command line (else the compiled-in default)
  WhenSet,    // `--flag VALUE` when not empty (it is not compiled in)
  Never,      // schedc's own (code generation); the executor has no such flag
};

/// One runtime option. The flags' range is lo..hi; the runtime block's is the same except where
/// `spec_lo` says otherwise (see timeout).
struct OptionSpec {
  OptionId id;
  std::string_view key;   // in the runtime block
  std::string_view flag;  // of schedc and of the executor
  OptionKind kind;
  std::string_view help;
  std::string_view type_name;  // in --help
  ToExecutor to_executor = ToExecutor::WhenGiven;
  std::span<const std::string_view> names = {};        // Name: the values, in the enum's order
  std::span<const std::string_view> enumerators = {};  // Name: the C++ enumerators, for generated code
  double lo = 0, hi = 0;
  /// The runtime block's lower bound where it differs from the flags' (timeout: above 0 in the
  /// spec, 0.001 on command lines, as both have been documented and tested).
  std::optional<double> spec_lo_open = std::nullopt;
};

inline constexpr OptionSpec kRuntimeOptions[] = {
    {.id = OptionId::Backend,
     .key = "backend",
     .flag = "--backend",
     .kind = OptionKind::Name,
     .help = "threads | mpi | cuda: one thread per rank, one MPI process per rank (mpirun), or CUDA streams + NCCL",
     .type_name = "NAME",
     .to_executor = ToExecutor::Always,
     .names = kBackendNames,
     .enumerators = kBackendEnumerators},
    {.id = OptionId::Stage,
     .key = "stage",
     .flag = "--stage",
     .kind = OptionKind::Stage,
     .help =
         "a registered stage: mlp | synthetic | noop (real math, the cost model's durations, or nothing), or one of "
         "your own (--stage-source; an executor's --list-stages)",
     .type_name = "NAME"},
    {.id = OptionId::Dtype,
     .key = "dtype",
     .flag = "--dtype",
     .kind = OptionKind::Name,
     .help = "fp64 | fp32 | bf16: mlp precision (bf16: cuda only)",
     .type_name = "NAME",
     .names = kDtypeNames,
     .enumerators = kDtypeEnumerators},
    {.id = OptionId::Hidden,
     .key = "hidden",
     .flag = "--hidden",
     .kind = OptionKind::Integer,
     .help = "mlp width h of Linear(h, h)",
     .type_name = "N",
     .lo = 1,
     .hi = 4096},
    {.id = OptionId::Layers,
     .key = "layers",
     .flag = "--layers",
     .kind = OptionKind::Integer,
     .help = "layers on every stage (instead of the spec's model partition)",
     .type_name = "N",
     .lo = 1,
     .hi = 64},
    {.id = OptionId::Batch,
     .key = "batch",
     .flag = "--batch",
     .kind = OptionKind::Integer,
     .help = "mlp rows per microbatch",
     .type_name = "N",
     .lo = 1,
     .hi = 4096},
    {.id = OptionId::Seed,
     .key = "seed",
     .flag = "--seed",
     .kind = OptionKind::Integer,
     .help = "weights, inputs and targets",
     .type_name = "N",
     .lo = 0,
     .hi = 9007199254740992.0 /* 2^53 */},
    {.id = OptionId::MsPerUnit,
     .key = "ms_per_unit",
     .flag = "--ms-per-unit",
     .kind = OptionKind::Number,
     .help = "synthetic: milliseconds per cost unit",
     .type_name = "X",
     .lo = 0,
     .hi = 1e5},
    {.id = OptionId::Timeout,
     .key = "timeout",
     .flag = "--timeout",
     .kind = OptionKind::Number,
     .help = "watchdog: a wait longer than this many seconds fails with a report",
     .type_name = "S",
     .lo = 0.001,
     .hi = 1e6,
     .spec_lo_open = 0},
    {.id = OptionId::Steps,
     .key = "steps",
     .flag = "--steps",
     .kind = OptionKind::Integer,
     .help = "steps to run (the last one is reported and traced)",
     .type_name = "N",
     .lo = 1,
     .hi = 1000000},
    {.id = OptionId::Trace,
     .key = "trace",
     .flag = "--trace",
     .kind = OptionKind::Path,
     .help = "write the measured timeline (Perfetto / Chrome trace JSON) to this file",
     .type_name = "FILE",
     .to_executor = ToExecutor::WhenSet},
    {.id = OptionId::Code,
     .key = "code",
     .flag = "--code",
     .kind = OptionKind::Name,
     .help = "generated code: auto | straight (calls per rank) | compact (op tables; fast to compile)",
     .type_name = "NAME",
     .to_executor = ToExecutor::Never,
     .names = kCodeNames,
     .enumerators = kCodeEnumerators},
};

inline constexpr size_t kOptionCount = std::size(kRuntimeOptions);

/// The row of `id`, and the row with runtime-block key `key` (nullptr: none).
const OptionSpec& option(OptionId id);
const OptionSpec* find_option(std::string_view key);

/// Where a value comes from: the runtime block or a command line (schedc's or the executor's).
enum class Surface { Spec, Flag };

/// The range as messages show it: "1..4096", "0.001..1000000", "above 0 and at most 1000000".
std::string range_text(const OptionSpec& o, Surface s);
/// What a value of `o` must be, for messages: "one of `fp64`, `fp32`, `bf16`", "an integer in
/// 1..4096", "a number in 0..100000", "a file path", "a stage name (letters, digits and `_`)".
std::string expected(const OptionSpec& o, Surface s);
/// The help line of `o`'s flag: its help, and its range for numbers ("mlp rows per microbatch;
/// 1..4096").
std::string help_text(const OptionSpec& o);
/// Whether `v` is in the option's range for `s` (Integer: also whole).
bool in_range(const OptionSpec& o, double v, Surface s);
/// Whether `name` can name a stage: letters, digits and `_`, not starting with a digit, at most 64.
bool is_stage_name(std::string_view name);

/// A value of an option: the number of Integer and Number options, the text of the others.
struct OptionValue {
  double number = 0;
  std::string text;
};

/// A command-line value of `o` (schedc's flags and the executor's alike): nullopt when it is not
/// `expected(o, Surface::Flag)`.
std::optional<OptionValue> parse_flag_value(const OptionSpec& o, std::string_view text);
/// Stores a value already checked (parse_flag_value, or the runtime block's reader).
void set_option(RuntimeSettings& s, OptionId id, const OptionValue& v);
/// The value in effect, as a flag's text (numbers exact: "0.001", "9007199254740992").
std::string option_text(const RuntimeSettings& s, OptionId id);
/// A Name option's value as its C++ enumerator ("schedrt::Dtype::F32"), for generated code.
std::string enumerator(const RuntimeSettings& s, OptionId id);

/// The rules between options, each written once: "" when `s` is a combination that runs, else
/// why not (dtype bf16 off the cuda backend).
std::string check_combination(const RuntimeSettings& s);

/// The executor's arguments for settings `s` (the runtime block with schedc's flags over it):
/// each option as its row's to_executor says; `given[i]`: option i was on schedc's command line.
std::vector<std::string> executor_arguments(const RuntimeSettings& s, std::span<const bool> given);

}  // namespace schedrt
