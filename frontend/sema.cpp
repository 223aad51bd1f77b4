#include "frontend/sema.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"

namespace schedc::frontend {

namespace {

using ast::Value;
using sema::Context;

constexpr std::array<std::string_view, 13> kTopKeys = {
    "ranks",     "stages_per_rank", "microbatches", "direction", "placement", "stage_to_rank", "backward",
    "objective", "cost",            "memory",       "schedule",  "expect",    "runtime"};

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

constexpr std::array<std::string_view, 5> kCostKeys = {"F", "B", "W", "comm", "FB"};
constexpr std::array<std::string_view, 6> kMemoryKeys = {"F", "B", "W", "cap", "static", "balanced"};

class Checker {
 public:
  explicit Checker(Context& cx) : cx_(cx), p_(cx.spec.problem) {}

  void run(const ast::File& file) {
    collect(file);
    int_field("ranks", p_.ranks, 1, ir::kMaxRanks, "the number of pipeline ranks, e.g. `ranks = 4`");
    int_field("stages_per_rank", p_.stages_per_rank, 1, ir::kMaxStagesPerRank, nullptr);
    int_field("microbatches", p_.microbatches, 1, ir::kMaxMicrobatches,
              "the number of microbatches, e.g. `microbatches = 8`");
    enum_field("direction", p_.direction, ir::parse_direction, {"single", "bidirectional"});
    enum_field("placement", p_.placement, ir::parse_placement, {"looped", "vshape", "wave", "custom"});
    enum_field("backward", p_.backward, ir::parse_backward, {"fused", "split", "mixed"});
    enum_field("objective", p_.objective, ir::parse_objective, {"makespan", "max-span"});
    stage_to_rank();
    cost();
    memory();
    if (cx_.problem_ok) complete();
    if (cx_.problem_ok) validate();
    if (const ast::Stmt* s = find("schedule")) schedule(*s);
    if (const ast::Stmt* s = find("expect")) expect(*s);
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
                         "unknown key " + quote(key) +
                             (hint.empty() ? ", expected one of " + one_of(kTopKeys) : hint));
        continue;
      }
      auto [it, fresh] = stmts_.emplace(key, &s);
      if (!fresh) sema::duplicate(cx_, quote(key), s.key.loc, it->second->key.loc);
    }
  }

  const ast::Stmt* find(std::string_view key) const {
    auto it = stmts_.find(key);
    return it == stmts_.end() ? nullptr : it->second;
  }

  void fail() { cx_.problem_ok = false; }
  void mark_given(const char* field, SourceLoc loc) { cx_.spec.given[field] = loc; }

  // The value of `key = value`; reports a block where a value belongs.
  const Value* value_of(const ast::Stmt& s, std::string_view expected) {
    if (const auto* v = std::get_if<Value>(&s.body)) return v;
    cx_.report.error(DiagKind::WrongType, s.key.loc,
                     quote(s.key.text) + " needs " + std::string(expected) + ", got a block: write `" +
                         std::string(s.key.text) + " = ...`");
    fail();
    return nullptr;
  }

  void int_field(const char* key, int32_t& out, int64_t lo, int64_t hi, const char* required) {
    const ast::Stmt* s = find(key);
    if (!s) {
      if (!required) return;
      // `pp = 4` already got "did you mean `ranks`?": saying `ranks` is missing adds nothing.
      if (suggested_.count(key)) return fail();
      cx_.report.error(DiagKind::MissingKey, SourceLoc{cx_.spec.file, 0, 0},
                       "missing key " + quote(key) + ", every spec sets " + required);
      return fail();
    }
    const Value* v = value_of(*s, "an integer");
    if (!v) return;
    auto x = sema::to_int(cx_, *v, quote(key), lo, hi);
    if (!x) return fail();
    out = *x;
    mark_given(key, v->loc);
  }

  template <class T>
  void enum_field(const char* key, T& out, std::optional<T> (*parse)(std::string_view),
                  std::initializer_list<std::string_view> allowed_list) {
    const ast::Stmt* s = find(key);
    if (!s) return;
    std::span<const std::string_view> allowed(allowed_list.begin(), allowed_list.size());
    const Value* v = value_of(*s, "one of " + one_of(allowed));
    if (!v) return;
    if (!v->is(Value::Kind::Word)) {
      cx_.report.error(DiagKind::WrongType, v->loc,
                       quote(key) + " needs one of " + one_of(allowed) + ", got " + sema::describe(*v));
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
    mark_given(key, v->loc);
  }

  // `[0, 1, 1, 0]` (one direction) or `[[...], [...]]` (one list per direction).
  void stage_to_rank() {
    const ast::Stmt* s = find("stage_to_rank");
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
    mark_given("stage_to_rank", v->loc);
  }

  // The entries of `cost { ... }` / `memory { ... }`, first of each key; unknown keys reported.
  std::vector<const ast::Entry*> block_entries(const char* key, std::span<const std::string_view> keys,
                                               const char* example) {
    const ast::Stmt* s = find(key);
    if (!s) return {};
    const auto* b = std::get_if<ast::Block>(&s->body);
    if (!b) {
      const Value& v = std::get<Value>(s->body);
      cx_.report.error(DiagKind::WrongType, v.loc,
                       quote(key) + " is a block, write `" + std::string(key) + " { " + example + " }`, got " +
                           sema::describe(v));
      fail();
      return {};
    }
    std::vector<const ast::Entry*> out;
    std::map<std::string_view, SourceLoc> seen;
    for (const ast::Entry& e : b->entries) {
      if (std::find(keys.begin(), keys.end(), e.key.text) == keys.end()) {
        std::string hint = did_you_mean_suffix(e.key.text, keys);
        cx_.report.error(DiagKind::UnknownKey, e.key.loc,
                         "unknown key " + quote(e.key.text) + " in " + quote(key) +
                             (hint.empty() ? ", expected one of " + one_of(keys) : hint));
        fail();
        continue;
      }
      auto [it, fresh] = seen.emplace(e.key.text, e.key.loc);
      if (!fresh) {
        sema::duplicate(cx_, quote(std::string(key) + "." + std::string(e.key.text)), e.key.loc, it->second);
        fail();
        continue;
      }
      out.push_back(&e);
    }
    return out;
  }

  // Sets a per-stage (or per-rank) field and records it as given.
  template <class Target>
  void per_stage(const ast::Entry& e, const std::string& field, const char* per, Target& target, Dimension dim) {
    auto v = sema::to_per_stage(cx_, e.value, field, per, dim);
    if (!v) return fail();
    target = *v;
    cx_.spec.given[field] = e.value.loc;
  }

  void cost() {
    for (const ast::Entry* e : block_entries("cost", kCostKeys, "F = 1  B = 1  W = 1  comm = 0")) {
      std::string field = "cost." + std::string(e->key.text);
      constexpr Dimension kTime = Dimension::Time;
      if (e->key.text == "F") per_stage(*e, field, "stage", p_.cost.F, kTime);
      else if (e->key.text == "B") per_stage(*e, field, "stage", p_.cost.B, kTime);
      else if (e->key.text == "W") per_stage(*e, field, "stage", p_.cost.W, kTime);
      else if (e->key.text == "FB") per_stage(*e, field, "stage", p_.cost.FB, kTime);
      else if (!e->value.is(Value::Kind::Number)) {
        cx_.report.error(DiagKind::WrongType, e->value.loc,
                         "`cost.comm` needs a number (one latency for every link), got " +
                             sema::describe(e->value));
        fail();
      } else if (auto x = sema::to_quantity(cx_, e->value, field, kTime)) {
        p_.cost.comm = *x;
        cx_.spec.given[field] = e->value.loc;
      } else {
        fail();
      }
    }
  }

  void memory() {
    for (const ast::Entry* e : block_entries("memory", kMemoryKeys, "F = 1  B = -0.5  W = -0.5  cap = none")) {
      std::string field = "memory." + std::string(e->key.text);
      constexpr Dimension kMemory = Dimension::Memory;
      if (e->key.text == "F") per_stage(*e, field, "stage", p_.memory.F, kMemory);
      else if (e->key.text == "B") per_stage(*e, field, "stage", p_.memory.B, kMemory);
      else if (e->key.text == "W") per_stage(*e, field, "stage", p_.memory.W, kMemory);
      else if (e->key.text == "static") per_stage(*e, field, "stage", p_.memory.static_memory, kMemory);
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
      cx_.spec.given["memory.balanced"] = v.loc;
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
    for (const ir::ProblemError& e : errors) {
      SourceLoc loc = cx_.spec.loc_of(e.field);
      if (!cx_.spec.is_given(e.field)) {
        if (e.field == "stage_to_rank" || e.field == "stages_per_rank") loc = cx_.spec.loc_of("placement");
        if (e.field == "microbatches") loc = cx_.spec.loc_of("direction");
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
      return;
    }
    const Value& v = std::get<Value>(s.body);
    cx_.report.error(DiagKind::WrongType, v.loc,
                     "`runtime` is a block, write `runtime { stage = mlp  seed = 1 }`, got " + sema::describe(v));
  }

  // An explicit schedule shows which backward it uses: BW only -> fused, B/W only -> split,
  // both -> mixed. Not recorded in `given`: the file did not write it.
  void infer_backward() {
    if (cx_.spec.is_given("backward") || cx_.spec.schedule.kind != SourceKind::Explicit) return;
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
  std::map<std::string_view, const ast::Stmt*> stmts_;
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
