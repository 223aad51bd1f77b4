// `model { ... }` and its layer blocks: the model as layers of named kinds, the costs and memory
// it derives per stage (docs/dsl.md, "The model").

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"
#include "ir/model.h"
#include "support/numbers.h"

namespace schedc::frontend::sema {

namespace {

using ast::Value;

constexpr std::array<std::string_view, 2> kModelKeys = {"layers", "partition"};
constexpr std::array<std::string_view, 6> kPartKeys = {"F", "B", "W", "memory", "static", "input"};

class ModelChecker {
 public:
  ModelChecker(Context& cx, const Statements& stmts) : cx_(cx), p_(cx.spec.problem), stmts_(stmts) {}

  // One part of the model: its values with their units, unit-checked per dimension.
  struct Part {
    struct Entry {
      double value = 0;  // as written, then in the model's unit (part_units)
      const Unit* unit = nullptr;
      std::string text;  // as written, for messages
      SourceLoc loc;
    };
    bool given = false;
    SourceLoc loc;
    std::string name;  // its block, as messages name it: `layer.moe`, `embedding`
    std::map<std::string, Entry> values;
    double at(const char* key) const {
      auto it = values.find(key);
      return it == values.end() ? 0 : it->second.value;
    }
  };

  bool part(const char* key, Part& out) { return part(find(key), key, out); }
  // The part of statement `s` (nullptr: not given), named `key` in messages (`layer.moe`).
  bool part(const ast::Stmt* s, const std::string& key, Part& out) {
    if (!s) return true;
    out.given = true;
    out.loc = s->name ? s->name->loc : s->key.loc;
    out.name = key;
    bool ok = true;
    for (const ast::Entry* e : sema::block_entries(
             cx_, s, key, kPartKeys, "F = 3ms  B = 3ms  W = 2.4ms  memory = 300MiB  static = 2.5GiB  input = 16MiB")) {
      const Value& v = e->value;
      std::string field = std::string(key) + "." + std::string(e->key.text);
      if (!v.is(Value::Kind::Number)) {
        if (!v.is(Value::Kind::Invalid))
          cx_.report.error(DiagKind::WrongType, v.loc, quote(field) + " needs a number, got " + describe(v));
        ok = false;
        continue;
      }
      bool time = e->key.text == "F" || e->key.text == "B" || e->key.text == "W";
      Dimension dim = time ? Dimension::Time : Dimension::Memory;
      const Unit* unit = v.unit.empty() ? nullptr : find_unit(v.unit);
      if (unit && unit->dim != dim) {
        cx_.report.error(DiagKind::BadUnit, v.loc,
                         quote(field) + " is a " + std::string(to_string(dim)) + ", got " + quote(v.text) + " (a " +
                             std::string(to_string(unit->dim)) + " unit)");
        ok = false;
        continue;
      }
      if (!(v.number >= 0) || v.number > ir::kMaxMagnitude) {
        cx_.report.error(DiagKind::OutOfRange, v.loc, quote(field) + " must be in 0..1e15, got " + quote(v.text));
        ok = false;
        continue;
      }
      out.values[std::string(e->key.text)] = {v.number, unit, std::string(v.text), v.loc};
    }
    return ok;
  }

  // Expresses the parts' values of one dimension in the finest unit written; false on a plain
  // nonzero value beside units.
  bool part_units(std::vector<Part*> parts, std::initializer_list<const char*> keys, const char* what,
                  const Unit*& target) {
    target = nullptr;
    for (Part* pt : parts)
      for (const char* k : keys)
        if (auto it = pt->values.find(k); it != pt->values.end()) target = finer_unit(target, it->second.unit);
    if (!target) return true;
    for (Part* pt : parts)
      for (const char* k : keys) {
        auto it = pt->values.find(k);
        if (it == pt->values.end()) continue;
        double& v = it->second.value;
        const Unit* u = it->second.unit;
        if (u) {
          v = convert(v, *u, *target);
        } else if (v != 0) {
          cx_.report.error(DiagKind::BadUnit, cx_.spec.loc_of(ir::Field::Model),
                           std::string("the model's ") + what + " mix plain numbers and units: give `" + k +
                               "` with a unit too");
          return false;
        }
      }
    return true;
  }

