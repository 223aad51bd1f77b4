#include "codegen/runtime_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "schedrt/stage.h"
#include "support/numbers.h"

namespace schedc::codegen {

const std::vector<std::string>& runtime_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const schedrt::OptionSpec& o : schedrt::kRuntimeOptions) out.emplace_back(o.key);
    return out;
  }();
  return keys;
}

bool has_sequential_reference(const std::string& stage) { return schedrt::has_sequential_reference(stage); }

std::vector<std::string> reference_stages() {
  std::vector<std::string> names;
  for (const std::string& n : schedrt::stage_names())
    if (schedrt::has_sequential_reference(n)) names.push_back(n);
  return names;
}

bool is_builtin_stage(const std::string& stage) {
  return schedrt::find_stage(stage, schedrt::StageMemory::Host) ||
         schedrt::find_stage(stage, schedrt::StageMemory::Device);
}

namespace {

std::string describe(const ir::Param& p) {
  if (p.is_number()) return "the number " + backtick(format_number(p.number()));
  if (p.is_string()) return "the name " + backtick(p.string());
  return "a list";
}

// Edit distance, for "did you mean".
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Reads one key's value with its row of schedrt::kRuntimeOptions; the messages name the key and
// say what the row expects (schedrt::expected, schedrt::range_text).
class Reader {
 public:
  Reader(Diagnostics& diags) : diags_(diags) {}

  // The value, or nullopt after reporting.
  std::optional<schedrt::OptionValue> read(const schedrt::OptionSpec& o, const ir::Param& p) {
    using schedrt::OptionKind;
    switch (o.kind) {
      case OptionKind::Name: return name(o, p);
      case OptionKind::Stage: return stage(p);
      case OptionKind::Path: return path(p);
      case OptionKind::Integer:
      case OptionKind::Number: return number(o, p);
    }
    return std::nullopt;
  }

 private:
  std::optional<schedrt::OptionValue> name(const schedrt::OptionSpec& o, const ir::Param& p) {
    const std::string want = backtick(p.key) + " needs " + schedrt::expected(o, schedrt::Surface::Spec) + ", got ";
    if (!p.is_string()) return fail(DiagKind::WrongType, p, want + describe(p));
    if (!schedrt::parse_flag_value(o, p.string())) return fail(DiagKind::BadValue, p, want + backtick(p.string()));
    return schedrt::OptionValue{0, p.string()};
  }

  // A stage: schedrt's own (mlp, synthetic, noop) or one of the user's, compiled in with
  // --stage-source; which names exist is known only once the executor is built, so any name is
  // taken here and schedc build/run (or the executor) checks it.
  std::optional<schedrt::OptionValue> stage(const ir::Param& p) {
    if (p.is_string() && schedrt::is_stage_name(p.string())) return schedrt::OptionValue{0, p.string()};
    std::string own;
    for (const std::string& n : schedrt::stage_names()) own += (own.empty() ? "`" : ", `") + n + "`";
    return fail(p.is_string() ? DiagKind::BadValue : DiagKind::WrongType, p,
                backtick(p.key) + " needs a stage name (" + own +
                    ", or one of your own: letters, digits and `_`), got " + describe(p));
  }

  std::optional<schedrt::OptionValue> path(const ir::Param& p) {
    if (p.is_string() && !p.string().empty()) return schedrt::OptionValue{0, p.string()};
    return fail(DiagKind::WrongType, p, backtick(p.key) + " needs a file path, got " + describe(p));
  }

  std::optional<schedrt::OptionValue> number(const schedrt::OptionSpec& o, const ir::Param& p) {
    const bool integer = o.kind == schedrt::OptionKind::Integer;
    if (!p.is_number() || (integer && p.number() != std::floor(p.number())))
      return fail(DiagKind::WrongType, p,
                  backtick(p.key) + " needs " + (integer ? "an integer" : "a number") + ", got " + describe(p));
    const double v = p.number();
    if (schedrt::in_range(o, v, schedrt::Surface::Spec)) return schedrt::OptionValue{v, {}};
    std::string range = schedrt::range_text(o, schedrt::Surface::Spec);
    return fail(DiagKind::OutOfRange, p,
                backtick(p.key) + " must be " + (o.spec_lo_open ? range : "in " + range) + ", got " +
                    backtick(format_number(v)));
  }

  std::nullopt_t fail(DiagKind kind, const ir::Param& p, const std::string& message) {
    diags_.error(kind, p.value_loc, message);
    return std::nullopt;
  }

  Diagnostics& diags_;
};

}  // namespace

bool read_runtime_config(const ir::Params& block, RuntimeConfig& c, Diagnostics& diags) {
  size_t before = diags.error_count();
  Reader rd(diags);
  std::set<std::string> seen;
  for (const ir::Param& p : block.items) {
    if (!seen.insert(p.key).second) {
      diags.error(DiagKind::DuplicateKey, p.loc, "runtime key " + backtick(p.key) + " is given twice");
      continue;
    }
    const std::string& k = p.key;
    if (const schedrt::OptionSpec* o = schedrt::find_option(k)) {
      if (auto v = rd.read(*o, p)) schedrt::set_option(c, o->id, *v);
      continue;
    }
    std::string best;
    size_t best_d = 3;
    for (const std::string& known : runtime_keys())
      if (size_t d = distance(k, known); d < best_d) best = known, best_d = d;
    std::string list;
    for (const std::string& known : runtime_keys()) list += (list.empty() ? "" : ", ") + known;
    diags.error(DiagKind::UnknownKey, p.loc,
                "unknown runtime key " + backtick(k) + (best.empty() ? "" : " (did you mean " + backtick(best) + "?)") +
                    ", expected one of " + list);
  }
  return diags.error_count() == before;
}

}  // namespace schedc::codegen
