#include "ir/json_io.h"
#include "ir/json_line.h"
#include "ir/json_provenance.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "support/json_locate.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::ir {

using ojson = nlohmann::ordered_json;

namespace {

ojson per_stage(const PerStage& v) {
  if (v.is_uniform()) return json_number(v.uniform);
  ojson a = ojson::array();
  for (double x : v.values) a.push_back(json_number(x));
  return a;
}

ojson problem_object(const Problem& p) {
  ojson j;
  j["ranks"] = p.ranks;
  j["stages_per_rank"] = p.stages_per_rank;
  j["microbatches"] = p.microbatches;
  // Up to two directions by name (every version); more by count (version 4).
  if (p.directions > 2) j["directions"] = p.directions;
  else j["direction"] = direction_name(p.directions);
  if (!p.direction_microbatches.empty()) j["direction_microbatches"] = p.direction_microbatches;
  j["placement"] = to_string(p.placement);
  if (p.placement == PlacementKind::Custom) j["stage_to_rank"] = p.stage_to_rank;
  j["backward"] = to_string(p.backward);
  ojson cost;
  cost["F"] = per_stage(p.cost.F);
  cost["B"] = per_stage(p.cost.B);
  cost["W"] = per_stage(p.cost.W);
  cost["comm"] = json_number(p.cost.comm);
  if (p.cost.FB) cost["FB"] = per_stage(*p.cost.FB);
  if (p.cost.action_overhead != 0) cost["action_overhead"] = json_number(p.cost.action_overhead);
  if (p.cost.message_overhead != 0) cost["message_overhead"] = json_number(p.cost.message_overhead);
  if (p.cost.R) cost["R"] = per_stage(*p.cost.R);
  j["cost"] = cost;
  ojson mem;
  mem["F"] = per_stage(p.memory.F);
  mem["B"] = per_stage(p.memory.B);
  mem["W"] = per_stage(p.memory.W);
  mem["cap"] = p.memory.cap ? per_stage(*p.memory.cap) : ojson(nullptr);
  if (p.has_static_memory()) mem["static"] = per_stage(p.memory.static_memory);
  if (p.memory.input) mem["input"] = per_stage(*p.memory.input);
  j["memory"] = mem;
  j["objective"] = to_string(p.objective);
  // Version 5: recomputation, only when the problem allows it.
  if (p.recompute != Recompute::Off) j["recompute"] = to_string(p.recompute);
  if (!p.time_unit.empty() || !p.memory_unit.empty()) {
    ojson units;
    if (!p.time_unit.empty()) units["time"] = p.time_unit;
    if (!p.memory_unit.empty()) units["memory"] = p.memory_unit;
    j["units"] = units;
  }
  return j;
}

ojson metrics_object(const Metrics& m) {
  ojson j;
  j["makespan"] = json_number(m.makespan);
  j["bubble_ratio"] = m.bubble_ratio;
  j["max_rank_span"] = json_number(m.max_rank_span);
  j["span_bubble_rate"] = m.span_bubble_rate;
  ojson peak = ojson::array(), busy = ojson::array();
  for (double v : m.peak_memory) peak.push_back(json_number(v));
  for (double v : m.busy) busy.push_back(json_number(v));
  j["peak_memory"] = peak;
  j["busy"] = busy;
  return j;
}

// ---- reading ----

class Reader {
 public:
  Reader(const SourceManager& sm, int32_t file, Diagnostics& d) : sm_(sm), file_(file), d_(d) {}

  // Errors past kMaxJsonErrors are counted, not reported (nor located: each lookup scans the text).
  void error(const std::string& pointer, DiagKind kind, std::string msg) {
    if (!count_error()) return;
    d_.error(kind, locate_json(sm_, file_, pointer), pointer.empty() ? msg : "at " + pointer + ": " + msg);
  }
  void error_at(size_t offset, DiagKind kind, std::string msg) {
    if (count_error()) d_.error(kind, sm_.loc_at(file_, offset), std::move(msg));
  }
  void error_in_file(DiagKind kind, std::string msg) {
    if (count_error()) d_.error(kind, SourceLoc{file_, 0, 0}, std::move(msg));
  }
  /// Errors found so far, reported or not.
  size_t found() const { return found_; }
  bool full() const { return found_ >= kMaxJsonErrors; }
  /// Adds the closing "too many errors" note once the cap stopped the reading.
  void finish() {
    if (full())
      d_.note(SourceLoc{file_, 0, 0},
              "too many errors, stopped after " + std::to_string(kMaxJsonErrors) + "; fix these and run again");
  }

