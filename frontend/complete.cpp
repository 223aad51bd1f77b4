// frontend::complete_problem: units, the memory defaults that follow memory.F, and the balance
// check, once the file and the command line have both given their values.

#include <cmath>
#include <optional>

#include "frontend/spec.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::frontend {

namespace {

// A cost or memory field's values: per stage (per rank), or a single value (comm, the overheads).
struct Values {
  ir::Field field;
  ir::PerStage* values = nullptr;  // null for a single value, or an unset optional (FB, cap)
  double* single = nullptr;
};

bool all_zero(const Values& f) {
  if (f.single) return *f.single == 0;
  if (!f.values) return true;
  if (f.values->is_uniform()) return f.values->uniform == 0;
  for (double v : f.values->values)
    if (v != 0) return false;
  return true;
}

void convert_field(Values& f, const Unit& from, const Unit& to) {
  if (f.single) *f.single = convert(*f.single, from, to);
  if (!f.values) return;
  f.values->uniform = convert(f.values->uniform, from, to);
  for (double& v : f.values->values) v = convert(v, from, to);
}

std::string name(ir::Field f) { return std::string(ir::to_string(f)); }

// `F` for `cost.F`.
std::string short_name(ir::Field f) {
  std::string_view s = ir::to_string(f);
  return std::string(s.substr(s.find('.') + 1));
}

// Expresses every field of one dimension in the finest unit written; false on an error.
bool resolve(Dimension dim, std::vector<Values> fields, const ir::FieldLocs& given, ir::FieldUnits& units,
             std::string& problem_unit, std::vector<ir::ProblemError>& errors) {
  const Unit* target = nullptr;
  std::optional<ir::Field> first;  // a field written with a unit, for messages
  for (const Values& f : fields) {
    auto it = units.find(f.field);
    if (it == units.end()) continue;
    target = finer_unit(target, find_unit(it->second));
    if (!first) first = f.field;
  }
  if (!target) return true;
  std::string in = "`" + name(*first) + "` is given in `" + units[*first] + "`";
  bool ok = true;
  for (Values& f : fields) {
    auto it = units.find(f.field);
    if (it != units.end()) {
      convert_field(f, *find_unit(it->second), *target);
      it->second = std::string(target->name);
      continue;
    }
    if (all_zero(f)) continue;
    std::string example = short_name(f.field) + " = 1" + std::string(target->name);
    if (given.count(f.field)) {
      errors.push_back({f.field, DiagKind::BadUnit,
                        "`" + name(f.field) + "` has no unit, while " + in +
                            ": plain numbers and units do not mix, write e.g. `" + example + "`"});
    } else {
      bool derived = dim == Dimension::Memory && f.field != ir::Field::MemoryF;
      if (derived) continue;  // memory.B and memory.W follow memory.F below
      errors.push_back({*first, DiagKind::BadUnit,
                        "`" + name(f.field) + "` is not given, and its default (1) has no unit, while " + in +
                            ": give it too, e.g. `" + example + "`"});
    }
    ok = false;
  }
  problem_unit = std::string(target->name);
  return ok;
}

// The value of one stage, or nullopt when a list has the wrong length (validate reports it).
ir::PerStage combine(const ir::PerStage& a, const ir::PerStage* b, double scale) {
  if (a.is_uniform() && (!b || b->is_uniform())) return ir::PerStage::of(scale * (a.uniform + (b ? b->uniform : 0)));
  size_t n = a.is_uniform() ? b->values.size() : a.values.size();
  std::vector<double> out(n);
  for (size_t s = 0; s < n; ++s) out[s] = scale * (a.at(s) + (b ? b->at(s) : 0));
  return ir::PerStage::list(std::move(out));
}

std::string signed_term(double v) { return (v < 0 ? " - " : " + ") + format_number(std::abs(v)); }

bool list_fits(const ir::PerStage& v, size_t n) { return v.is_uniform() || v.values.size() == n; }

void convert_expectations(std::vector<ir::Expectation>& expect, const ir::Problem& p,
                          std::vector<ir::ProblemError>& errors) {
  for (ir::Expectation& e : expect) {
    if (e.unit.empty()) continue;
    const Unit* from = find_unit(e.unit);
    const std::string& target = from->dim == Dimension::Time ? p.time_unit : p.memory_unit;
    if (target.empty()) {
      errors.push_back({ir::Field::Expect, DiagKind::BadUnit,
                        "`expect` compares `" + std::string(ir::to_string(e.metric)) + "` with a value in `" + e.unit +
                            "`, but the problem's " + std::string(to_string(from->dim)) +
                            " values have no unit; give them with units too, or compare with a plain number"});
      e.unit.clear();
      continue;
    }
    const Unit* to = find_unit(target);
    e.value = convert(e.value, *from, *to);
    for (double& v : e.values) v = convert(v, *from, *to);
    e.unit = target;
  }
}

}  // namespace

