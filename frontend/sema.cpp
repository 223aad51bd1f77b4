#include "frontend/sema.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <set>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"
#include "support/numbers.h"

namespace schedc::frontend {

namespace {

using ast::Value;
using sema::Context;

constexpr std::array<std::string_view, 19> kTopKeys = {
    "ranks",     "stages_per_rank", "microbatches", "direction", "directions", "placement", "stage_to_rank", "backward",
    "objective", "recompute",       "cost",         "memory",    "model",      "layer",     "embedding",     "head",
    "schedule",  "expect",          "runtime"};

// Spellings from other tools (Megatron, DeepSpeed, torch.distributed.pipelining) and papers, and
// keys that belong inside a block.
constexpr std::array<Alias, 21> kTopAliases = {{
    {"pp", "ranks"},
    {"num_ranks", "ranks"},
    {"world_size", "ranks"},
    {"pipeline_parallel_size", "ranks"},
    {"vpp", "stages_per_rank"},
    {"virtual_pipeline_size", "stages_per_rank"},
    {"virtual_stages", "stages_per_rank"},
    {"num_model_chunks", "stages_per_rank"},
    {"m", "microbatches"},
    {"mb", "microbatches"},
    {"num_microbatches", "microbatches"},
    {"n_microbatches", "microbatches"},
    {"num_micro_batches", "microbatches"},
    {"micro_batches", "microbatches"},
    {"chunks", "microbatches"},
    {"cap", "memory { cap = ... }"},
    {"memory_cap", "memory { cap = ... }"},
    {"comm", "cost { comm = ... }"},
    {"family", "schedule = family NAME"},
    {"solve", "schedule = solve"},
    {"time_limit", "schedule = solve { time_limit = ... }"},
}};

constexpr std::array<std::string_view, 8> kCostKeys = {
    "F", "B", "W", "comm", "FB", "action_overhead", "message_overhead", "R"};
constexpr std::array<std::string_view, 7> kMemoryKeys = {"F", "B", "W", "cap", "static", "balanced", "input"};

class Checker {
 public:
  explicit Checker(Context& cx) : cx_(cx), p_(cx.spec.problem) {}

  void run(const ast::File& file) {
    collect(file);
    int_field(ir::Field::Ranks, p_.ranks, 1, ir::kMaxRanks, "the number of pipeline ranks, e.g. `ranks = 4`");
    stages_per_rank();
    int_field(ir::Field::Microbatches, p_.microbatches, 1, ir::kMaxMicrobatches,
              "the number of microbatches, e.g. `microbatches = 8`");
    enum_field(ir::Field::Direction, p_.directions, ir::parse_direction, {"single", "bidirectional"});
    directions();
    placement();
    enum_field(ir::Field::Backward, p_.backward, ir::parse_backward, {"fused", "split", "mixed"});
    enum_field(ir::Field::Objective, p_.objective, ir::parse_objective, {"makespan", "max-span"});
    enum_field(ir::Field::Recompute, p_.recompute, ir::parse_recompute, {"off", "allowed", "all"});
    stage_to_rank();
    cost();
    memory();
    if (cx_.problem_ok) model_units_ = sema::check_model(cx_, stmts_);
    if (cx_.problem_ok) complete();
    if (cx_.problem_ok) sema::express_model(cx_, model_units_);
    if (cx_.problem_ok) validate();
    if (const ast::Stmt* s = find("schedule")) schedule(*s);
    if (const ast::Stmt* s = find(ir::Field::Expect)) expect(*s);
    if (const ast::Stmt* s = find("runtime")) runtime(*s);
    infer_backward();
  }

 private:
  // Top-level statements by key (the first of each); unknown and repeated keys are reported.
  void collect(const ast::File& file) {
    for (const ast::Stmt& s : file.stmts) {
      std::string_view key = s.key.text;
      if (std::find(kTopKeys.begin(), kTopKeys.end(), key) == kTopKeys.end()) {
        std::string hint = did_you_mean_suffix(key, kTopKeys, kTopAliases);
        suggested_.insert(std::string(did_you_mean(key, kTopKeys, kTopAliases)));
        cx_.report.error(DiagKind::UnknownKey, s.key.loc,
                         "unknown key " + quote(key) + (hint.empty() ? ", expected one of " + one_of(kTopKeys) : hint));
        continue;
      }
      if (s.name) {
        // `layer NAME { ... }`: a kind of layer; no other key takes a name.
        if (key != "layer") {
          cx_.report.error(DiagKind::BadValue, s.name->loc,
                           quote(key) + " takes no name: write `" + std::string(key) + " { ... }`");
          fail();
          continue;
        }
        auto [it, fresh] = stmts_.kinds.emplace(s.name->text, &s);
        if (!fresh)
          sema::duplicate(cx_, quote("layer " + std::string(s.name->text)), s.name->loc, it->second->name->loc);
        else stmts_.kind_order.push_back(&s);
        continue;
      }
      auto [it, fresh] = stmts_.top.emplace(key, &s);
      if (!fresh) sema::duplicate(cx_, quote(key), s.key.loc, it->second->key.loc);
    }
  }

