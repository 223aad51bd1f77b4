// Import of PyTorch pipelining's CSV, compute-only or compute-and-comms (whose communication and
// FSDP actions are checked for form and dropped). The file fixes the orders; the problem's shape
// (ranks, stages, microbatches, direction, placement, backward mode) is inferred from it, and every
// disagreement with a given field or with the verifier is reported at the cell that shows it.

#include "frontend/torch_csv.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <string_view>

#include "ir/torch_token.h"
#include "ir/verify.h"

namespace schedc::frontend {
namespace {

using ir::Action;
using ir::ActionKind;
using ir::Field;

constexpr size_t kMaxErrors = 20;
// Highest stage and microbatch index a token may name before the problem limits reject it; keeps
// the placement tables small on hostile input.
constexpr int64_t kMaxStageIndex = int64_t{ir::kMaxRanks} * ir::kMaxStagesPerRank;

// One CSV field: its unquoted text and the byte offset of that text in the file.
struct Cell {
  std::string text;
  size_t offset = 0;
};

struct Row {
  std::vector<Cell> cells;
  size_t offset = 0;  // of the row's first byte
};

// One compute step of a row: a single action or an overlapped unit of two, with their locations.
struct Step {
  llvm::SmallVector<Action, 2> actions;
  llvm::SmallVector<SourceLoc, 2> locs;
};

class Importer {
 public:
  Importer(const SourceManager& sm, int32_t file, const ir::Problem& base, const ir::FieldLocs& given, Diagnostics& d)
      : sm_(sm), file_(file), base_(base), given_(given), d_(d), errors_at_start_(d.error_count()) {}

  // The schedule, or nullopt after reporting (at most kMaxErrors errors, then a note); the cell of
  // each action into `action_locs` when given.
  std::optional<ir::Schedule> run(std::vector<std::vector<SourceLoc>>* action_locs) {
    std::optional<ir::Schedule> s = import();
    if (dropped_ > 0 || too_many())
      d_.note(file_loc(), "too many errors, stopped after " + std::to_string(kMaxErrors) + "; fix these and run again");
    if (s && action_locs) *action_locs = std::move(locs_);
    return s;
  }

 private:
  std::optional<ir::Schedule> import() {
    if (!split_rows()) return std::nullopt;
    parse_cells();
    if (failed()) return std::nullopt;
    if (!infer_shape()) return std::nullopt;
    infer_direction_and_placement();
    if (failed()) return std::nullopt;
    infer_backward();
    if (failed()) return std::nullopt;
    for (const ir::ProblemError& e : ir::validate(p_)) error(e.kind, given_loc(e.field), e.message);
    if (failed()) return std::nullopt;
    if (placement_given_) check_given_placement();
    if (failed()) return std::nullopt;
    ir::Schedule s = build();
    report_verify(s);
    if (failed()) return std::nullopt;
    return s;
  }

  bool failed() const { return d_.error_count() != errors_at_start_; }
  bool too_many() const { return d_.error_count() - errors_at_start_ >= kMaxErrors; }
  SourceLoc loc(size_t offset) const { return sm_.loc_at(file_, offset); }
  SourceLoc file_loc() const { return SourceLoc{file_, 0, 0}; }
  bool is_given(ir::Field field) const { return given_.count(field) != 0; }

  void error(DiagKind kind, SourceLoc at, std::string message) {
    if (too_many()) {
      ++dropped_;
      return;
    }
    d_.error(kind, at, std::move(message));
  }

  // Where a given field was set when that is a place in a file; else the CSV file itself.
  SourceLoc given_loc(ir::Field field) const {
    auto it = given_.find(field);
    if (it != given_.end() && it->second.has_file()) return it->second;
    return file_loc();
  }

  // ---- CSV syntax: rows split at LF or CRLF, fields at commas, RFC 4180 quotes ----

