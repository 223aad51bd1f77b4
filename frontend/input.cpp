#include "frontend/input.h"

#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "support/json_locate.h"

namespace schedc::frontend {

namespace {

bool looks_like_json(std::string_view text) {
  size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && text[i] == '{';
}

// A schedule JSON document or a torch-csv file fixes every problem field, in its own units (flags
// in other units are converted to the finest).
void give_every_field(Input& in) {
  for (ir::Field f : ir::kProblemFields) in.spec.given.emplace(f, SourceLoc{in.file, 0, 0});
  const ir::Problem& p = in.spec.problem;
  for (ir::Field f : ir::kTimeFields)
    if (!p.time_unit.empty()) in.spec.units[f] = p.time_unit;
  for (ir::Field f : ir::kMemoryFields)
    if (!p.memory_unit.empty()) in.spec.units[f] = p.memory_unit;
}

// The document's orders are its schedule; they are located in one pass over the text.
std::vector<std::vector<SourceLoc>> json_actions(const SourceManager& sources, int32_t file) {
  std::vector<std::vector<SourceLoc>> out;
  for (const std::vector<size_t>& row : json_locate_elements(sources.text(file), "/ranks")) {
    out.emplace_back();
    for (size_t offset : row) out.back().push_back(sources.loc_at(file, offset));
  }
  return out;
}

}  // namespace

InputFormat input_format(const SourceManager& sources, int32_t file, std::string_view path) {
  if (path.ends_with(".csv")) return InputFormat::TorchCsv;
  if (path.ends_with(".json") || looks_like_json(sources.text(file))) return InputFormat::ScheduleJson;
  return InputFormat::Spec;
}

SourceMap::SourceMap(const SourceManager& sources, int32_t file, InputFormat format,
                     std::vector<std::vector<SourceLoc>> actions, std::vector<SourceLoc> ranks, SourceLoc schedule)
    : sources_(&sources), file_(file), format_(format), actions_(std::move(actions)), ranks_(std::move(ranks)),
      schedule_(schedule) {}

SourceLoc SourceMap::action(int32_t rank, int32_t position) const {
  if (rank < 0 || position < 0 || static_cast<size_t>(rank) >= actions_.size()) return {};
  const std::vector<SourceLoc>& row = actions_[static_cast<size_t>(rank)];
  return static_cast<size_t>(position) < row.size() ? row[static_cast<size_t>(position)] : SourceLoc{};
}

SourceLoc SourceMap::rank(int32_t rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= actions_.size()) return {};
  const size_t r = static_cast<size_t>(rank);
  switch (format_) {
    case InputFormat::Spec: return r < ranks_.size() ? ranks_[r] : SourceLoc{};
    // Located when asked (an error's worth of times), not in read_input's pass.
    case InputFormat::ScheduleJson: return ir::locate_json(*sources_, file_, "/ranks/" + std::to_string(rank));
    case InputFormat::TorchCsv: return actions_[r].empty() ? SourceLoc{} : actions_[r].front();
  }
  return {};
}

SourceLoc SourceMap::json(std::string_view pointer) const {
  if (format_ != InputFormat::ScheduleJson) return file();
  return ir::locate_json(*sources_, file_, pointer);
}

std::optional<Input> read_input(const SourceManager& sources, int32_t file, InputFormat format,
                                const Spec& command_line, Diagnostics& diags) {
  Input in;
  in.format = format;
  in.file = file;
  std::vector<std::vector<SourceLoc>> actions;
  std::vector<SourceLoc> ranks;
  switch (format) {
    case InputFormat::Spec: {
      auto spec = parse_spec(sources, file, diags);
      if (!spec) return std::nullopt;
      in.spec = std::move(*spec);
      ScheduleSource& src = in.spec.schedule;
      if (src.kind == SourceKind::Explicit) {
        ir::Schedule& s = in.schedule.emplace();
        s.problem = in.spec.problem;
        s.ranks = std::move(src.ranks);
        s.overlap = std::move(src.overlap);
        s.provenance = ir::Provenance::of("explicit");
        actions = std::move(src.token_locs);
        ranks = std::move(src.rank_locs);
        src.ranks.clear(), src.overlap.clear(), src.token_locs.clear(), src.rank_locs.clear();
      }
      break;
    }
    case InputFormat::ScheduleJson:
      in.schedule = ir::read_schedule_json(sources, file, diags);
      if (!in.schedule) return std::nullopt;
      actions = json_actions(sources, file);
      break;
    case InputFormat::TorchCsv:
      in.schedule = read_torch_csv(sources, file, command_line.problem, command_line.given, diags, &actions);
      if (!in.schedule) return std::nullopt;
      break;
  }
  if (format != InputFormat::Spec) {
    in.spec.file = file;
    in.spec.problem = in.schedule->problem;
    in.spec.layers_per_stage = in.schedule->layers_per_stage;  // a plan's partition, for the stages' layers
    in.spec.has_embedding = in.schedule->embedding;
    in.spec.has_head = in.schedule->head;
    in.spec.schedule.kind = SourceKind::Explicit;
    give_every_field(in);
  }
  in.map = SourceMap(sources, file, format, std::move(actions), std::move(ranks), in.spec.schedule.loc);
  return in;
}

}  // namespace schedc::frontend