  const ast::Stmt* find(std::string_view key) const { return stmts_.find(key); }
  // The statement that gives `field`: a top-level key is the field's name.
  const ast::Stmt* find(ir::Field field) const { return find(ir::to_string(field)); }

  void fail() { cx_.problem_ok = false; }

  // The field of `key` in block `block` (`cost.F`); block_entries admits only the block's keys,
  // each a field.
  static ir::Field block_field(std::string_view block, std::string_view key) {
    std::optional<ir::Field> f = ir::parse_field(std::string(block) + "." + std::string(key));
    assert(f && "every key of the cost and memory blocks is a field");
    return *f;
  }
  void mark_given(ir::Field field, SourceLoc loc) { cx_.spec.given[field] = loc; }

  // The value of `key = value`; reports a block where a value belongs.
  const Value* value_of(const ast::Stmt& s, std::string_view expected) {
    if (const auto* v = std::get_if<Value>(&s.body)) return v;
    cx_.report.error(DiagKind::WrongType, s.key.loc,
                     quote(s.key.text) + " needs " + std::string(expected) + ", got a block: write `" +
                         std::string(s.key.text) + " = ...`");
    fail();
    return nullptr;
  }

  // `stages_per_rank = N`, or `auto`: the problem states one stage per rank, and the schedule
  // phase tries 1, 2 and 4.
  void stages_per_rank() {
    const ast::Stmt* s = find(ir::Field::StagesPerRank);
    const Value* v = s ? std::get_if<Value>(&s->body) : nullptr;
    if (!v || !v->is(Value::Kind::Word) || v->text != "auto")
      return int_field(ir::Field::StagesPerRank, p_.stages_per_rank, 1, ir::kMaxStagesPerRank, nullptr);
    cx_.spec.stages_per_rank_auto = true;
    p_.stages_per_rank = 1;
    mark_given(ir::Field::StagesPerRank, v->loc);
  }

  // `placement = auto` leaves the placement to the solve's plan (looped until then).
  void placement() {
    const ast::Stmt* s = find(ir::Field::Placement);
    const Value* v = s ? std::get_if<Value>(&s->body) : nullptr;
    if (!v || !v->is(Value::Kind::Word) || v->text != "auto")
      return enum_field(ir::Field::Placement, p_.placement, ir::parse_placement,
                        {"looped", "vshape", "wave", "custom", "auto"});
    cx_.spec.placement_auto = true;
    mark_given(ir::Field::Placement, v->loc);
  }

  // A top-level key is its field's name.
  void int_field(ir::Field field, int32_t& out, int64_t lo, int64_t hi, const char* required) {
    const std::string_view key = ir::to_string(field);
    const ast::Stmt* s = find(key);
    if (!s) {
      if (!required) return;
      // `pp = 4` already got "did you mean `ranks`?": saying `ranks` is missing adds nothing.
      if (suggested_.count(std::string(key))) return fail();
      cx_.report.error(DiagKind::MissingKey, SourceLoc{cx_.spec.file, 0, 0},
                       "missing key " + quote(key) + ", every spec sets " + required);
      return fail();
    }
    const Value* v = value_of(*s, "an integer");
    if (!v) return;
    auto x = sema::to_int(cx_, *v, quote(key), lo, hi);
    if (!x) return fail();
    out = *x;
    mark_given(field, v->loc);
  }