  static std::string type_name(const ojson& j) {
    if (j.is_number_integer()) return "an integer";
    if (j.is_number()) return "a number";
    if (j.is_string()) return "a string";
    if (j.is_array()) return "an array";
    if (j.is_object()) return "an object";
    if (j.is_boolean()) return "a boolean";
    return "null";
  }

  bool expect_object(const ojson& j, const std::string& ptr, std::initializer_list<std::string_view> keys) {
    if (!j.is_object()) {
      error(ptr, DiagKind::WrongType, "expected an object, got " + type_name(j));
      return false;
    }
    bool ok = true;
    for (const auto& [k, v] : j.items()) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
      if (full()) return false;
      std::string allowed;
      for (auto key : keys) allowed += (allowed.empty() ? "" : ", ") + std::string(key);
      error(ptr + "/" + k, DiagKind::UnknownKey, "unknown key " + backtick(k) + ", expected one of " + allowed);
      ok = false;
    }
    return ok;
  }

  std::optional<int32_t> integer(const ojson& j, const std::string& ptr) {
    if (j.is_number() && is_int32(j.get<double>())) return static_cast<int32_t>(j.get<double>());
    error(ptr, DiagKind::WrongType, "expected an integer, got " + (j.is_number() ? backtick(j.dump()) : type_name(j)));
    return std::nullopt;
  }

  std::optional<double> real(const ojson& j, const std::string& ptr) {
    if (j.is_number()) return j.get<double>();
    error(ptr, DiagKind::WrongType, "expected a number, got " + type_name(j));
    return std::nullopt;
  }

  std::optional<std::string> string(const ojson& j, const std::string& ptr) {
    if (j.is_string()) return j.get<std::string>();
    error(ptr, DiagKind::WrongType, "expected a string, got " + type_name(j));
    return std::nullopt;
  }

  std::optional<PerStage> per_stage(const ojson& j, const std::string& ptr) {
    if (j.is_number()) return PerStage::of(j.get<double>());
    if (!j.is_array()) {
      error(ptr, DiagKind::WrongType, "expected a number or an array of numbers, got " + type_name(j));
      return std::nullopt;
    }
    PerStage v;
    for (size_t i = 0; i < j.size(); ++i) {
      auto x = real(j[i], ptr + "/" + std::to_string(i));
      if (!x) return std::nullopt;
      v.values.push_back(*x);
    }
    return v;
  }

  template <class T, class Parse>
  void enum_key(const ojson& obj, const char* key, const std::string& ptr, T& out, Parse parse, const char* allowed) {
    if (!obj.contains(key)) return;
    auto s = string(obj[key], ptr + "/" + key);
    if (!s) return;
    auto v = parse(*s);
    if (!v) {
      error(ptr + "/" + key, DiagKind::BadValue,
            "unknown " + std::string(key) + " " + backtick(*s) + ", expected " + allowed);
      return;
    }
    out = *v;
  }