  bool split_rows() {
    const std::string& text = sm_.text(file_);
    if (text.empty()) {
      error(DiagKind::BadCsv, file_loc(), "the file is empty, expected one row of actions per rank");
      return false;
    }
    size_t i = 0;
    while (i < text.size()) {
      Row row;
      row.offset = i;
      bool end_of_row = false;
      while (!end_of_row) {
        Cell cell;
        cell.offset = i;
        if (i < text.size() && text[i] == '"') {
          size_t open = i++;
          cell.offset = i;
          bool closed = false;
          while (i < text.size()) {
            if (text[i] != '"') {
              cell.text += text[i++];
              continue;
            }
            if (i + 1 < text.size() && text[i + 1] == '"') {
              cell.text += '"';
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          if (!closed) {
            error(DiagKind::BadCsv, loc(open), "quoted field without its closing `\"`");
            return false;
          }
          if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
            error(DiagKind::BadCsv, loc(i),
                  "unexpected " + describe_char(text[i]) + " after a closing `\"`, expected `,` or the end of the row");
            return false;
          }
        } else {
          while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') cell.text += text[i++];
        }
        // A blank cell is an idle step, which carries nothing: keep no record of it, so that a file
        // of empty cells takes no memory beyond its text.
        size_t ignored = cell.offset;
        if (!strip(cell.text, ignored).empty()) {
          if (++cells_ > static_cast<size_t>(ir::kMaxActions)) {
            error(DiagKind::OutOfRange, loc(cell.offset),
                  "the file has more than " + std::to_string(ir::kMaxActions) + " actions, the limit of a problem");
            return false;
          }
          row.cells.push_back(std::move(cell));
        }
        if (i >= text.size()) {
          end_of_row = true;
        } else if (text[i] == ',') {
          ++i;
        } else if (text[i] == '\n') {
          ++i;
          end_of_row = true;
        } else {  // '\r'
          if (i + 1 >= text.size() || text[i + 1] != '\n') {
            error(DiagKind::BadCsv, loc(i),
                  "a carriage return that does not end a line, expected LF or CRLF line ends");
            return false;
          }
          i += 2;
          end_of_row = true;
        }
      }
      // A blank line is a row without cells (a rank with no actions), as Python's csv reader has it.
      rows_.push_back(std::move(row));
      if (rows_.size() > static_cast<size_t>(ir::kMaxRanks)) {
        error(DiagKind::OutOfRange, loc(rows_.back().offset),
              "the file has more than " + std::to_string(ir::kMaxRanks) + " rows, the limit of ranks");
        return false;
      }
    }
    return true;
  }

  static std::string describe_char(char c) {
    if (std::isprint(static_cast<unsigned char>(c))) return backtick(std::string(1, c));
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    return buf;
  }

  // ---- tokens: {stage}{F|I|W|B}{mb} and (a;b)OVERLAP_F_B ----

  static bool is_space(char c) { return c == ' ' || c == '\t'; }

  // Strips blanks (PyTorch's loader strips them too); `offset` moves to the first kept byte.
  static std::string_view strip(std::string_view s, size_t& offset) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1), ++offset;
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
  }

  // A leading run of digits, taken off `s`: its value, saturated at 2^40 (far past every limit),
  // and into `written` the digits as the file writes them, without leading zeros, which is how a
  // message echoes a number too large to hold.
  static std::optional<int64_t> digits(std::string_view& s, std::string_view* written = nullptr) {
    size_t n = 0;
    while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
    if (n == 0) return std::nullopt;
    int64_t v = 0;
    for (size_t k = 0; k < n; ++k) v = std::min<int64_t>(v * 10 + (s[k] - '0'), int64_t{1} << 40);
    if (written) {
      size_t zeros = 0;
      while (zeros + 1 < n && s[zeros] == '0') ++zeros;
      *written = s.substr(zeros, n - zeros);
    }
    s.remove_prefix(n);
    return v;
  }

  static constexpr std::string_view kSyntaxHint =
      "expected {stage}{F|I|W|B}{microbatch} such as `0F3`, `(0F7;7B3)OVERLAP_F_B`, or an empty cell";

  // PyTorch's other action types: communication and FSDP steps of a `compute_comms` schedule.
  static constexpr std::array<std::string_view, 7> kOther = {"UNSHARD", "RESHARD", "REDUCE_GRAD", "SEND_F",
                                                             "RECV_F",  "SEND_B",  "RECV_B"};
  static bool is_transfer(std::string_view name) { return name.starts_with("SEND_") || name.starts_with("RECV_"); }