  // `directions = k`: k pipelines over the same ranks (`direction` names 1 and 2); one of the two.
  // `directions = [6, 2]` states each direction's microbatches (k = the list's length).
  void directions() {
    const ast::Stmt* s = find("directions");
    if (!s) return;
    if (const ast::Stmt* named = find("direction")) {
      sema::duplicate(cx_, "the number of directions (`direction` or `directions`)", s->key.loc, named->key.loc);
      return fail();
    }
    const Value* v = value_of(*s, "an integer or a list of microbatch counts");
    if (!v) return;
    if (v->is(Value::Kind::List)) {
      if (v->items.empty() || v->items.size() > static_cast<size_t>(ir::kMaxDirections)) {
        cx_.report.error(DiagKind::OutOfRange, v->loc,
                         "`directions` as a list needs one microbatch count per direction, 1.." +
                             std::to_string(ir::kMaxDirections) + " of them, got " + std::to_string(v->items.size()));
        return fail();
      }
      std::vector<int32_t> counts;
      for (const Value& item : v->items) {
        auto n = sema::to_int(cx_, item, "a direction's microbatch count", 1, ir::kMaxMicrobatches);
        if (!n) return fail();
        counts.push_back(*n);
      }
      p_.directions = static_cast<int32_t>(counts.size());
      p_.direction_microbatches = std::move(counts);
    } else {
      auto x = sema::to_int(cx_, *v, "`directions`", 1, ir::kMaxDirections);
      if (!x) return fail();
      p_.directions = static_cast<int32_t>(*x);
    }
    mark_given(ir::Field::Direction, v->loc);
  }

  template <class T>
  void enum_field(ir::Field field, T& out, std::optional<T> (*parse)(std::string_view),
                  std::initializer_list<std::string_view> allowed_list) {
    const std::string_view key = ir::to_string(field);
    const ast::Stmt* s = find(key);
    if (!s) return;
    std::span<const std::string_view> allowed(allowed_list.begin(), allowed_list.size());
    const Value* v = value_of(*s, "one of " + one_of(allowed));
    if (!v) return;
    if (!v->is(Value::Kind::Word)) {
      const bool count = field == ir::Field::Direction && v->is(Value::Kind::Number);
      cx_.report.error(
          DiagKind::WrongType, v->loc,
          quote(key) + " needs one of " + one_of(allowed) + ", got " + sema::describe(*v) +
              (count ? " (for any number of pipelines write `directions = " + std::string(v->text) + "`)" : ""));
      return fail();
    }
    auto parsed = parse(v->text);
    if (!parsed) {
      std::string hint = did_you_mean_suffix(v->text, allowed);
      cx_.report.error(DiagKind::BadValue, v->loc,
                       "unknown " + std::string(key) + " " + quote(v->text) + ", expected " + one_of(allowed) + hint);
      return fail();
    }
    out = *parsed;
    mark_given(field, v->loc);
  }

  // `[0, 1, 1, 0]` (one direction) or `[[...], [...]]` (one list per direction).
  void stage_to_rank() {
    const ast::Stmt* s = find(ir::Field::StageToRank);
    if (!s) return;
    const Value* v = value_of(*s, "a list of ranks");
    if (!v) return;
    if (!v->is(Value::Kind::List)) {
      cx_.report.error(DiagKind::WrongType, v->loc,
                       "`stage_to_rank` needs a list of ranks (one per stage), or one such list per direction, got " +
                           sema::describe(*v));
      return fail();
    }
    bool nested = !v->items.empty() && v->items[0].is(Value::Kind::List);
    std::vector<std::vector<int32_t>> lists(nested ? 0 : 1);
    bool ok = true;
    auto add_ranks = [&](const Value& list, std::vector<int32_t>& out) {
      for (const Value& item : list.items) {
        auto r = sema::to_int(cx_, item, "`stage_to_rank` entry", 0, ir::kMaxRanks - 1);
        if (!r) return false;
        out.push_back(*r);
      }
      return true;
    };
    if (!nested) {
      ok = add_ranks(*v, lists[0]);
    } else {
      for (const Value& item : v->items) {
        if (!item.is(Value::Kind::List)) {
          cx_.report.error(DiagKind::WrongType, item.loc,
                           "`stage_to_rank` holds either ranks or lists of ranks, not both, got " +
                               sema::describe(item) + " after a list");
          ok = false;
          break;
        }
        lists.emplace_back();
        if (!(ok = add_ranks(item, lists.back()))) break;
      }
    }
    if (!ok) return fail();
    p_.stage_to_rank = std::move(lists);
    mark_given(ir::Field::StageToRank, v->loc);
  }

  // The entries of `cost { ... }` / `memory { ... }`, first of each key; unknown keys reported.
  std::vector<const ast::Entry*> block_entries(const char* key, std::span<const std::string_view> keys,
                                               const char* example) {
    return sema::block_entries(cx_, stmts_.find(key), key, keys, example);
  }