  // The body's layers: `layers = N` (N of the one kind), or a list of kinds in model order, each
  // item a kind's name (one layer) or `[name, N]` (N layers). Empty on an error (reported).
  std::vector<int32_t> body_layers(const Value& v, const std::vector<std::string_view>& names) {
    auto kind_of = [&](const Value& w) -> std::optional<int32_t> {
      if (!w.is(Value::Kind::Word)) {
        if (!w.is(Value::Kind::Invalid))
          cx_.report.error(DiagKind::WrongType, w.loc, "a `model.layers` item names a layer kind, got " + describe(w));
        return std::nullopt;
      }
      auto it = std::find(names.begin(), names.end(), w.text);
      if (it != names.end()) return static_cast<int32_t>(it - names.begin());
      const std::string hint = did_you_mean_suffix(w.text, names);
      cx_.report.error(DiagKind::BadValue, w.loc,
                       "no layer kind " + quote(w.text) +
                           (hint.empty()
                                ? ": declare it as `layer " + std::string(w.text) + " { F = ...  B = ...  W = ... }`"
                                : hint));
      return std::nullopt;
    };
    std::vector<int32_t> out;
    if (!v.is(Value::Kind::List)) {
      auto n = to_int(cx_, v, "`model.layers`", 1, 1'000'000);
      if (n && (*n < 1 || *n > 1'000'000)) {
        cx_.report.error(DiagKind::OutOfRange, v.loc, "`model.layers` must be in 1..1000000, got " + quote(v.text));
        return {};
      }
      if (!n) return {};
      if (names.size() != 1) {
        cx_.report.error(DiagKind::BadValue, v.loc,
                         "with " + std::to_string(names.size()) +
                             " layer kinds, `model.layers` lists them in model order, e.g. `layers = [[" +
                             std::string(names[0]) + ", 3], [" + std::string(names[1]) + ", 58]]`");
        return {};
      }
      out.assign(static_cast<size_t>(*n), 0);
      return out;
    }
    for (const Value& item : v.items) {
      std::optional<int32_t> kind;
      int32_t count = 1;
      if (item.is(Value::Kind::List)) {
        if (item.items.size() != 2) {
          cx_.report.error(DiagKind::BadValue, item.loc,
                           "a `model.layers` run is `[kind, count]`, got " + std::to_string(item.items.size()) +
                               " items");
          return {};
        }
        kind = kind_of(item.items[0]);
        if (!kind) return {};
        auto n = to_int(cx_, item.items[1], "the count of a `model.layers` run", 1, 1'000'000);
        if (!n) return {};
        if (*n < 1 || *n > 1'000'000) {
          cx_.report.error(DiagKind::OutOfRange, item.items[1].loc,
                           "a `model.layers` run has 1..1000000 layers, got " + quote(item.items[1].text));
          return {};
        }
        count = *n;
      } else {
        kind = kind_of(item);
        if (!kind) return {};
      }
      if (out.size() + static_cast<size_t>(count) > 1'000'000) {
        cx_.report.error(DiagKind::OutOfRange, item.loc, "`model.layers` holds more than 1000000 layers");
        return {};
      }
      out.insert(out.end(), static_cast<size_t>(count), *kind);
    }
    if (out.empty()) cx_.report.error(DiagKind::BadValue, v.loc, "`model.layers` lists no layers");
    return out;
  }

