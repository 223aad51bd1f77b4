// Value conversions shared by the sema files.

#include <algorithm>
#include <cmath>
#include <map>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::frontend::sema {

using ast::Value;

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Number: return "number " + quote(v.text);
    case Value::Kind::Word: return "name " + quote(v.text);
    case Value::Kind::String: return "string " + quote(v.text);
    case Value::Kind::List: return v.items.empty() ? "an empty list" : "a list";
    case Value::Kind::Invalid: break;
  }
  return "an invalid value";
}

void duplicate(Context& cx, std::string_view what, SourceLoc second, SourceLoc first) {
  if (cx.report.error(DiagKind::DuplicateKey, second, std::string(what) + " is given twice"))
    cx.report.note(first, "first given here");
}

std::vector<const ast::Entry*> block_entries(Context& cx, const ast::Stmt* s, const std::string& key,
                                             std::span<const std::string_view> keys, const char* example) {
  if (!s) return {};
  const auto* b = std::get_if<ast::Block>(&s->body);
  if (!b) {
    const Value& v = std::get<Value>(s->body);
    cx.report.error(DiagKind::WrongType, v.loc,
                    quote(key) + " is a block, write `" + key + " { " + example + " }`, got " + describe(v));
    cx.problem_ok = false;
    return {};
  }
  std::vector<const ast::Entry*> out;
  std::map<std::string_view, SourceLoc> seen;
  for (const ast::Entry& e : b->entries) {
    if (std::find(keys.begin(), keys.end(), e.key.text) == keys.end()) {
      std::string hint = did_you_mean_suffix(e.key.text, keys);
      cx.report.error(DiagKind::UnknownKey, e.key.loc,
                      "unknown key " + quote(e.key.text) + " in " + quote(key) +
                          (hint.empty() ? ", expected one of " + one_of(keys) : hint));
      cx.problem_ok = false;
      continue;
    }
    auto [it, fresh] = seen.emplace(e.key.text, e.key.loc);
    if (!fresh) {
      duplicate(cx, quote(key + "." + std::string(e.key.text)), e.key.loc, it->second);
      cx.problem_ok = false;
      continue;
    }
    out.push_back(&e);
  }
  return out;
}

bool no_unit(Context& cx, const Value& v, std::string_view what) {
  if (!v.is(Value::Kind::Number) || v.unit.empty()) return true;
  cx.report.error(DiagKind::BadUnit, v.loc,
                  std::string(what) + " takes a plain number, got " + quote(v.text) +
                      " (units are for the values of `cost`, `memory` and `expect`)");
  return false;
}

std::optional<int32_t> to_int(Context& cx, const Value& v, std::string_view what, int64_t lo, int64_t hi) {
  if (v.is(Value::Kind::Invalid)) return std::nullopt;
  if (!no_unit(cx, v, what)) return std::nullopt;
  if (!v.is(Value::Kind::Number) || std::floor(v.number) != v.number) {
    cx.report.error(DiagKind::WrongType, v.loc, std::string(what) + " needs an integer, got " + describe(v));
    return std::nullopt;
  }
  if (!is_int32(v.number)) {
    cx.report.error(DiagKind::OutOfRange, v.loc,
                    std::string(what) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                        quote(v.text));
    return std::nullopt;
  }
  return static_cast<int32_t>(v.number);
}

namespace {

// The unit of a number for a field of dimension `dim`; reports a unit of the other dimension.
bool unit_of(Context& cx, const Value& v, std::string_view name, Dimension dim, const Unit*& out) {
  out = nullptr;
  if (v.unit.empty()) return true;
  out = find_unit(v.unit);
  if (out->dim == dim) return true;
  cx.report.error(DiagKind::BadUnit, v.loc,
                  std::string(name) + " is a " + std::string(to_string(dim)) + ", got " + quote(v.text) + " (a " +
                      std::string(to_string(out->dim)) + " unit); " + std::string(to_string(dim)) + " units are " +
                      unit_names(dim));
  return false;
}

}  // namespace