std::vector<ir::ProblemError> complete_problem(ir::Problem& p, const ir::FieldLocs& given, ir::FieldUnits& units,
                                               std::vector<ir::Expectation>* expect, bool balanced,
                                               bool check_balance) {
  using ir::Field;
  std::vector<ir::ProblemError> errors;
  ir::CostModel& c = p.cost;
  resolve(Dimension::Time,
          {{Field::CostF, &c.F},
           {Field::CostB, &c.B},
           {Field::CostW, &c.W},
           {Field::CostComm, nullptr, &c.comm},
           {Field::CostFB, c.FB ? &*c.FB : nullptr},
           {Field::CostActionOverhead, nullptr, &c.action_overhead},
           {Field::CostMessageOverhead, nullptr, &c.message_overhead},
           {Field::CostR, c.R ? &*c.R : nullptr}},
          given, units, p.time_unit, errors);
  ir::MemoryModel& m = p.memory;
  resolve(Dimension::Memory,
          {{Field::MemoryF, &m.F},
           {Field::MemoryB, &m.B},
           {Field::MemoryW, &m.W},
           {Field::MemoryCap, m.cap ? &*m.cap : nullptr},
           {Field::MemoryStatic, &m.static_memory},
           {Field::MemoryInput, m.input ? &*m.input : nullptr}},
          given, units, p.memory_unit, errors);
  if (expect) convert_expectations(*expect, p, errors);
  if (!errors.empty()) return errors;

  // memory.B and memory.W follow memory.F unless given: a microbatch's backward frees what its
  // forward added, half at B and half at W, or what the one given leaves.
  bool has_b = given.count(Field::MemoryB) != 0, has_w = given.count(Field::MemoryW) != 0;
  size_t n = static_cast<size_t>(std::max(p.num_stages(), 0));
  if (list_fits(m.F, n) && list_fits(m.B, n) && list_fits(m.W, n)) {
    if (!has_b && !has_w) m.B = m.W = combine(m.F, nullptr, -0.5);
    else if (!has_w) m.W = combine(m.F, &m.B, -1);
    else if (!has_b) m.B = combine(m.F, &m.W, -1);
    if (!has_w) units.erase(Field::MemoryW);
    if (!has_b) units.erase(Field::MemoryB);
  }

  bool fused = given.count(Field::Backward) && p.backward == ir::BackwardMode::Fused;
  if (!check_balance || !balanced || fused || (!has_b && !has_w)) return errors;
  if (!list_fits(m.F, n) || !list_fits(m.B, n) || !list_fits(m.W, n)) return errors;
  for (size_t s = 0; s < (m.F.is_uniform() && m.B.is_uniform() && m.W.is_uniform() ? 1 : n); ++s) {
    double f = m.F.at(s), b = m.B.at(s), w = m.W.at(s), sum = f + b + w;
    double scale = std::max({std::abs(f), std::abs(b), std::abs(w)});
    if (std::abs(sum) <= 1e-9 * scale) continue;
    std::string where = m.F.is_uniform() && m.B.is_uniform() && m.W.is_uniform() ? ""
                                                                                 : " on stage " + std::to_string(s);
    errors.push_back({has_w ? Field::MemoryW : Field::MemoryB, DiagKind::BadValue,
                      "the memory deltas do not balance" + where + ": F + B + W = " + format_number(f) +
                          signed_term(b) + signed_term(w) + " = " + format_number(sum) +
                          ", expected 0 (a microbatch's backward frees what its forward added); write `balanced = "
                          "false` in `memory` if that is what you mean"});
    break;
  }
  return errors;
}

}  // namespace schedc::frontend