  std::optional<Problem> problem(const ojson& j, const std::string& ptr) {
    size_t errors = found_;
    if (!expect_object(j, ptr,
                       {"ranks", "stages_per_rank", "microbatches", "direction", "directions", "direction_microbatches",
                        "placement", "stage_to_rank", "backward", "cost", "memory", "objective", "units", "recompute"}))
      return std::nullopt;
    Problem p;
    for (const char* key : {"ranks", "microbatches"})
      if (!j.contains(key)) error(ptr, DiagKind::MissingKey, "missing key " + backtick(key));
    auto int_key = [&](const char* key, int32_t& out) {
      if (!j.contains(key)) return;
      if (auto v = integer(j[key], ptr + "/" + key)) out = *v;
    };
    int_key("ranks", p.ranks);
    int_key("stages_per_rank", p.stages_per_rank);
    int_key("microbatches", p.microbatches);
    enum_key(j, "direction", ptr, p.directions, parse_direction, "`single` or `bidirectional`");
    if (j.contains("directions")) {
      if (j.contains("direction"))
        error(ptr + "/directions", DiagKind::BadValue, "`directions` and `direction` both given: give one");
      else if (version_ < 4)
        error(ptr + "/directions", DiagKind::BadFormatVersion,
              "`directions` needs version 4 of the format, the document says version " + std::to_string(version_));
      else int_key("directions", p.directions);
    }
    if (j.contains("direction_microbatches")) {
      const ojson& list = j["direction_microbatches"];
      const std::string lp = ptr + "/direction_microbatches";
      if (version_ < 4)
        error(lp, DiagKind::BadFormatVersion,
              "`direction_microbatches` needs version 4 of the format, the document says version " +
                  std::to_string(version_));
      else if (!list.is_array())
        error(lp, DiagKind::WrongType, "expected an array of microbatch counts, got " + type_name(list));
      else
        for (size_t i = 0; i < list.size() && i <= static_cast<size_t>(kMaxDirections) && !full(); ++i)
          if (auto v = integer(list[i], lp + "/" + std::to_string(i))) p.direction_microbatches.push_back(*v);
    }
    enum_key(j, "placement", ptr, p.placement, parse_placement, "`looped`, `vshape`, `wave` or `custom`");
    enum_key(j, "backward", ptr, p.backward, parse_backward, "`fused`, `split` or `mixed`");
    enum_key(j, "objective", ptr, p.objective, parse_objective, "`makespan` or `max-span`");
    if (j.contains("recompute")) {
      if (version_ < 5) version_error(ptr + "/recompute", "recompute", 5);
      else enum_key(j, "recompute", ptr, p.recompute, parse_recompute, "`off`, `allowed` or `all`");
    }
    if (j.contains("stage_to_rank")) {
      const ojson& s2r = j["stage_to_rank"];
      std::string sp = ptr + "/stage_to_rank";
      if (!s2r.is_array()) {
        error(sp, DiagKind::WrongType, "expected an array of rank lists, got " + type_name(s2r));
      } else {
        for (size_t d = 0; d < s2r.size(); ++d) {
          std::string dp = sp + "/" + std::to_string(d);
          if (!s2r[d].is_array()) {
            error(dp, DiagKind::WrongType, "expected an array of ranks, got " + type_name(s2r[d]));
            continue;
          }
          std::vector<int32_t> list;
          for (size_t i = 0; i < s2r[d].size() && !full(); ++i)
            if (auto v = integer(s2r[d][i], dp + "/" + std::to_string(i))) list.push_back(*v);
          p.stage_to_rank.push_back(std::move(list));
        }
      }
    }
    if (j.contains("cost") &&
        expect_object(j["cost"], ptr + "/cost",
                      {"F", "B", "W", "comm", "FB", "action_overhead", "message_overhead", "R"})) {
      const ojson& c = j["cost"];
      std::string cp = ptr + "/cost/";
      for (auto [key, slot] : {std::pair{"F", &p.cost.F}, {"B", &p.cost.B}, {"W", &p.cost.W}})
        if (c.contains(key))
          if (auto v = per_stage(c[key], cp + key)) *slot = *v;
      if (c.contains("comm"))
        if (auto v = real(c["comm"], cp + "comm")) p.cost.comm = *v;
      if (c.contains("FB") && !c["FB"].is_null())
        if (auto v = per_stage(c["FB"], cp + "FB")) p.cost.FB = *v;
      for (auto [key, slot] :
           {std::pair{"action_overhead", &p.cost.action_overhead}, {"message_overhead", &p.cost.message_overhead}}) {
        if (!c.contains(key)) continue;
        if (version_ < 3)
          error(cp + key, DiagKind::BadFormatVersion,
                "`" + std::string(key) + "` needs version 3 of the format, the document says version " +
                    std::to_string(version_));
        else if (auto v = real(c[key], cp + key)) *slot = *v;
      }
      if (c.contains("R")) {
        if (version_ < 5) version_error(cp + "R", "R", 5);
        else if (auto v = per_stage(c["R"], cp + "R")) p.cost.R = *v;
      }
    }
    if (j.contains("memory") &&
        expect_object(j["memory"], ptr + "/memory", {"F", "B", "W", "cap", "static", "input"})) {
      const ojson& m = j["memory"];
      std::string mp = ptr + "/memory/";
      for (auto [key, slot] : {std::pair{"F", &p.memory.F}, {"B", &p.memory.B}, {"W", &p.memory.W}})
        if (m.contains(key))
          if (auto v = per_stage(m[key], mp + key)) *slot = *v;
      if (m.contains("cap") && !m["cap"].is_null())
        if (auto v = per_stage(m["cap"], mp + "cap")) p.memory.cap = *v;
      if (m.contains("static")) {
        if (version_ < 2)
          error(mp + "static", DiagKind::BadFormatVersion,
                "`static` needs version 2 of the format, the document says version 1");
        else if (auto v = per_stage(m["static"], mp + "static")) p.memory.static_memory = *v;
      }
      if (m.contains("input")) {
        if (version_ < 5) version_error(mp + "input", "input", 5);
        else if (auto v = per_stage(m["input"], mp + "input")) p.memory.input = *v;
      }
    }
    if (j.contains("units")) units(j["units"], ptr + "/units", p);
    if (found_ != errors) return std::nullopt;
    for (const ProblemError& e : validate(p)) {
      std::string field(to_string(e.field));
      std::replace(field.begin(), field.end(), '.', '/');
      error(ptr + "/" + field, e.kind, e.message);
    }
    if (found_ != errors) return std::nullopt;
    return p;
  }