  // Sets a per-stage (or per-rank) field and records it as given.
  template <class Target>
  void per_stage(const ast::Entry& e, ir::Field field, const char* per, Target& target, Dimension dim) {
    auto v = sema::to_per_stage(cx_, e.value, field, per, dim);
    if (!v) return fail();
    target = *v;
    cx_.spec.given[field] = e.value.loc;
  }

  void cost() {
    for (const ast::Entry* e : block_entries("cost", kCostKeys, "F = 1  B = 1  W = 1  comm = 0")) {
      const ir::Field field = block_field("cost", e->key.text);
      constexpr Dimension kTime = Dimension::Time;
      if (e->key.text == "F") per_stage(*e, field, "stage", p_.cost.F, kTime);
      else if (e->key.text == "B") per_stage(*e, field, "stage", p_.cost.B, kTime);
      else if (e->key.text == "W") per_stage(*e, field, "stage", p_.cost.W, kTime);
      else if (e->key.text == "FB") per_stage(*e, field, "stage", p_.cost.FB, kTime);
      else if (e->key.text == "R") per_stage(*e, field, "stage", p_.cost.R, kTime);
      else single(*e, field);
    }
  }

  // `comm`, `action_overhead`, `message_overhead`: one time for every link, action or message.
  void single(const ast::Entry& e, ir::Field field) {
    struct Single {
      ir::Field field;
      double ir::CostModel::*slot;
      const char* what;
    };
    static constexpr Single kSingles[] = {
        {ir::Field::CostComm, &ir::CostModel::comm, "one latency for every link"},
        {ir::Field::CostActionOverhead, &ir::CostModel::action_overhead, "one overhead for every action"},
        {ir::Field::CostMessageOverhead, &ir::CostModel::message_overhead, "one overhead for every message"}};
    const Single& x = *std::find_if(std::begin(kSingles), std::end(kSingles),
                                    [&](const Single& c) { return c.field == field; });
    if (!e.value.is(Value::Kind::Number)) {
      cx_.report.error(DiagKind::WrongType, e.value.loc,
                       "`" + std::string(ir::to_string(field)) + "` needs a number (" + x.what + "), got " +
                           sema::describe(e.value));
      fail();
    } else if (auto v = sema::to_quantity(cx_, e.value, field, Dimension::Time)) {
      p_.cost.*x.slot = *v;
      cx_.spec.given[field] = e.value.loc;
    } else {
      fail();
    }
  }

  void memory() {
    for (const ast::Entry* e : block_entries("memory", kMemoryKeys, "F = 1  B = -0.5  W = -0.5  cap = none")) {
      const ir::Field field = block_field("memory", e->key.text);
      constexpr Dimension kMemory = Dimension::Memory;
      if (e->key.text == "F") per_stage(*e, field, "stage", p_.memory.F, kMemory);
      else if (e->key.text == "B") per_stage(*e, field, "stage", p_.memory.B, kMemory);
      else if (e->key.text == "W") per_stage(*e, field, "stage", p_.memory.W, kMemory);
      else if (e->key.text == "static") per_stage(*e, field, "stage", p_.memory.static_memory, kMemory);
      else if (e->key.text == "input") per_stage(*e, field, "stage", p_.memory.input, kMemory);
      else if (e->key.text == "balanced") balanced(*e);
      else if (e->value.is(Value::Kind::Word) && e->value.text == "none") {
        p_.memory.cap.reset();
        cx_.spec.given[field] = e->value.loc;
      } else if (e->value.is(Value::Kind::Word)) {
        cx_.report.error(DiagKind::WrongType, e->value.loc,
                         "`memory.cap` needs a number, a list (one per rank) or `none`, got " +
                             sema::describe(e->value) +
                             did_you_mean_suffix(e->value.text, std::array<std::string_view, 1>{"none"}));
        fail();
      } else {
        per_stage(*e, field, "rank", p_.memory.cap, kMemory);
      }
    }
  }

  void balanced(const ast::Entry& e) {
    const Value& v = e.value;
    if (v.is(Value::Kind::Word) && (v.text == "true" || v.text == "false")) {
      cx_.spec.balanced = v.text == "true";
      cx_.spec.given[ir::Field::MemoryBalanced] = v.loc;
      return;
    }
    if (!v.is(Value::Kind::Invalid))
      cx_.report.error(DiagKind::WrongType, v.loc,
                       "`memory.balanced` needs `true` or `false`, got " + sema::describe(v));
    fail();
  }

