#pragma once
// The fields an input or a flag can give, as one enum instead of name strings: what
// frontend::Spec::given records, what a ProblemError concerns, what a source map locates. Each
// field's name (`ranks`, `cost.F`, `memory.cap`) is its path in the `.sched` language and in
// messages, written once in field.cpp.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "support/source.h"

namespace schedc::ir {

enum class Field : uint8_t {
  // ir::Problem's fields
  Ranks,
  StagesPerRank,
  Microbatches,
  Direction,
  Placement,
  StageToRank,
  Backward,
  Objective,
  Recompute,
  CostF,
  CostB,
  CostW,
  CostComm,
  CostFB,
  CostActionOverhead,
  CostMessageOverhead,
  CostR,
  MemoryF,
  MemoryB,
  MemoryW,
  MemoryCap,
  MemoryStatic,
  MemoryInput,
  // what else a spec says about them
  MemoryBalanced,  // `memory { balanced = false }`
  Model,           // `model { ... }`, which derives the costs and memory
  Expect,          // `expect { ... }`, whose values are converted to the problem's units
};

/// The field's name: `ranks`, `stages_per_rank`, `cost.F`, `memory.cap`, `model`, `expect`.
std::string_view to_string(Field f);
/// The field a name stands for; nullopt for any other name (a `--memory.cap`-style flag, the
/// names of the Z3 assumptions that explain an infeasible cap).
std::optional<Field> parse_field(std::string_view name);

/// Every field of ir::Problem, in order: what a schedule JSON document or a torch-csv file fixes.
inline constexpr Field kProblemFields[] = {Field::Ranks,
                                           Field::StagesPerRank,
                                           Field::Microbatches,
                                           Field::Direction,
                                           Field::Placement,
                                           Field::StageToRank,
                                           Field::Backward,
                                           Field::Objective,
                                           Field::Recompute,
                                           Field::CostF,
                                           Field::CostB,
                                           Field::CostW,
                                           Field::CostComm,
                                           Field::CostFB,
                                           Field::CostActionOverhead,
                                           Field::CostMessageOverhead,
                                           Field::CostR,
                                           Field::MemoryF,
                                           Field::MemoryB,
                                           Field::MemoryW,
                                           Field::MemoryCap,
                                           Field::MemoryStatic,
                                           Field::MemoryInput};
/// The fields whose values are times (in Problem::time_unit) and memory (in memory_unit).
inline constexpr Field kTimeFields[] = {Field::CostF,
                                        Field::CostB,
                                        Field::CostW,
                                        Field::CostComm,
                                        Field::CostFB,
                                        Field::CostActionOverhead,
                                        Field::CostMessageOverhead,
                                        Field::CostR};
inline constexpr Field kMemoryFields[] = {Field::MemoryF,   Field::MemoryB,      Field::MemoryW,
                                          Field::MemoryCap, Field::MemoryStatic, Field::MemoryInput};

/// Where each given field was given: a place in a file, or no location for a command-line flag.
using FieldLocs = std::map<Field, SourceLoc>;
/// The unit each cost or memory field was written in (`ms`), for those written with one.
using FieldUnits = std::map<Field, std::string>;

}  // namespace schedc::ir
