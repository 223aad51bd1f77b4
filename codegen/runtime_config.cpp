#include "codegen/runtime_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "schedrt/stage.h"
#include "support/numbers.h"

namespace schedc::codegen {

const std::vector<std::string>& runtime_keys() {
  static const std::vector<std::string> keys = {"backend", "stage", "dtype",  "hidden", "layers",
                                                "batch",   "seed",  "ms_per_unit", "timeout", "steps", "trace", "code"};
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
  return schedrt::find_stage(stage, schedrt::StageMemory::Host) || schedrt::find_stage(stage, schedrt::StageMemory::Device);
}

bool is_stage_name(const std::string& n) {
  if (n.empty() || n.size() > 64 || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
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

class Reader {
 public:
  Reader(Diagnostics& diags) : diags_(diags) {}

  void name(const ir::Param& p, std::string& out, std::initializer_list<const char*> allowed) {
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "`" : ", `") + std::string(a) + "`";
    if (!p.is_string()) {
      diags_.error(DiagKind::WrongType, p.value_loc, backtick(p.key) + " needs one of " + list + ", got " + describe(p));
      return;
    }
    for (const char* a : allowed)
      if (p.string() == a) {
        out = a;
        return;
      }
    diags_.error(DiagKind::BadValue, p.value_loc, backtick(p.key) + " needs one of " + list + ", got " + backtick(p.string()));
  }

  // A stage: schedrt's own (mlp, synthetic, noop) or one of the user's, compiled in with
  // --stage-source; which names exist is known only once the executor is built, so any name is
  // taken here and schedc build/run (or the executor) checks it.
  void stage(const ir::Param& p, std::string& out) {
    if (!p.is_string() || !is_stage_name(p.string())) {
      std::string own;
      for (const std::string& n : schedrt::stage_names()) own += (own.empty() ? "`" : ", `") + n + "`";
      diags_.error(p.is_string() ? DiagKind::BadValue : DiagKind::WrongType, p.value_loc,
                   backtick(p.key) + " needs a stage name (" + own + ", or one of your own: letters, digits and `_`), got " +
                       describe(p));
      return;
    }
    out = p.string();
  }

  void path(const ir::Param& p, std::string& out) {
    if (!p.is_string() || p.string().empty()) {
      diags_.error(DiagKind::WrongType, p.value_loc, backtick(p.key) + " needs a file path, got " + describe(p));
      return;
    }
    out = p.string();
  }

  template <class T>
  void integer(const ir::Param& p, T& out, int64_t lo, int64_t hi) {
    if (!p.is_number() || p.number() != std::floor(p.number())) {
      diags_.error(DiagKind::WrongType, p.value_loc, backtick(p.key) + " needs an integer, got " + describe(p));
      return;
    }
    double v = p.number();
    if (v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
      diags_.error(DiagKind::OutOfRange, p.value_loc,
                   backtick(p.key) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                       backtick(format_number(v)));
      return;
    }
    out = static_cast<T>(v);
  }

  void number(const ir::Param& p, double& out, double lo, double hi, bool lo_open) {
    if (!p.is_number()) {
      diags_.error(DiagKind::WrongType, p.value_loc, backtick(p.key) + " needs a number, got " + describe(p));
      return;
    }
    double v = p.number();
    if (!std::isfinite(v) || (lo_open ? v <= lo : v < lo) || v > hi) {
      auto bound = [](double b) { return std::to_string(static_cast<int64_t>(b)); };
      std::string range = lo_open ? "above " + bound(lo) + " and at most " + bound(hi) : "in " + bound(lo) + ".." + bound(hi);
      diags_.error(DiagKind::OutOfRange, p.value_loc,
                   backtick(p.key) + " must be " + range + ", got " + backtick(format_number(v)));
      return;
    }
    out = v;
  }

 private:
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
    if (k == "backend") rd.name(p, c.backend, {"threads", "mpi", "cuda"});
    else if (k == "stage") rd.stage(p, c.stage);
    else if (k == "dtype") rd.name(p, c.dtype, {"fp64", "fp32", "bf16"});
    else if (k == "hidden") rd.integer(p, c.hidden, 1, 4096);
    else if (k == "layers") rd.integer(p, c.layers, 1, 64);
    else if (k == "batch") rd.integer(p, c.batch, 1, 4096);
    else if (k == "seed") rd.integer(p, c.seed, 0, int64_t{1} << 53);
    else if (k == "ms_per_unit") rd.number(p, c.ms_per_unit, 0, 1e5, false);
    else if (k == "timeout") rd.number(p, c.timeout, 0, 1e6, true);
    else if (k == "steps") rd.integer(p, c.steps, 1, 1000000);
    else if (k == "trace") rd.path(p, c.trace);
    else if (k == "code") rd.name(p, c.code, {"auto", "straight", "compact"});
    else {
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
  }
  return diags.error_count() == before;
}

}  // namespace schedc::codegen
