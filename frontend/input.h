#pragma once
// frontend::read_input: the one input phase. A `.sched` spec, a schedule JSON document and a
// PyTorch torch-csv file are all read into one Input: the problem, which fields the input gave,
// how to obtain the schedule (and the orders the input writes itself, as a schedule), and a source
// map that answers every "where in the input was this" question of the later phases.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "frontend/spec.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::frontend {

enum class InputFormat { Spec, ScheduleJson, TorchCsv };

/// The format of `file`, read from `path`: by the suffix `.json` or `.csv`; any other name (a
/// `.sched` spec, a copy saved as `.txt`, stdin) is schedule JSON when its content is one (its first
/// non-blank byte is `{`, which neither a spec nor a CSV row can start with), else a spec.
InputFormat input_format(const SourceManager& sources, int32_t file, std::string_view path);

/// Where things are in an input. Problem fields are located through Spec::given (the flags given
/// later change it); everything else is here.
class SourceMap {
 public:
  /// No input file (the flags stand for it): every answer is "nowhere".
  SourceMap() = default;
  SourceMap(const SourceManager& sources, int32_t file, InputFormat format, std::vector<std::vector<SourceLoc>> actions,
            std::vector<SourceLoc> ranks, SourceLoc schedule);

  /// The file as a whole (`file: error: ...`), or nowhere without one.
  SourceLoc file() const { return SourceLoc{file_, 0, 0}; }
  /// Where the input writes the action at `position` of `rank`'s order (a spec's token, a schedule
  /// JSON's string, a torch-csv cell); nowhere when it writes none there.
  SourceLoc action(int32_t rank, int32_t position) const;
  /// Where the input writes `rank`'s order as a whole (a spec's `rank N:`, a schedule JSON's array
  /// `/ranks/N`, a torch-csv row): for what the order lacks. Nowhere when it writes none.
  SourceLoc rank(int32_t rank) const;
  /// Where a spec says how to obtain the schedule (the value of `schedule = ...`); nowhere else.
  SourceLoc schedule() const { return schedule_; }
  /// The value at `pointer` (`/provenance/status`) of a schedule JSON input; the file for others.
  SourceLoc json(std::string_view pointer) const;

 private:
  const SourceManager* sources_ = nullptr;
  int32_t file_ = -1;
  InputFormat format_ = InputFormat::Spec;
  std::vector<std::vector<SourceLoc>> actions_;
  std::vector<SourceLoc> ranks_;
  SourceLoc schedule_;
};

/// One input, in whatever format it came.
struct Input {
  InputFormat format = InputFormat::Spec;
  int32_t file = -1;  // -1: no input file
  /// The problem, the fields given and where (every problem field for schedule JSON and torch-csv,
  /// at the file), units, how to obtain the schedule, expectations, the runtime block. Its
  /// schedule source holds no orders: they are in `schedule`.
  Spec spec;
  /// The orders the input writes, as a schedule of the input's own problem: a spec's `schedule =
  /// explicit {...}` (its provenance `explicit`), a schedule JSON document (with its provenance),
  /// a torch-csv file. nullopt when the input writes none.
  std::optional<ir::Schedule> schedule;
  SourceMap map;

  bool has_file() const { return file >= 0; }
  /// Whether `sched`'s orders are the ones the input writes, so that map.action() locates them.
  bool writes(const ir::Schedule& sched) const { return schedule && schedule->ranks == sched.ranks; }
};

/// Reads `file` (held in `sources`) as `format`. `command_line` is what the problem flags state (its
/// problem and given fields): a torch-csv file's shape is inferred and checked against it; the
/// other formats take the flags afterwards. Reports every error it finds and returns nullopt when
/// there was any.
std::optional<Input> read_input(const SourceManager& sources, int32_t file, InputFormat format,
                                const Spec& command_line, Diagnostics& diags);

}  // namespace schedc::frontend