  // Units to one per dimension, memory.B/W from memory.F, the balance check (docs/dsl.md).
  void complete() {
    auto errors = complete_problem(cx_.spec.problem, cx_.spec.given, cx_.spec.units, nullptr, cx_.spec.balanced, true);
    for (const ir::ProblemError& e : errors) cx_.report.error(e.kind, cx_.spec.loc_of(e.field), e.message);
    if (!errors.empty()) fail();
  }

  // ir::validate knows the ranges and the rules between fields; its errors point at the value
  // of the field they name, or of the field that made the rule apply when that one was not written.
  void validate() {
    auto errors = ir::validate(p_);
    sema::fit_auto_partition(cx_, errors);
    for (const ir::ProblemError& e : errors) {
      SourceLoc loc = cx_.spec.loc_of(e.field);
      if (!cx_.spec.is_given(e.field)) {
        if (e.field == ir::Field::StageToRank || e.field == ir::Field::StagesPerRank)
          loc = cx_.spec.loc_of(ir::Field::Placement);
        if (e.field == ir::Field::Microbatches) loc = cx_.spec.loc_of(ir::Field::Direction);
      }
      cx_.report.error(e.kind, loc, e.message);
    }
    if (!errors.empty()) fail();
  }

  void schedule(const ast::Stmt& s) {
    if (const auto* sv = std::get_if<ast::ScheduleValue>(&s.body)) return sema::check_schedule(cx_, *sv);
    cx_.report.error(DiagKind::WrongType, s.key.loc,
                     "`schedule` needs a value, write `schedule = explicit { ... }`, `schedule = family NAME` or "
                     "`schedule = solve`");
  }

  void expect(const ast::Stmt& s) {
    if (const auto* b = std::get_if<ast::ExpectBlock>(&s.body)) return sema::check_expect(cx_, *b);
    const Value& v = std::get<Value>(s.body);
    cx_.report.error(DiagKind::WrongType, v.loc,
                     "`expect` is a block, write `expect { makespan <= 40 }`, got " + sema::describe(v));
  }

  void runtime(const ast::Stmt& s) {
    if (const auto* b = std::get_if<ast::Block>(&s.body)) {
      cx_.spec.runtime = sema::to_params(cx_, *b, "runtime");
      cx_.spec.runtime_loc = b->loc;
      // With a model, each stage runs the layers its partition gives it (the runtime's stages
      // build as many): a second count would contradict it.
      if (const ir::Param* layers = cx_.spec.runtime.find("layers"); layers && find(ir::Field::Model))
        cx_.report.error(DiagKind::BadValue, layers->loc,
                         "`runtime.layers` is derived from `model` (its partition gives each stage's layers): "
                         "give one or the other");
      return;
    }
    const Value& v = std::get<Value>(s.body);
    cx_.report.error(DiagKind::WrongType, v.loc,
                     "`runtime` is a block, write `runtime { stage = mlp  seed = 1 }`, got " + sema::describe(v));
  }

  // An explicit schedule shows which backward it uses: BW only -> fused, B/W only -> split,
  // both -> mixed. Not recorded in `given`: the file did not write it.
  void infer_backward() {
    if (cx_.spec.is_given(ir::Field::Backward) || cx_.spec.schedule.kind != SourceKind::Explicit) return;
    bool fused = false, split = false;
    for (const auto& order : cx_.spec.schedule.ranks)
      for (const ir::Action& a : order) {
        if (a.kind == ir::ActionKind::BW) fused = true;
        if (a.kind == ir::ActionKind::B || a.kind == ir::ActionKind::W) split = true;
      }
    if (fused && split) p_.backward = ir::BackwardMode::Mixed;
    else if (fused) p_.backward = ir::BackwardMode::Fused;
    else if (split) p_.backward = ir::BackwardMode::Split;
  }

  Context& cx_;
  ir::Problem& p_;
  sema::ModelUnits model_units_;  // the units the model blocks were written in
  sema::Statements stmts_;
  std::set<std::string> suggested_;  // keys offered as "did you mean" for unknown keys
};

}  // namespace

std::optional<Spec> check(const ast::File& file, Reporter& report) {
  size_t errors_before = report.error_count();
  Context cx{report, Spec{}};
  cx.spec.file = file.file;
  Checker(cx).run(file);
  if (report.error_count() != errors_before || report.full()) return std::nullopt;
  return std::move(cx.spec);
}

}  // namespace schedc::frontend