std::optional<double> to_quantity(Context& cx, const Value& v, ir::Field field, Dimension dim) {
  std::string name = quote(ir::to_string(field));
  const Unit* unit = nullptr;
  if (!unit_of(cx, v, name, dim, unit)) return std::nullopt;
  if (unit) cx.spec.units[field] = std::string(unit->name);
  else cx.spec.units.erase(field);
  return v.number;
}

std::optional<ir::PerStage> to_per_stage(Context& cx, const Value& v, ir::Field field, std::string_view per,
                                         Dimension dim) {
  std::string name = quote(ir::to_string(field));
  if (v.is(Value::Kind::Number)) {
    auto x = to_quantity(cx, v, field, dim);
    if (!x) return std::nullopt;
    return ir::PerStage::of(*x);
  }
  if (!v.is(Value::Kind::List)) {
    if (!v.is(Value::Kind::Invalid))
      cx.report.error(DiagKind::WrongType, v.loc,
                      name + " needs a number or a list of numbers (one per " + std::string(per) + "), got " +
                          describe(v));
    return std::nullopt;
  }
  // Items may each have a unit: the list is expressed in the finest; plain items must be 0.
  const Unit* target = nullptr;
  for (const Value& item : v.items) {
    if (!item.is(Value::Kind::Number)) {
      cx.report.error(DiagKind::WrongType, item.loc,
                      name + " lists hold numbers (one per " + std::string(per) + "), got " + describe(item));
      return std::nullopt;
    }
    const Unit* unit = nullptr;
    if (!unit_of(cx, item, name, dim, unit)) return std::nullopt;
    target = finer_unit(target, unit);
  }
  std::vector<double> values;
  for (const Value& item : v.items) {
    if (target && item.unit.empty() && item.number != 0) {
      cx.report.error(DiagKind::BadUnit, item.loc,
                      name + " mixes plain numbers and units: " + quote(item.text) + " has no unit, write e.g. `" +
                          std::string(item.text) + std::string(target->name) + "`");
      return std::nullopt;
    }
    values.push_back(item.unit.empty() ? item.number : convert(item.number, *find_unit(item.unit), *target));
  }
  if (target) cx.spec.units[field] = std::string(target->name);
  else cx.spec.units.erase(field);
  return ir::PerStage::list(std::move(values));
}

ir::Params to_params(Context& cx, const ast::Block& block, std::string_view owner) {
  ir::Params params;
  std::map<std::string_view, SourceLoc> seen;
  for (const ast::Entry& e : block.entries) {
    auto [it, fresh] = seen.emplace(e.key.text, e.key.loc);
    if (!fresh) {
      duplicate(cx, quote(e.key.text) + " in " + quote(owner), e.key.loc, it->second);
      continue;
    }
    ir::Param p;
    p.key = std::string(e.key.text);
    p.loc = e.key.loc;
    p.value_loc = e.value.loc;
    const Value& v = e.value;
    switch (v.kind) {
      case Value::Kind::Number:
        if (!no_unit(cx, v, quote(e.key.text) + " in " + quote(owner))) continue;
        p.value = v.number;
        break;
      case Value::Kind::Word: p.value = std::string(v.text); break;
      case Value::Kind::String: p.value = v.string; break;
      case Value::Kind::Invalid: continue;
      case Value::Kind::List: {
        std::vector<double> numbers;
        bool ok = true;
        for (const Value& item : v.items) {
          if (item.is(Value::Kind::Number)) {
            if (!no_unit(cx, item, quote(e.key.text) + " in " + quote(owner))) {
              ok = false;
              break;
            }
            numbers.push_back(item.number);
            continue;
          }
          cx.report.error(DiagKind::WrongType, item.loc,
                          quote(e.key.text) + " in " + quote(owner) + " can be a list of numbers only, got " +
                              describe(item) + " in the list");
          ok = false;
          break;
        }
        if (!ok) continue;
        p.value = std::move(numbers);
        break;
      }
    }
    params.items.push_back(std::move(p));
  }
  return params;
}

}  // namespace schedc::frontend::sema
