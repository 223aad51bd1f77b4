#include "ir/json_provenance.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/json_line.h"

namespace schedc::ir {

using ojson = nlohmann::ordered_json;

namespace {

// A family parameter's number as the spec spelled it: integral values without a fraction.
ojson param_number(double v) {
  if (v == std::floor(v) && std::abs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}

// `key` of `j` into `out` when it is there with out's type; anything else is skipped.
template <class T> void read_member(const ojson& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if constexpr (std::is_same_v<T, std::string>) {
    if (it->is_string()) out = it->template get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (it->is_boolean()) out = it->template get<bool>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (it->is_number()) out = it->template get<double>();
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (it->is_number()) out = it->template get<double>();
  } else if constexpr (std::is_unsigned_v<T>) {
    if (it->is_number_unsigned()) out = it->template get<T>();
  } else {
    if (it->is_number_integer()) out = it->template get<T>();
  }
}

}  // namespace

// The key order is the format's (docs/formats.md, docs/solver.md).
ojson provenance_object(const Provenance& p) {
  ojson j;
  j["source"] = p.source;
  if (!p.family.empty()) j["family"] = p.family;
  if (!p.params.empty()) {
    ojson params = ojson::object();
    for (const Param& prm : p.params.items) {
      if (prm.is_number()) params[prm.key] = param_number(prm.number());
      else if (prm.is_string()) params[prm.key] = prm.string();
      else {
        ojson list = ojson::array();
        for (double x : prm.list()) list.push_back(param_number(x));
        params[prm.key] = list;
      }
    }
    j["params"] = params;
  }
  if (!p.solve) return j;
  const SolveRecord& r = *p.solve;
  j["status"] = r.status;
  if (r.objective) j["objective"] = json_number(*r.objective);
  j["lower_bound"] = json_number(r.lower_bound);
  j["gap"] = r.gap;
  j["bound"] = r.bound;
  j["incumbent"] = {{"name", r.incumbent}, {"value", json_number(r.incumbent_value)}};
  j["found_by"] = r.found_by;
  j["method"] = r.method;
  j["seconds"] = r.seconds ? ojson(*r.seconds) : ojson(nullptr);
  j["deterministic"] = r.deterministic;
  if (r.interrupted) j["interrupted"] = true;
  ojson z3;
  z3["probes"] = r.z3.probes;
  z3["literals"] = r.z3.literals;
  z3["clauses"] = r.z3.clauses;
  z3["cardinality"] = r.z3.cardinality;
  z3["pseudo_boolean"] = r.z3.pseudo_boolean;
  z3["lns"] = {{"windows", r.z3.lns_windows},
               {"models", r.z3.lns_models},
               {"improved", r.z3.lns_improved},
               {"largest_literals", r.z3.lns_largest_literals}};
  ojson stats = ojson::object();
  for (const auto& [key, value] : r.z3.statistics)
    stats[key] = std::holds_alternative<uint64_t>(value) ? ojson(std::get<uint64_t>(value))
                                                         : ojson(std::get<double>(value));
  z3["statistics"] = stats;
  if (!r.z3.error.empty()) z3["error"] = r.z3.error;
  j["z3"] = z3;
  ojson ls;
  ls["threads"] = r.local_search.threads;
  ls["evaluations"] = r.local_search.evaluations;
  ls["accepted"] = r.local_search.accepted;
  ls["restarts"] = r.local_search.restarts;
  ojson moves = ojson::object();
  for (const SolveRecord::LocalSearch::Move& m : r.local_search.moves)
    moves[m.name] = {{"tried", m.tried}, {"improved", m.improved}};
  ls["moves"] = moves;
  j["local_search"] = ls;
  return j;
}

std::optional<Provenance> read_provenance(const ojson& j) {
  if (!j.is_object()) return std::nullopt;
  Provenance p;
  read_member(j, "source", p.source);
  read_member(j, "family", p.family);
  if (auto it = j.find("params"); it != j.end() && it->is_object())
    for (const auto& [key, value] : it->items()) {
      Param prm;
      prm.key = key;
      if (value.is_number()) prm.value = value.get<double>();
      else if (value.is_string()) prm.value = value.get<std::string>();
      else if (value.is_array() &&
               std::all_of(value.begin(), value.end(), [](const ojson& x) { return x.is_number(); })) {
        std::vector<double> list;
        for (const ojson& x : value) list.push_back(x.get<double>());
        prm.value = std::move(list);
      } else continue;
      p.params.items.push_back(std::move(prm));
    }
  if (p.source != "solve" && !j.contains("status")) return p;
  SolveRecord& r = p.solve.emplace();
  read_member(j, "status", r.status);
  read_member(j, "objective", r.objective);
  read_member(j, "lower_bound", r.lower_bound);
  read_member(j, "gap", r.gap);
  read_member(j, "bound", r.bound);
  if (auto it = j.find("incumbent"); it != j.end() && it->is_object()) {
    read_member(*it, "name", r.incumbent);
    read_member(*it, "value", r.incumbent_value);
  }
  read_member(j, "found_by", r.found_by);
  read_member(j, "method", r.method);
  read_member(j, "seconds", r.seconds);
  read_member(j, "deterministic", r.deterministic);
  read_member(j, "interrupted", r.interrupted);
  if (auto it = j.find("z3"); it != j.end() && it->is_object()) {
    const ojson& z = *it;
    read_member(z, "probes", r.z3.probes);
    read_member(z, "literals", r.z3.literals);
    read_member(z, "clauses", r.z3.clauses);
    read_member(z, "cardinality", r.z3.cardinality);
    read_member(z, "pseudo_boolean", r.z3.pseudo_boolean);
    if (auto lns = z.find("lns"); lns != z.end() && lns->is_object()) {
      read_member(*lns, "windows", r.z3.lns_windows);
      read_member(*lns, "models", r.z3.lns_models);
      read_member(*lns, "improved", r.z3.lns_improved);
      read_member(*lns, "largest_literals", r.z3.lns_largest_literals);
    }
    if (auto st = z.find("statistics"); st != z.end() && st->is_object())
      for (const auto& [key, value] : st->items()) {
        if (value.is_number_unsigned()) r.z3.statistics.emplace_back(key, value.get<uint64_t>());
        else if (value.is_number()) r.z3.statistics.emplace_back(key, value.get<double>());
      }
    read_member(z, "error", r.z3.error);
  }
  if (auto it = j.find("local_search"); it != j.end() && it->is_object()) {
    const ojson& l = *it;
    read_member(l, "threads", r.local_search.threads);
    read_member(l, "evaluations", r.local_search.evaluations);
    read_member(l, "accepted", r.local_search.accepted);
    read_member(l, "restarts", r.local_search.restarts);
    if (auto mv = l.find("moves"); mv != l.end() && mv->is_object())
      for (const auto& [name, m] : mv->items()) {
        if (!m.is_object()) continue;
        SolveRecord::LocalSearch::Move move;
        move.name = name;
        read_member(m, "tried", move.tried);
        read_member(m, "improved", move.improved);
        r.local_search.moves.push_back(std::move(move));
      }
  }
  return p;
}

}  // namespace schedc::ir