  void run() {
    const ast::Stmt* m = find(ir::Field::Model);
    if (!m) {
      for (const char* k : {"layer", "embedding", "head"})
        if (const ast::Stmt* s = find(k)) {
          cx_.report.error(DiagKind::MissingKey, s->key.loc,
                           quote(k) + " describes a model's layers: it needs `model { layers = N }` beside it");
          fail();
        }
      for (const ast::Stmt* s : stmts_.kind_order) {
        cx_.report.error(DiagKind::MissingKey, s->key.loc,
                         "`layer " + std::string(s->name->text) +
                             "` describes a model's layers: it needs `model { layers = [...] }` beside it");
        fail();
      }
      return;
    }
    const Value* layers_value = nullptr;
    const Value* partition = nullptr;
    for (const ast::Entry* e :
         sema::block_entries(cx_, find("model"), "model", kModelKeys, "layers = 32  partition = balanced")) {
      if (e->key.text == "layers") layers_value = &e->value;
      else partition = &e->value;
    }
    if (!layers_value) {
      cx_.report.error(DiagKind::MissingKey, m->key.loc, "`model` needs `layers`, e.g. `model { layers = 32 }`");
      return fail();
    }
    // The kinds: `layer { ... }` (named `layer`), then `layer NAME { ... }` in the order written.
    std::vector<std::string_view> names;
    std::vector<Part> kinds;
    if (const ast::Stmt* s = find("layer")) {
      if (stmts_.kinds.count("layer")) {
        duplicate(cx_, "`layer`", stmts_.kinds.at("layer")->name->loc, s->key.loc);
        return fail();
      }
      names.push_back("layer");
      kinds.emplace_back();
      if (!part(s, "layer", kinds.back())) return fail();
    }
    for (const ast::Stmt* s : stmts_.kind_order) {
      names.push_back(s->name->text);
      kinds.emplace_back();
      if (!part(s, "layer." + std::string(s->name->text), kinds.back())) return fail();
    }
    Part embedding, head;
    if (!part("embedding", embedding) || !part("head", head)) return fail();
    if (kinds.empty()) {
      cx_.report.error(DiagKind::MissingKey, m->key.loc,
                       "`model` needs `layer { F = ...  B = ...  W = ... }`: the cost of one layer");
      return fail();
    }
    for (size_t i = 0; i < kinds.size(); ++i)
      for (const char* k : {"F", "B", "W"})
        if (!kinds[i].values.count(k)) {
          const std::string name = names[i] == "layer" ? "layer" : "layer " + std::string(names[i]);
          cx_.report.error(DiagKind::MissingKey, kinds[i].loc,
                           quote(name) + " needs `" + k + "`, the layer's " +
                               (k[0] == 'F'   ? "forward"
                                : k[0] == 'B' ? "input-gradient backward"
                                              : "weight-gradient backward") +
                               " time");
          return fail();
        }
    const std::vector<int32_t> body = body_layers(*layers_value, names);
    if (body.empty()) return fail();
    for (size_t i = 0; i < kinds.size(); ++i)
      if (std::find(body.begin(), body.end(), static_cast<int32_t>(i)) == body.end()) {
        cx_.report.error(DiagKind::BadValue, kinds[i].loc,
                         "layer kind " + quote(names[i]) + " is declared but `model.layers` never uses it");
        return fail();
      }
    const int32_t layers = static_cast<int32_t>(body.size());
    cx_.spec.given[ir::Field::Model] = layers_value->loc;
    using ir::Field;
    std::vector<Part*> parts{&embedding, &head};
    for (Part& k : kinds) parts.push_back(&k);
    // A layer's `input` (what it keeps when checkpointed) makes memory.input the model's too.
    const Part* with_input = nullptr;
    for (const Part* pt : parts)
      if (pt->values.count("input")) with_input = pt;
    const bool derive_input = with_input != nullptr;
    if (derive_input && p_.recompute == ir::Recompute::Off) {
      cx_.report.error(DiagKind::BadValue, with_input->values.at("input").loc,
                       "a layer's `input` (what it keeps when checkpointed) only matters with recomputation: add "
                       "`recompute = allowed` (or `all`), or remove it");
      return fail();
    }
    if (!derive_input && p_.recompute != ir::Recompute::Off && !cx_.spec.is_given(Field::MemoryInput)) {
      cx_.report.error(DiagKind::MissingKey, cx_.spec.loc_of(Field::Recompute),
                       "`recompute = " + std::string(ir::to_string(p_.recompute)) +
                           "` needs what a checkpointed layer keeps until its recomputation: `input` in the layer "
                           "blocks, e.g. `layer { ...  input = 16MiB }`, or `memory.input` per stage");
      return fail();
    }
    // What the model derives may not be written again.
    std::vector<Field> derived_fields{Field::CostF, Field::CostB, Field::CostW, Field::MemoryF, Field::MemoryStatic};
    if (derive_input) derived_fields.push_back(Field::MemoryInput);
    for (Field f : derived_fields)
      if (cx_.spec.is_given(f)) {
        cx_.report.error(DiagKind::BadValue, cx_.spec.loc_of(f),
                         quote(ir::to_string(f)) +
                             " is derived from `model` (its layers and partition): give one or the other");
        return fail();
      }
    const Unit* time_unit = nullptr;
    const Unit* memory_unit = nullptr;
    if (!part_units(parts, {"F", "B", "W"}, "times", time_unit) ||
        !part_units(parts, {"memory", "static", "input"}, "memory values", memory_unit))
      return fail();
    // Each kind keeps at most what its forward adds (both in the model's memory unit now).
    for (const Part* x : parts) {
      auto in = x->values.find("input");
      if (in == x->values.end() || in->second.value <= x->at("memory")) continue;
      auto mem = x->values.find("memory");
      cx_.report.error(DiagKind::BadValue, in->second.loc,
                       "`" + x->name + ".input` (" + in->second.text + ") is more than its `memory` (" +
                           (mem == x->values.end() ? std::string("0") : mem->second.text) +
                           "): a checkpointed layer keeps part of what its forward adds");
      return fail();
    }
    // The model itself, in the units of its blocks; complete() expresses it in the problem's.
    ir::Model model;
    auto kind = [&](std::string_view name, const Part& x) {
      model.kinds.push_back(
          {std::string(name), x.at("F"), x.at("B"), x.at("W"), x.at("memory"), x.at("static"), x.at("input")});
      return static_cast<int32_t>(model.kinds.size() - 1);
    };
    for (size_t i = 0; i < kinds.size(); ++i) kind(names[i], kinds[i]);
    model.layers = body;
    if (embedding.given) model.embedding = kind("embedding", embedding);
    if (head.given) model.head = kind("head", head);
    model.deltas_follow = !cx_.spec.is_given(Field::MemoryB) && !cx_.spec.is_given(Field::MemoryW);
    model.derive_input = derive_input;

    const int32_t S = p_.num_stages();
    const bool automatic = partition && partition->is(Value::Kind::Word) && partition->text == "auto";
    auto stated = partition_counts(cx_, partition, model, S, layers);
    if (!stated) return fail();
    std::vector<int32_t> counts = std::move(*stated);
    // Per stage: its layers, the embedding on the first, the head on the last.
    const ir::Problem derived = ir::with_partition(p_, model, counts);
    SourceLoc at = cx_.spec.loc_of(Field::Model);
    p_.cost.F = derived.cost.F;
    p_.cost.B = derived.cost.B;
    p_.cost.W = derived.cost.W;
    p_.memory.F = derived.memory.F;
    p_.memory.static_memory = derived.memory.static_memory;
    if (derive_input) p_.memory.input = derived.memory.input;
    for (Field f : {Field::CostF, Field::CostB, Field::CostW}) {
      cx_.spec.given[f] = at;
      if (time_unit) cx_.spec.units[f] = std::string(time_unit->name);
    }
    for (Field f : {Field::MemoryF, Field::MemoryStatic, Field::MemoryInput}) {
      if (f == Field::MemoryInput && !derive_input) continue;
      cx_.spec.given[f] = at;
      if (memory_unit) cx_.spec.units[f] = std::string(memory_unit->name);
    }
    cx_.spec.layers_per_stage = std::move(counts);
    cx_.spec.has_embedding = embedding.given;
    cx_.spec.has_head = head.given;
    cx_.spec.partition_auto = automatic;
    if (partition) cx_.spec.partition_loc = partition->loc;
    units_ = {time_unit, memory_unit};
    cx_.spec.model = std::move(model);
  }

  ModelUnits units() const { return units_; }

 private:
  const ast::Stmt* find(std::string_view key) const { return stmts_.find(key); }
  const ast::Stmt* find(ir::Field field) const { return find(ir::to_string(field)); }
  void fail() { cx_.problem_ok = false; }

  Context& cx_;
  ir::Problem& p_;
  const Statements& stmts_;
  ModelUnits units_;
};

}  // namespace

ModelUnits check_model(Context& cx, const Statements& stmts) {
  ModelChecker c(cx, stmts);
  c.run();
  return c.units();
}

void express_model(Context& cx, const ModelUnits& written) {
  if (!cx.spec.model) return;
  const ir::Problem& p = cx.spec.problem;
  auto to = [](const Unit* from, const std::string& name, double& v) {
    if (!from || name.empty() || name == from->name) return;
    if (const Unit* target = find_unit(name)) v = convert(v, *from, *target);
  };
  for (ir::LayerKind& k : cx.spec.model->kinds) {
    for (double* v : {&k.F, &k.B, &k.W}) to(written.time, p.time_unit, *v);
    for (double* v : {&k.memory, &k.static_memory, &k.input}) to(written.memory, p.memory_unit, *v);
  }
}

}  // namespace schedc::frontend::sema