  void version_error(const std::string& ptr, const char* key, int needed) {
    error(ptr, DiagKind::BadFormatVersion,
          "`" + std::string(key) + "` needs version " + std::to_string(needed) +
              " of the format, the document says version " + std::to_string(version_));
  }

  // `"units": {"time": "ms", "memory": "GiB"}` (version 2): what the problem's numbers count.
  void units(const ojson& j, const std::string& ptr, Problem& p) {
    if (version_ < 2) {
      error(ptr, DiagKind::BadFormatVersion, "`units` needs version 2 of the format, the document says version 1");
      return;
    }
    if (!expect_object(j, ptr, {"time", "memory"})) return;
    for (auto [key, dim, slot] :
         {std::tuple{"time", Dimension::Time, &p.time_unit}, std::tuple{"memory", Dimension::Memory, &p.memory_unit}}) {
      if (!j.contains(key)) continue;
      auto s = string(j[key], ptr + "/" + key);
      if (!s) continue;
      const Unit* u = find_unit(*s);
      if (!u || u->dim != dim)
        error(ptr + "/" + key, DiagKind::BadUnit,
              "unknown " + std::string(key) + " unit " + backtick(*s) + ", expected one of " + unit_names(dim));
      else *slot = *s;
    }
  }

  int version_ = 1;

  bool ranks(const ojson& j, Schedule& s) {
    size_t errors = found_;
    const Problem& p = s.problem;
    if (!j.is_array()) {
      error("/ranks", DiagKind::WrongType, "expected an array with one action list per rank, got " + type_name(j));
      return false;
    }
    if (j.size() != static_cast<size_t>(p.ranks)) {
      error("/ranks", DiagKind::BadValue,
            "expected " + std::to_string(p.ranks) + " rank lists (problem/ranks), got " + std::to_string(j.size()));
      return false;
    }
    // Every action of the problem at most once: a longer list cannot verify, so stop before
    // reading millions of tokens of it.
    const int64_t most = int64_t{3} * p.microbatches * p.num_stages();
    for (size_t r = 0; r < j.size(); ++r) {
      std::string rp = "/ranks/" + std::to_string(r);
      if (!j[r].is_array()) {
        error(rp, DiagKind::WrongType, "expected an array of action tokens, got " + type_name(j[r]));
        continue;
      }
      if (static_cast<int64_t>(j[r].size()) > most) {
        error(rp, DiagKind::BadValue,
              "rank " + std::to_string(r) + " lists " + std::to_string(j[r].size()) +
                  " actions, more than the problem has (" + std::to_string(most) + ")");
        continue;
      }
      std::vector<Action> order;
      for (size_t i = 0; i < j[r].size(); ++i) {
        std::string ip = rp + "/" + std::to_string(i);
        if (full()) return false;
        auto t = string(j[r][i], ip);
        if (!t) continue;
        auto a = parse_action(*t);
        if (!a) {
          error(ip, DiagKind::BadToken,
                "bad action token " + backtick(*t) +
                    ", expected KIND<mb>.s<stage> such as `F3.s1` (KIND is F, B, W or BW)");
          continue;
        }
        if (a->mb.value >= p.microbatches) {
          error(ip, DiagKind::NoSuchMicrobatch,
                backtick(*t) + " names microbatch " + std::to_string(a->mb.value) +
                    ", the problem has microbatches 0.." + std::to_string(p.microbatches - 1));
          continue;
        }
        if (a->stage.value >= p.num_stages()) {
          error(ip, DiagKind::NoSuchStage,
                backtick(*t) + " names stage " + std::to_string(a->stage.value) + ", the problem has stages 0.." +
                    std::to_string(p.num_stages() - 1));
          continue;
        }
        order.push_back(*a);
      }
      s.ranks.push_back(std::move(order));
    }
    return found_ == errors;
  }

