// `model { partition = ... }`: the layers each stage runs, in every form a user may write it.

#include <algorithm>
#include <array>
#include <string>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"
#include "ir/model.h"
#include "support/numbers.h"

namespace schedc::frontend::sema {

using ast::Value;

std::optional<std::vector<int32_t>> partition_counts(Context& cx, const Value* partition, const ir::Model& model,
                                                     int32_t S, int64_t layers) {
  const bool automatic = partition && partition->is(Value::Kind::Word) && partition->text == "auto";
  std::vector<int32_t> counts;
  if (!partition || automatic || (partition->is(Value::Kind::Word) && partition->text == "balanced")) {
    return ir::balanced_partition(model, S);
  } else if (partition->is(Value::Kind::String)) {
    std::string error;
    auto parsed = ir::parse_megatron_layout(partition->string, model, S, error);
    if (!parsed) {
      cx.report.error(DiagKind::BadValue, partition->loc, "`model.partition` as a Megatron-Core layout: " + error);
      return std::nullopt;
    }
    return parsed;
  } else if (partition->is(Value::Kind::List) && !partition->items.empty() &&
             std::all_of(partition->items.begin(), partition->items.end(),
                         [](const Value& v) { return v.is(Value::Kind::List); })) {
    // torchtitan's `module_fqns_per_model_part`: one list of module names a stage.
    std::vector<std::vector<std::string>> names;
    for (const Value& stage : partition->items) {
      names.emplace_back();
      for (const Value& item : stage.items) {
        if (!item.is(Value::Kind::String)) {
          cx.report.error(DiagKind::WrongType, item.loc,
                          "a torchtitan module name is a quoted string, e.g. \"layers.0\", got " + describe(item));
          return std::nullopt;
        }
        names.back().push_back(item.string);
      }
    }
    if (names.size() != static_cast<size_t>(S)) {
      cx.report.error(DiagKind::BadValue, partition->loc,
                      "`model.partition` as torchtitan's module lists: " + std::to_string(S) +
                          " lists, one a stage, got " + std::to_string(names.size()));
      return std::nullopt;
    }
    std::string error;
    int32_t at_stage = -1, at_item = -1;
    auto parsed = ir::parse_torchtitan_modules(names, model, error, at_stage, at_item);
    if (!parsed) {
      SourceLoc loc = partition->loc;
      if (at_stage >= 0) {
        const Value& list = partition->items[static_cast<size_t>(at_stage)];
        loc = at_item >= 0 ? list.items[static_cast<size_t>(at_item)].loc : list.loc;
      }
      cx.report.error(DiagKind::BadValue, loc, "`model.partition` as torchtitan's module lists: " + error);
      return std::nullopt;
    }
    return parsed;
  } else if (partition->is(Value::Kind::List)) {
    int64_t sum = 0;
    for (const Value& item : partition->items) {
      auto n = to_int(cx, item, "a `model.partition` entry", 0, layers);
      if (!n) return std::nullopt;
      if (*n < 0) {
        cx.report.error(DiagKind::OutOfRange, item.loc, "a stage runs 0 or more layers, got " + quote(item.text));
        return std::nullopt;
      }
      counts.push_back(*n);
      sum += *n;
    }
    if (counts.size() != static_cast<size_t>(S) || sum != layers) {
      cx.report.error(DiagKind::BadValue, partition->loc,
                      "`model.partition` lists the layers of each stage: " + std::to_string(S) +
                          " numbers summing to " + std::to_string(layers) + ", got " + std::to_string(counts.size()) +
                          " summing to " + std::to_string(sum));
      return std::nullopt;
    }
  } else {
    if (!partition->is(Value::Kind::Invalid))
      cx.report.error(DiagKind::WrongType, partition->loc,
                      "`model.partition` needs `balanced`, `auto`, a list of layers per stage, a Megatron-Core "
                      "layout string or torchtitan's module lists, got " +
                          describe(*partition) +
                          did_you_mean_suffix(partition->text, std::array<std::string_view, 2>{"balanced", "auto"}));
    return std::nullopt;
  }
  return counts;
}

// `partition = auto` starts from the balanced partition; where that one's static memory is over
// the cap, from one whose static memory fits (ir::fit_static), and where none can, the error
// says so and by how much the cap falls short.
void fit_auto_partition(Context& cx, std::vector<ir::ProblemError>& errors) {
  ir::Problem& p = cx.spec.problem;
  if (!cx.spec.partition_auto || !cx.spec.model) return;
  auto over = std::find_if(errors.begin(), errors.end(), [](const ir::ProblemError& e) {
    return e.kind == DiagKind::CapInfeasible && e.field == ir::Field::MemoryStatic;
  });
  if (over == errors.end()) return;
  const ir::Model& model = *cx.spec.model;
  const ir::StaticFit fit = ir::fit_static(p, model);
  if (fit.counts) {
    const ir::Problem q = ir::with_partition(p, model, *fit.counts);
    p.cost.F = q.cost.F, p.cost.B = q.cost.B, p.cost.W = q.cost.W;
    p.memory.F = q.memory.F, p.memory.static_memory = q.memory.static_memory;
    if (model.deltas_follow) p.memory.B = q.memory.B, p.memory.W = q.memory.W;
    if (model.derive_input) p.memory.input = q.memory.input;
    cx.spec.layers_per_stage = *fit.counts;
    cx.spec.partition_fits_static = true;
    errors = ir::validate(p);
    return;
  }
  if (!fit.exact) {
    over->message += " (the balanced partition `partition = auto` starts from; no partition found fits)";
    return;
  }
  std::string cap;
  if (p.memory.cap->is_uniform())
    cap = "; a cap of `" + format_number(p.memory.cap->uniform + fit.excess) + p.memory_unit +
          "` is the least that could hold it";
  over->message = "no partition of the model's " + std::to_string(model.num_layers()) + " layers over " +
                  std::to_string(p.num_stages()) +
                  " stages keeps every rank's static memory (`static` of its layers, the embedding's and the "
                  "head's) under its cap: every partition leaves some rank at least " +
                  format_number(fit.excess) + p.memory_unit + " over" + cap;
}

}  // namespace schedc::frontend::sema