  // A compute_comms file's other actions: `{stage}SEND_F{mb}` (and RECV_F, SEND_B, RECV_B) and
  // `{stage}REDUCE_GRAD`, `UNSHARD`, `RESHARD` (microbatch optional, as in torch's grammar).
  // True when `t` is one: it is checked for form and then dropped, because the compute orders are
  // the schedule and schedc derives the communication itself when it lowers (docs/formats.md).
  bool skip_other_action(std::string_view t, size_t offset) {
    std::string_view rest = t, stage_text, mb_text;
    auto stage = digits(rest, &stage_text);
    if (!stage) return false;
    std::string_view name;
    for (std::string_view other : kOther)
      if (rest.starts_with(other)) name = other;
    if (name.empty()) return false;
    rest.remove_prefix(name.size());
    std::string shown(t);
    auto mb = digits(rest, &mb_text);
    if (!mb && is_transfer(name)) {
      error(DiagKind::BadToken, loc(offset),
            backtick(shown) + " has no microbatch, expected {stage}" + std::string(name) + "{microbatch} such as `1" +
                std::string(name) + "0`");
    } else if (!rest.empty()) {
      error(DiagKind::BadToken, loc(offset),
            "bad action " + backtick(shown) + ": unexpected " + backtick(rest) + " after the " +
                (mb ? "microbatch" : "action type"));
    } else if (*stage >= kMaxStageIndex) {
      error(DiagKind::OutOfRange, loc(offset),
            backtick(shown) + " names stage " + std::string(stage_text) + ", more than the limit of " +
                std::to_string(kMaxStageIndex) + " stages");
    } else if (mb && *mb >= ir::kMaxMicrobatches) {
      error(DiagKind::OutOfRange, loc(offset),
            backtick(shown) + " names microbatch " + std::string(mb_text) + ", more than the limit of " +
                std::to_string(ir::kMaxMicrobatches) + " microbatches");
    }
    return true;
  }

  // One action token; reports at `offset` and returns nullopt when it is not a compute action.
  std::optional<Action> parse_action(std::string_view t, size_t offset) {
    std::string shown(t);
    std::string_view rest = t, stage_text, mb_text;
    auto stage = digits(rest, &stage_text);
    if (!stage) {
      error(DiagKind::BadToken, loc(offset), "bad action " + backtick(shown) + ", " + std::string(kSyntaxHint));
      return std::nullopt;
    }
    // Reached only inside an overlapped unit: parse_cells takes a cell's own comm actions first.
    for (std::string_view other : kOther)
      if (rest.starts_with(other)) {
        error(DiagKind::Unsupported, loc(offset),
              backtick(shown) + " is a `" + std::string(other) +
                  "` action; an overlapped unit holds compute actions only (F, I, W, B)");
        return std::nullopt;
      }
    std::optional<ActionKind> kind = rest.empty() ? std::nullopt : ir::torch_action_kind(rest.front());
    if (!kind) {
      error(DiagKind::BadToken, loc(offset), "bad action " + backtick(shown) + ", " + std::string(kSyntaxHint));
      return std::nullopt;
    }
    rest.remove_prefix(1);
    auto mb = digits(rest, &mb_text);
    if (!mb) {
      error(DiagKind::BadToken, loc(offset), backtick(shown) + " has no microbatch, " + std::string(kSyntaxHint));
      return std::nullopt;
    }
    if (!rest.empty()) {
      error(DiagKind::BadToken, loc(offset),
            "bad action " + backtick(shown) + ": unexpected " + backtick(rest) + " after the microbatch, " +
                std::string(kSyntaxHint));
      return std::nullopt;
    }
    if (*stage >= kMaxStageIndex) {
      error(DiagKind::OutOfRange, loc(offset),
            backtick(shown) + " names stage " + std::string(stage_text) + ", more than the limit of " +
                std::to_string(kMaxStageIndex) + " stages");
      return std::nullopt;
    }
    if (*mb >= ir::kMaxMicrobatches) {
      error(DiagKind::OutOfRange, loc(offset),
            backtick(shown) + " names microbatch " + std::string(mb_text) + ", more than the limit of " +
                std::to_string(ir::kMaxMicrobatches) + " microbatches");
      return std::nullopt;
    }
    return Action{*kind, ir::MbId(static_cast<int32_t>(*mb)), ir::StageId(static_cast<int32_t>(*stage))};
  }