  // `"plan": {"layers_per_stage": [...]}` (version 6): one layer count (>= 0) per stage.
  bool plan(const ojson& j, Schedule& s) {
    if (version_ < 6) {
      version_error("/plan", "plan", 6);
      return false;
    }
    if (!expect_object(j, "/plan", {"layers_per_stage", "embedding", "head"})) return false;
    for (const char* key : {"embedding", "head"}) {
      if (!j.contains(key)) continue;
      if (!j[key].is_boolean()) {
        error(std::string("/plan/") + key, DiagKind::WrongType, "expected a boolean, got " + type_name(j[key]));
        return false;
      }
      (key[0] == 'e' ? s.embedding : s.head) = j[key].get<bool>();
    }
    if (!j.contains("layers_per_stage")) {
      error("/plan", DiagKind::MissingKey, "missing key `layers_per_stage`");
      return false;
    }
    const ojson& l = j["layers_per_stage"];
    const auto S = static_cast<size_t>(s.problem.num_stages());
    if (!l.is_array() || l.size() != S) {
      error("/plan/layers_per_stage", DiagKind::WrongType,
            "expected an array of one layer count per stage (" + std::to_string(S) + ")");
      return false;
    }
    for (size_t i = 0; i < l.size(); ++i) {
      auto n = integer(l[i], "/plan/layers_per_stage/" + std::to_string(i));
      if (!n) return false;
      if (*n < 0) {
        error("/plan/layers_per_stage/" + std::to_string(i), DiagKind::OutOfRange,
              "a stage runs 0 or more layers, got " + std::to_string(*n));
        return false;
      }
      s.layers_per_stage.push_back(*n);
    }
    return true;
  }

  bool overlap(const ojson& j, Schedule& s) {
    size_t errors = found_;
    if (!j.is_array() || j.size() != s.ranks.size()) {
      error("/overlap", DiagKind::WrongType,
            "expected an array with one list of [i, i+1] pairs per rank (" + std::to_string(s.ranks.size()) + ")");
      return false;
    }
    for (size_t r = 0; r < j.size(); ++r) {
      std::string rp = "/overlap/" + std::to_string(r);
      if (!j[r].is_array()) {
        error(rp, DiagKind::WrongType, "expected an array of [i, i+1] pairs, got " + type_name(j[r]));
        continue;
      }
      std::vector<int32_t> units;
      for (size_t k = 0; k < j[r].size() && !full(); ++k) {
        std::string kp = rp + "/" + std::to_string(k);
        const ojson& pair = j[r][k];
        if (!pair.is_array() || pair.size() != 2) {
          error(kp, DiagKind::WrongType, "expected a pair [i, i+1], got " + type_name(pair));
          continue;
        }
        auto a = integer(pair[0], kp + "/0"), b = integer(pair[1], kp + "/1");
        if (!a || !b) continue;
        int32_t n = static_cast<int32_t>(s.ranks[r].size());
        if (*b != *a + 1 || *a < 0 || *b >= n) {
          error(kp, DiagKind::BadOverlap,
                "overlapped unit must be two consecutive positions [i, i+1] of rank " + std::to_string(r) + "'s " +
                    std::to_string(n) + " actions, got [" + std::to_string(*a) + ", " + std::to_string(*b) + "]");
          continue;
        }
        if (!units.empty() && *a <= units.back() + 1) {
          error(kp, DiagKind::BadOverlap, "overlapped units must be sorted and disjoint");
          continue;
        }
        units.push_back(*a);
      }
      s.overlap.push_back(std::move(units));
    }
    return found_ == errors;
  }

 private:
  bool count_error() { return ++found_ <= kMaxJsonErrors; }

