#pragma once
// Shared by the sema files: the checking context and value conversions. Not part of the API.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/ast.h"
#include "frontend/reporter.h"
#include "frontend/spec.h"
#include "ir/model.h"
#include "ir/params.h"
#include "ir/problem.h"
#include "support/units.h"

namespace schedc::frontend::sema {

struct Context {
  Reporter& report;
  Spec spec;
  /// False once any problem field had an error: checks that need the problem's sizes are skipped.
  bool problem_ok = true;
};

/// The file's top-level statements (the first of each key) and its `layer NAME { ... }` kinds, by
/// name and in the order written.
struct Statements {
  std::map<std::string_view, const ast::Stmt*> top;
  std::map<std::string_view, const ast::Stmt*> kinds;
  std::vector<const ast::Stmt*> kind_order;
  const ast::Stmt* find(std::string_view key) const {
    auto it = top.find(key);
    return it == top.end() ? nullptr : it->second;
  }
};

/// What a value is, for "got ..." in messages: "number `4.5`", "name `four`", "a list".
std::string describe(const ast::Value& v);

/// An int32 from an integral number; otherwise reports wrong-type (not an integer) or
/// out-of-range (outside `lo`..`hi`, for numbers too large to hold) as `what` and returns nullopt.
std::optional<int32_t> to_int(Context& cx, const ast::Value& v, std::string_view what, int64_t lo, int64_t hi);

/// A number, or a list of numbers (`per` names what the list is indexed by: "stage", "rank"), of
/// dimension `dim`: values may carry units of it (a list is expressed in its finest), recorded in
/// `spec.units[field]`; complete_problem() brings all fields to one unit.
std::optional<ir::PerStage> to_per_stage(Context& cx, const ast::Value& v, ir::Field field, std::string_view per,
                                         Dimension dim);
/// One number of dimension `dim`, its unit recorded as to_per_stage does.
std::optional<double> to_quantity(Context& cx, const ast::Value& v, ir::Field field, Dimension dim);
/// True when `v` has no unit; otherwise reports that `what` takes a plain number.
bool no_unit(Context& cx, const ast::Value& v, std::string_view what);

/// Key/value pairs of a block (family parameters, solve options, runtime) as ir::Params;
/// duplicates are reported, values must be numbers, names, strings or lists of numbers.
ir::Params to_params(Context& cx, const ast::Block& block, std::string_view owner);

/// The entries of block statement `s` (nullptr: none; its first of each key), named `key` in
/// messages; a value where the block belongs, unknown and repeated keys are reported (with
/// `example` as the block's spelling) and fail the problem.
std::vector<const ast::Entry*> block_entries(Context& cx, const ast::Stmt* s, const std::string& key,
                                             std::span<const std::string_view> keys, const char* example);

/// Reports a second occurrence of a key, with a note at the first.
void duplicate(Context& cx, std::string_view what, SourceLoc second, SourceLoc first);

/// The units the model's blocks were written in, per dimension (nullptr: plain numbers).
struct ModelUnits {
  const Unit* time = nullptr;
  const Unit* memory = nullptr;
};

/// `model { layers = ...  partition = ... }` with its `layer`, `layer NAME`, `embedding` and `head`
/// blocks (sema_model.cpp): the model into `spec.model`, the per-stage costs and memory it derives
/// into the problem; fails the problem on an error (reported).
ModelUnits check_model(Context& cx, const Statements& stmts);
/// The model's values in the units the problem ended in (complete_problem may pick a finer unit
/// written elsewhere in the file: a cost in `us` beside layers in `ms`).
void express_model(Context& cx, const ModelUnits& written);

/// `model { partition = ... }` as layer counts per stage (`S` stages, `layers` body layers of
/// `model`): `balanced` (the default, also where `partition` is absent) and `auto` the balanced
/// partition, a list of counts, a Megatron-Core layout string or torchtitan's module lists;
/// nullopt once an error is reported.
std::optional<std::vector<int32_t>> partition_counts(Context& cx, const ast::Value* partition, const ir::Model& model,
                                                     int32_t S, int64_t layers);

/// Where `partition = auto`'s balanced partition has its static memory over the cap (an error of
/// ir::validate in `errors`), the problem is re-cut as ir::fit_static finds and `errors`
/// revalidated; where no partition can fit, the error says by how much the cap falls short.
void fit_auto_partition(Context& cx, std::vector<ir::ProblemError>& errors);

/// `schedule = ...`: the source, and for explicit schedules the checked orders.
void check_schedule(Context& cx, const ast::ScheduleValue& s);
/// `expect { ... }`
void check_expect(Context& cx, const ast::ExpectBlock& b);

}  // namespace schedc::frontend::sema