  std::optional<Step> parse_unit(std::string_view t, size_t offset) {
    std::string shown(t);
    size_t close = t.find(')');
    if (close == std::string_view::npos) {
      error(DiagKind::BadToken, loc(offset), "bad action " + backtick(shown) + ": `(` without its `)`");
      return std::nullopt;
    }
    std::string_view type = t.substr(close + 1);
    if (type != "OVERLAP_F_B") {
      error(DiagKind::BadToken, loc(offset + close + 1),
            "bad action group " + backtick(shown) + ": expected `OVERLAP_F_B` after `)`, got " +
                (type.empty() ? std::string("nothing") : backtick(type)));
      return std::nullopt;
    }
    Step step;
    std::string_view inner = t.substr(1, close - 1);
    size_t pos = 0;
    while (true) {
      size_t semi = inner.find(';', pos);
      std::string_view part = inner.substr(pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
      size_t part_offset = offset + 1 + pos;
      part = strip(part, part_offset);
      if (step.actions.size() == 2) {
        error(DiagKind::BadOverlap, loc(part_offset),
              "overlapped unit " + backtick(shown) +
                  " has more than two actions, expected one forward and one backward");
        return std::nullopt;
      }
      if (part.empty() || part.front() == '(') {
        error(DiagKind::BadToken, loc(part_offset),
              "overlapped unit " + backtick(shown) + " needs two actions, " + std::string(kSyntaxHint));
        return std::nullopt;
      }
      auto a = parse_action(part, part_offset);
      if (!a) return std::nullopt;
      step.actions.push_back(*a);
      step.locs.push_back(loc(part_offset));
      if (semi == std::string_view::npos) break;
      pos = semi + 1;
    }
    bool one_forward = step.actions.size() == 2 &&
                       (step.actions[0].kind == ActionKind::F) != (step.actions[1].kind == ActionKind::F);
    bool one_backward = step.actions.size() == 2 &&
                        (ir::is_backward(step.actions[0].kind) || ir::is_backward(step.actions[1].kind));
    if (!one_forward || !one_backward) {
      error(DiagKind::BadOverlap, loc(offset),
            "overlapped unit " + backtick(shown) + " must be one forward (`F`) and one backward (`I` or `B`)");
      return std::nullopt;
    }
    return step;
  }

  void parse_cells() {
    steps_.resize(rows_.size());
    for (size_t r = 0; r < rows_.size(); ++r)
      for (const Cell& cell : rows_[r].cells) {
        if (too_many()) return;
        size_t offset = cell.offset;
        std::string_view t = strip(cell.text, offset);
        if (t.empty()) continue;  // an idle step: the order alone carries the schedule
        std::optional<Step> step;
        if (t.front() == '(') {
          step = parse_unit(t, offset);
        } else if (skip_other_action(t, offset)) {
          continue;
        } else if (auto a = parse_action(t, offset)) {
          step = Step{{*a}, {loc(offset)}};
        }
        if (!step) continue;
        for (Action a : step->actions) {
          max_stage_ = std::max(max_stage_, a.stage.value);
          max_mb_ = std::max(max_mb_, a.mb.value);
        }
        steps_[r].push_back(std::move(*step));
      }
  }

  // Calls fn(row, action, loc) for every action in file order.
  template <class Fn> void for_each_action(Fn fn) const {
    for (size_t r = 0; r < steps_.size(); ++r)
      for (const Step& step : steps_[r])
        for (size_t k = 0; k < step.actions.size(); ++k) fn(static_cast<int32_t>(r), step.actions[k], step.locs[k]);
  }

  // ---- the problem's shape ----

  bool infer_shape() {
    const int32_t rows = static_cast<int32_t>(rows_.size());
    if (max_stage_ < 0) {
      error(DiagKind::BadCsv, file_loc(), "the file has no actions, expected one row of actions per rank");
      return false;
    }
    p_ = base_;
    p_.ranks = rows;
    if (is_given(Field::Ranks) && base_.ranks != rows) {
      error(DiagKind::BadValue, given_loc(Field::Ranks),
            "the file has " + std::to_string(rows) + " rows (one per rank), but `ranks` is given as " +
                std::to_string(base_.ranks));
      return false;
    }
    // A given count out of its range is reported as such, not as a disagreement with the file.
    bool in_range = true;
    auto check_range = [&](Field field, int32_t v, int32_t hi) {
      if (!is_given(field) || (v >= 1 && v <= hi)) return;
      error(DiagKind::OutOfRange, given_loc(field),
            "`" + std::string(ir::to_string(field)) + "` must be in 1.." + std::to_string(hi) + ", got `" +
                std::to_string(v) + "`");
      in_range = false;
    };
    check_range(Field::StagesPerRank, base_.stages_per_rank, ir::kMaxStagesPerRank);
    check_range(Field::Microbatches, base_.microbatches, ir::kMaxMicrobatches);
    if (!in_range) return false;
    const int32_t file_stages = max_stage_ + 1;
    if (is_given(Field::StagesPerRank)) {
      p_.stages_per_rank = base_.stages_per_rank;
      int64_t stages = int64_t{rows} * base_.stages_per_rank;
      if (stages != file_stages) {
        for_each_action([&](int32_t, Action a, SourceLoc at) {
          if (a.stage.value >= stages)
            error(DiagKind::NoSuchStage, at,
                  "stage " + std::to_string(a.stage.value) + " does not exist: `stages_per_rank` is given as " +
                      std::to_string(base_.stages_per_rank) + ", so the " + std::to_string(rows) +
                      " ranks hold stages 0.." + std::to_string(stages - 1));
        });
        if (!failed())
          error(DiagKind::BadValue, given_loc(Field::StagesPerRank),
                "the file names stages 0.." + std::to_string(file_stages - 1) + ", but `stages_per_rank` " +
                    std::to_string(base_.stages_per_rank) + " on " + std::to_string(rows) + " ranks means " +
                    std::to_string(stages) + " stages");
        return false;
      }
    } else {
      if (file_stages % rows != 0) {
        error(DiagKind::BadValue, file_loc(),
              "the file names " + std::to_string(file_stages) + " stages (0.." + std::to_string(file_stages - 1) +
                  "), which its " + std::to_string(rows) + " rows (ranks) cannot share evenly");
        note_empty_rows();
        return false;
      }
      p_.stages_per_rank = file_stages / rows;
    }
    const int32_t file_mbs = max_mb_ + 1;
    if (is_given(Field::Microbatches)) {
      p_.microbatches = base_.microbatches;
      if (base_.microbatches != file_mbs) {
        for_each_action([&](int32_t, Action a, SourceLoc at) {
          if (a.mb.value >= base_.microbatches)
            error(DiagKind::NoSuchMicrobatch, at,
                  "microbatch " + std::to_string(a.mb.value) + " does not exist: `microbatches` is given as " +
                      std::to_string(base_.microbatches));
        });
        if (!failed())
          error(DiagKind::BadValue, given_loc(Field::Microbatches),
                "the file names microbatches 0.." + std::to_string(file_mbs - 1) + ", but `microbatches` is given as " +
                    std::to_string(base_.microbatches));
        return false;
      }
    } else {
      p_.microbatches = file_mbs;
    }
    return true;
  }

  void note_empty_rows() {
    for (size_t r = 0; r < rows_.size(); ++r)
      if (steps_[r].empty()) {
        d_.note(loc(rows_[r].offset),
                "this row (rank " + std::to_string(r) + ") has no actions; every row is a rank, even an empty one");
        return;
      }
  }

  // ---- direction and placement: which row runs each (direction, stage) ----

  struct Seat {
    int32_t row = -1;
    SourceLoc at;
  };

  // The first row seen for each (direction, stage) when the file has `dirs` directions (split as
  // the spec states them, else evenly: ir::Problem::direction_of); later actions on another row
  // are conflicts.
  std::vector<std::vector<Seat>> seats(int32_t dirs, bool report) {
    const bool several = dirs > 1;
    ir::Problem split;
    split.microbatches = p_.microbatches;
    split.directions = dirs;
    if (dirs == p_.directions) split.direction_microbatches = p_.direction_microbatches;
    std::vector<std::vector<Seat>> seat(static_cast<size_t>(dirs),
                                        std::vector<Seat>(static_cast<size_t>(p_.num_stages())));
    for_each_action([&](int32_t row, Action a, SourceLoc at) {
      int32_t dir = split.direction_of(a.mb);
      Seat& st = seat[static_cast<size_t>(dir)][a.stage.index()];
      if (st.row < 0) {
        st = Seat{row, at};
        return;
      }
      if (st.row == row) return;
      conflicts_ = true;
      if (report)
        error(DiagKind::WrongRank, at,
              backtick(ir::torch_token(a)) + " is on rank " + std::to_string(row) + ", but stage " +
                  std::to_string(a.stage.value) + (several ? " (direction " + std::to_string(dir) + ")" : "") +
                  " is already on rank " + std::to_string(st.row) + " (at " + std::to_string(st.at.line) + ":" +
                  std::to_string(st.at.col) + "); a stage runs on one rank" +
                  (several ? " per direction" : " (two only in a bidirectional schedule, one per direction)"));
    });
    return seat;
  }

  void infer_direction_and_placement() {
    int32_t dirs = 1;
    if (is_given(Field::Direction)) {
      dirs = base_.directions;
    } else if (p_.microbatches % 2 == 0) {
      conflicts_ = false;
      seats(1, false);
      if (conflicts_) {
        conflicts_ = false;
        seats(2, false);
        if (!conflicts_) dirs = 2;
      }
    }
    p_.directions = dirs;
    if (dirs < 1 || dirs > ir::kMaxDirections || p_.microbatches % dirs != 0) return;  // validate() reports it
    placement_given_ = is_given(Field::Placement) || is_given(Field::StageToRank);
    if (placement_given_) return;  // checked against the file once the problem is valid
    conflicts_ = false;
    auto seat = seats(dirs, true);
    if (conflicts_) return;
    for (ir::PlacementKind kind : {ir::PlacementKind::Looped, ir::PlacementKind::VShape, ir::PlacementKind::Wave}) {
      if (kind == ir::PlacementKind::VShape && p_.stages_per_rank != 2) continue;
      if (kind == ir::PlacementKind::Wave && p_.stages_per_rank < 3) continue;  // with 2 it is the V shape
      ir::Problem candidate = p_;
      candidate.placement = kind;
      candidate.stage_to_rank.clear();
      if (fits(candidate, seat)) {
        p_.placement = kind;
        p_.stage_to_rank.clear();
        return;
      }
    }
    p_.placement = ir::PlacementKind::Custom;
    p_.stage_to_rank.assign(seat.size(), {});
    for (size_t d = 0; d < seat.size(); ++d)
      for (size_t s = 0; s < seat[d].size(); ++s) {
        if (seat[d][s].row < 0) {
          error(DiagKind::MissingAction, file_loc(),
                "stage " + std::to_string(s) + (seat.size() > 1 ? " (direction " + std::to_string(d) + ")" : "") +
                    " appears in no row, so its rank cannot be inferred (the placement is not looped, vshape or "
                    "wave)");
          continue;
        }
        p_.stage_to_rank[d].push_back(seat[d][s].row);
      }
  }

  // True when the candidate placement puts every seen (direction, stage) on the row it was seen on.
  static bool fits(const ir::Problem& candidate, const std::vector<std::vector<Seat>>& seat) {
    for (size_t d = 0; d < seat.size(); ++d)
      for (size_t s = 0; s < seat[d].size(); ++s)
        if (seat[d][s].row >= 0 &&
            candidate.rank_of(static_cast<int32_t>(d), ir::StageId(static_cast<int32_t>(s))).value != seat[d][s].row)
          return false;
    return true;
  }

  // One error per (direction, stage), at its first misplaced action: the rest say the same.
  void check_given_placement() {
    std::vector<char> reported(static_cast<size_t>(p_.num_directions() * p_.num_stages()), 0);
    for_each_action([&](int32_t row, Action a, SourceLoc at) {
      int32_t owner = p_.rank_of(a.mb, a.stage).value;
      char& seen = reported[static_cast<size_t>(p_.direction_of(a.mb) * p_.num_stages()) + a.stage.index()];
      if (owner == row || seen) return;
      seen = 1;
      std::string dir = p_.num_directions() > 1 ? " (direction " + std::to_string(p_.direction_of(a.mb)) + ")" : "";
      error(DiagKind::WrongRank, at,
            backtick(ir::torch_token(a)) + " is on rank " + std::to_string(row) + ", but placement `" +
                std::string(ir::to_string(p_.placement)) + "` puts stage " + std::to_string(a.stage.value) + dir +
                " on rank " + std::to_string(owner));
    });
  }

  // ---- backward mode: by the tokens used, or checked against the given one ----

  void infer_backward() {
    bool fused = false, split = false;
    for_each_action([&](int32_t, Action a, SourceLoc) {
      fused |= a.kind == ActionKind::BW;
      split |= a.kind == ActionKind::B || a.kind == ActionKind::W;
    });
    if (!is_given(Field::Backward)) {
      if (fused && split) p_.backward = ir::BackwardMode::Mixed;
      else if (fused) p_.backward = ir::BackwardMode::Fused;
      else if (split) p_.backward = ir::BackwardMode::Split;
      return;
    }
    p_.backward = base_.backward;
    for_each_action([&](int32_t, Action a, SourceLoc at) {
      if (a.kind == ActionKind::BW && p_.backward == ir::BackwardMode::Split)
        error(DiagKind::BackwardMode, at,
              backtick(ir::torch_token(a)) +
                  " is a full backward, but `backward` is given as `split` (only `I` and `W`)");
      if ((a.kind == ActionKind::B || a.kind == ActionKind::W) && p_.backward == ir::BackwardMode::Fused)
        error(DiagKind::BackwardMode, at,
              backtick(ir::torch_token(a)) + " is a split backward, but `backward` is given as `fused` (only `B`)");
    });
  }

  // ---- the schedule, verified with every issue shown at its cell ----

  ir::Schedule build() {
    ir::Schedule s;
    s.problem = p_;
    s.ranks.resize(steps_.size());
    s.overlap.resize(steps_.size());
    locs_.resize(steps_.size());
    for (size_t r = 0; r < steps_.size(); ++r)
      for (const Step& step : steps_[r]) {
        if (step.actions.size() == 2) s.overlap[r].push_back(static_cast<int32_t>(s.ranks[r].size()));
        for (size_t k = 0; k < step.actions.size(); ++k) {
          s.ranks[r].push_back(step.actions[k]);
          locs_[r].push_back(step.locs[k]);
        }
      }
    if (!s.has_overlap()) s.overlap.clear();
    return s;
  }

  void report_verify(const ir::Schedule& s) {
    for (const ir::VerifyIssue& issue : ir::verify(s)) {
      SourceLoc at = file_loc();
      if (issue.rank >= 0 && static_cast<size_t>(issue.rank) < rows_.size()) {
        size_t r = static_cast<size_t>(issue.rank);
        if (issue.position >= 0 && static_cast<size_t>(issue.position) < locs_[r].size())
          at = locs_[r][static_cast<size_t>(issue.position)];
        else at = loc(rows_[r].offset);
      }
      error(issue.kind, at, issue.message);
    }
  }

  const SourceManager& sm_;
  int32_t file_;
  const ir::Problem& base_;
  const ir::FieldLocs& given_;
  Diagnostics& d_;
  size_t errors_at_start_;

  size_t dropped_ = 0;  // errors past kMaxErrors
  size_t cells_ = 0;    // non-blank cells so far
  std::vector<Row> rows_;
  std::vector<std::vector<Step>> steps_;
  std::vector<std::vector<SourceLoc>> locs_;  // per rank, the location of each action of the order
  int32_t max_stage_ = -1, max_mb_ = -1;
  ir::Problem p_;
  bool placement_given_ = false;
  bool conflicts_ = false;
};

}  // namespace

std::optional<ir::Schedule> read_torch_csv(const SourceManager& sources, int32_t file, const ir::Problem& base,
                                           const ir::FieldLocs& given, Diagnostics& diags,
                                           std::vector<std::vector<SourceLoc>>* action_locs) {
  return Importer(sources, file, base, given, diags).run(action_locs);
}

}  // namespace schedc::frontend