  const SourceManager& sm_;
  int32_t file_;
  Diagnostics& d_;
  size_t found_ = 0;
};

// Thrown from the parse callback once a document holds more values than any schedule can.
struct TooManyValues {};

// Watches the parse: finds duplicate keys, which nlohmann would silently collapse to the last
// one, and stops a document with more than kMaxJsonValues values before it fills memory.
struct ParseWatcher {
  std::vector<std::set<std::string>> open;
  std::vector<std::string> duplicates;  // the keys seen twice, in order
  size_t values = 0;

  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::ordered_json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start || event == E::array_start || event == E::value)
      if (++values > kMaxJsonValues) throw TooManyValues{};
    if (event == E::object_start) open.emplace_back();
    if (event == E::object_end && !open.empty()) open.pop_back();
    if (event == E::key && !open.empty()) {
      std::string key = parsed.get<std::string>();
      if (!open.back().insert(key).second && duplicates.size() <= kMaxJsonErrors) duplicates.push_back(key);
    }
    (void)depth;
    return true;
  }
};

// nlohmann's messages quote the token they stopped at, which can be the whole rest of the file.
std::string shorten(std::string detail) {
  constexpr size_t kMaxDetail = 160;
  if (detail.size() > kMaxDetail) detail = detail.substr(0, kMaxDetail) + "...";
  return detail;
}

}  // namespace

SourceLoc locate_json(const SourceManager& sources, int32_t file, std::string_view pointer) {
  return sources.loc_at(file, json_locate(sources.text(file), pointer));
}

std::string problem_json(const Problem& p) { return json_line(problem_object(p)); }
std::string metrics_json(const Metrics& m) { return json_line(metrics_object(m)); }
std::string provenance_json(const Provenance& p) { return json_line(provenance_object(p)); }

std::string write_schedule_json(const Schedule& s, const Metrics* metrics) {
  std::string out = "{\n";
  out += "  \"format\": \"schedc.schedule\",\n";
  // Version 2 adds the problem's `units` and `memory.static`, version 3 the cost's overheads,
  // version 4 `directions` (more than two) and `direction_microbatches`, version 5 recomputation
  // (`recompute`, `cost.R`, `memory.input` and R actions); a document is written in the lowest version
  // that holds it, so a problem without any of them is version 1, byte for byte what earlier releases wrote.
  // Version 6 adds the `plan` the solve chose (its layers per stage).
  const Problem& p = s.problem;
  int version = !s.layers_per_stage.empty()                                               ? 6
                : p.recompute != Recompute::Off                                           ? 5
                : p.directions > 2 || !p.direction_microbatches.empty()                   ? 4
                : p.cost.has_overheads()                                                  ? 3
                : !p.time_unit.empty() || !p.memory_unit.empty() || p.has_static_memory() ? 2
                                                                                          : 1;
  out += "  \"version\": " + std::to_string(version) + ",\n";
  out += "  \"problem\": " + problem_json(s.problem) + ",\n";
  if (!s.layers_per_stage.empty()) {
    out += "  \"plan\": {\"layers_per_stage\": [";
    for (size_t i = 0; i < s.layers_per_stage.size(); ++i)
      out += (i ? ", " : "") + std::to_string(s.layers_per_stage[i]);
    out += "]";
    if (s.embedding) out += ", \"embedding\": true";
    if (s.head) out += ", \"head\": true";
    out += "},\n";
  }
  out += "  \"ranks\": [";
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    out += r ? ",\n    [" : "\n    [";
    for (size_t i = 0; i < s.ranks[r].size(); ++i) {
      if (i) out += ", ";
      out += '"' + format_action(s.ranks[r][i]) + '"';
    }
    out += ']';
  }
  out += s.ranks.empty() ? "]" : "\n  ]";
  if (s.has_overlap()) {
    out += ",\n  \"overlap\": [";
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      out += r ? ",\n    [" : "\n    [";
      const auto& units = r < s.overlap.size() ? s.overlap[r] : std::vector<int32_t>{};
      for (size_t k = 0; k < units.size(); ++k)
        out += (k ? ", [" : "[") + std::to_string(units[k]) + ", " + std::to_string(units[k] + 1) + "]";
      out += ']';
    }
    out += "\n  ]";
  }
  if (metrics) out += ",\n  \"metrics\": " + metrics_json(*metrics);
  if (s.provenance) out += ",\n  \"provenance\": " + provenance_json(*s.provenance);
  out += "\n}\n";
  return out;
}

namespace {

std::optional<Schedule> read_document(const SourceManager& sources, int32_t file, Reader& rd) {
  const std::string& text = sources.text(file);
  if (size_t at = json_too_deep(text, kMaxJsonDepth); at != std::string::npos) {
    rd.error_at(at, DiagKind::TooLarge,
                "arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels (a schedule document needs 4)");
    return std::nullopt;
  }
  ParseWatcher watch;
  ojson doc;
  try {
    doc = ojson::parse(text, std::ref(watch), /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const TooManyValues&) {
    rd.error_in_file(DiagKind::TooLarge, "the document holds more than " + std::to_string(kMaxJsonValues) +
                                             " JSON values, more than a schedule of the largest problem (" +
                                             std::to_string(kMaxActions) + " actions) needs");
    return std::nullopt;
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    size_t colon = what.find(": ");
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    rd.error_at(offset, DiagKind::BadJson, "malformed JSON: " + shorten(detail));
    return std::nullopt;
  } catch (const nlohmann::json::exception& e) {
    // Also thrown while parsing, e.g. out_of_range.406 for a number too large for a double; it
    // carries no position, so point at the number it quotes.
    std::string what = e.what();
    size_t open = what.find('\''), close = what.rfind('\'');
    std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    size_t at = token.empty() ? std::string::npos : text.find(token);
    size_t space = what.find("] ");
    std::string detail = space == std::string::npos ? what : what.substr(space + 2);
    if (detail.size() > 80) detail = detail.substr(0, 80) + "...";
    rd.error_at(at == std::string::npos ? 0 : at, DiagKind::BadJson, "malformed JSON: " + detail);
    return std::nullopt;
  }
  if (!watch.duplicates.empty()) {
    for (const std::string& key : watch.duplicates) {
      // The callback sees no positions; the key's second spelling in the text is where it repeats.
      std::string needle = "\"" + key + "\"";
      size_t first = text.find(needle);
      size_t second = first == std::string::npos ? first : text.find(needle, first + 1);
      rd.error_at(second == std::string::npos ? 0 : second, DiagKind::DuplicateKey, "duplicate key " + backtick(key));
    }
    return std::nullopt;
  }
  if (!rd.expect_object(doc, "", {"format", "version", "problem", "plan", "ranks", "overlap", "metrics", "provenance"}))
    return std::nullopt;
  size_t errors = rd.found();
  for (const char* key : {"format", "version", "problem", "ranks"})
    if (!doc.contains(key)) rd.error("", DiagKind::MissingKey, "missing key " + backtick(key));
  if (rd.found() != errors) return std::nullopt;
  if (doc["format"] != "schedc.schedule") {
    rd.error("/format", DiagKind::BadFormatVersion,
             "expected format `schedc.schedule`, got " + backtick(doc["format"].dump()));
    return std::nullopt;
  }
  const ojson& v = doc["version"];
  int known = 0;
  for (int k = 1; k <= 6; ++k)
    if (v == k) known = k;
  if (known == 0) {
    rd.error("/version", DiagKind::BadFormatVersion,
             "unsupported version " + backtick(v.dump()) + ", expected `1`, `2`, `3`, `4`, `5` or `6`");
    return std::nullopt;
  }
  rd.version_ = known;
  auto problem = rd.problem(doc["problem"], "/problem");
  if (!problem) return std::nullopt;
  Schedule s;
  s.problem = std::move(*problem);
  if (!rd.ranks(doc["ranks"], s)) return std::nullopt;
  if (doc.contains("overlap") && !rd.overlap(doc["overlap"], s)) return std::nullopt;
  if (doc.contains("plan") && !rd.plan(doc["plan"], s)) return std::nullopt;
  if (doc.contains("provenance")) s.provenance = read_provenance(doc["provenance"]);
  return s;
}

}  // namespace

std::optional<Schedule> read_schedule_json(const SourceManager& sources, int32_t file, Diagnostics& diags) {
  Reader rd(sources, file, diags);
  std::optional<Schedule> s = read_document(sources, file, rd);
  rd.finish();
  return s;
}

}  // namespace schedc::ir
