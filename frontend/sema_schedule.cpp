// Sema for `schedule = ...` (explicit orders, family, solve) and `expect { ... }`.

#include <array>
#include <cctype>
#include <map>

#include "frontend/lexer.h"
#include "frontend/sema_internal.h"
#include "frontend/suggest.h"
#include "ir/action.h"
#include "support/numbers.h"

namespace schedc::frontend::sema {

namespace {

using ast::Value;

// "4 ranks (0..3)"; `plural` is the word for more than one.
std::string range_text(int32_t count, const char* one, const char* plural) {
  return std::to_string(count) + " " + (count == 1 ? one : plural) + " (0.." + std::to_string(count - 1) + ")";
}

// `f0.s1` -> `F0.s1`, `bw2.S0` -> `BW2.s0`: the token with its letters' case fixed, when that
// makes it a valid action token.
std::string case_fixed_token(std::string_view text) {
  std::string fixed(text);
  size_t i = 0;
  for (; i < fixed.size() && std::isalpha(static_cast<unsigned char>(fixed[i])); ++i)
    fixed[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(fixed[i])));
  size_t dot = fixed.find(".S", i);
  if (dot != std::string::npos) fixed[dot + 1] = 's';
  if (fixed == text || !ir::parse_action(fixed)) return {};
  return fixed;
}

class ExplicitChecker {
 public:
  ExplicitChecker(Context& cx, ScheduleSource& src) : cx_(cx), src_(src), p_(cx.spec.problem) {
    sized_ = cx.problem_ok;
    if (!sized_) return;
    size_t ranks = static_cast<size_t>(p_.ranks);
    src_.ranks.resize(ranks);
    src_.overlap.resize(ranks);
    src_.token_locs.resize(ranks);
    src_.rank_locs.resize(ranks);
  }

  void run(const ast::ExplicitBlock& b) {
    std::map<int32_t, SourceLoc> seen;
    for (const ast::RankOrder& order : b.ranks) {
      int32_t r = rank_index(order, seen);
      if (r >= 0) src_.rank_locs[static_cast<size_t>(r)] = order.loc;
      for (const ast::OrderItem& item : order.items) add_item(item, r);
    }
    if (sized_) report_missing_ranks(b, seen);
  }

 private:
  // The rank an order belongs to, or -1 when it has no valid, new rank number.
  int32_t rank_index(const ast::RankOrder& order, std::map<int32_t, SourceLoc>& seen) {
    auto idx = to_int(cx_, order.index, "`rank`", 0, ir::kMaxRanks - 1);
    if (!idx) return -1;
    if (sized_ && (*idx < 0 || *idx >= p_.ranks)) {
      cx_.report.error(DiagKind::NoSuchRank, order.index.loc,
                       "rank " + quote(order.index.text) + " does not exist, the problem has " +
                           range_text(p_.ranks, "rank", "ranks"));
      return -1;
    }
    auto [it, fresh] = seen.emplace(*idx, order.loc);
    if (!fresh) {
      duplicate(cx_, "the order of rank " + quote(order.index.text), order.loc, it->second);
      return -1;
    }
    return sized_ ? *idx : -1;
  }

  void add_item(const ast::OrderItem& item, int32_t r) {
    bool ok = true;
    if (item.group && item.tokens.size() != 2) {
      cx_.report.error(DiagKind::BadOverlap, item.loc,
                       "an overlapped unit `( ... )` holds two actions (one forward, one backward), got " +
                           std::to_string(item.tokens.size()));
      ok = false;
    }
    std::vector<ir::Action> actions;
    for (const ast::Word& w : item.tokens) {
      auto a = action(w);
      if (a) actions.push_back(*a);
      else ok = false;
    }
    if (!ok || r < 0) return;
    auto& order = src_.ranks[static_cast<size_t>(r)];
    if (item.group) src_.overlap[static_cast<size_t>(r)].push_back(static_cast<int32_t>(order.size()));
    for (size_t i = 0; i < actions.size(); ++i) {
      order.push_back(actions[i]);
      src_.token_locs[static_cast<size_t>(r)].push_back(item.tokens[i].loc);
    }
  }

  std::optional<ir::Action> action(const ast::Word& w) {
    auto a = ir::parse_action(w.text);
    if (!a) {
      std::string fixed = case_fixed_token(w.text);
      cx_.report.error(DiagKind::BadToken, w.loc,
                       quote(w.text) +
                           " is not an action token, expected KIND<mb>.s<stage> with KIND `F`, `B`, "
                           "`W` or `BW`, e.g. `F0.s1`" +
                           (fixed.empty() ? "" : "; did you mean " + quote(fixed) + "?"));
      return std::nullopt;
    }
    if (!sized_) return a;
    if (a->stage.value >= p_.num_stages()) {
      cx_.report.error(DiagKind::NoSuchStage, w.loc,
                       quote(w.text) + " names stage " + std::to_string(a->stage.value) + ", the problem has " +
                           range_text(p_.num_stages(), "stage", "stages"));
      return std::nullopt;
    }
    if (a->mb.value >= p_.microbatches) {
      cx_.report.error(DiagKind::NoSuchMicrobatch, w.loc,
                       quote(w.text) + " names microbatch " + std::to_string(a->mb.value) + ", the problem has " +
                           range_text(p_.microbatches, "microbatch", "microbatches"));
      return std::nullopt;
    }
    return a;
  }

  // One error for all ranks without an order (a rank with nothing to do writes `rank N:`).
  void report_missing_ranks(const ast::ExplicitBlock& b, const std::map<int32_t, SourceLoc>& seen) {
    std::vector<int32_t> missing;
    for (int32_t r = 0; r < p_.ranks; ++r)
      if (!seen.count(r)) missing.push_back(r);
    if (missing.empty()) return;
    if (missing.size() == 1) {
      std::string r = std::to_string(missing[0]);
      cx_.report.error(DiagKind::MissingKey, b.loc,
                       "the explicit schedule has no order for rank `" + r + "`, expected `rank " + r +
                           ": ...` (write `rank " + r + ":` alone for a rank that does nothing)");
      return;
    }
    constexpr size_t kShown = 8;
    std::string list;
    for (size_t i = 0; i < missing.size() && i < kShown; ++i) {
      if (i > 0) list += i + 1 == missing.size() ? " and " : ", ";
      list += "`" + std::to_string(missing[i]) + "`";
    }
    if (missing.size() > kShown) list += " and " + std::to_string(missing.size() - kShown) + " more";
    cx_.report.error(DiagKind::MissingKey, b.loc,
                     "the explicit schedule has no order for ranks " + list +
                         ", expected one `rank N: ...` per rank (" + range_text(p_.ranks, "rank", "ranks") + ")");
  }

  Context& cx_;
  ScheduleSource& src_;
  const ir::Problem& p_;
  bool sized_ = false;
};

constexpr std::array<std::string_view, 3> kSources = {"explicit", "family", "solve"};
constexpr std::array<std::string_view, 8> kClauses = {
    "makespan", "max_rank_span", "bubble_ratio", "span_bubble_rate", "peak_memory", "busy", "optimal", "same_as"};

std::optional<ir::Cmp> to_cmp(std::string_view op) {
  if (op == "=" || op == "==") return ir::Cmp::Eq;
  if (op == "<=") return ir::Cmp::Le;
  if (op == "<") return ir::Cmp::Lt;
  if (op == ">=") return ir::Cmp::Ge;
  if (op == ">") return ir::Cmp::Gt;
  return std::nullopt;
}

bool is_per_rank(ir::Metric m) { return m == ir::Metric::PeakMemory || m == ir::Metric::Busy; }

class ExpectChecker {
 public:
  explicit ExpectChecker(Context& cx) : cx_(cx), p_(cx.spec.problem) {}

  void clause(const ast::Clause& c) {
    std::string_view subject = c.subject.text;
    ir::Expectation e;
    e.loc = c.subject.loc;
    if (subject == "same_as" || subject == "optimal") {
      if (c.index || c.op) {
        SourceLoc where = c.index ? c.index->loc : c.op->loc;
        cx_.report.error(DiagKind::Syntax, where,
                         subject == "optimal" ? std::string("`optimal` stands alone, write `optimal`")
                                              : std::string("`same_as` takes a family name, write `same_as NAME`"));
        return;
      }
      e.kind = subject == "optimal" ? ir::Expectation::Kind::Optimal : ir::Expectation::Kind::SameAs;
      if (c.family) e.family = std::string(c.family->text);
      cx_.spec.expect.push_back(std::move(e));
      return;
    }
    auto metric = ir::parse_metric(subject);
    if (!metric) {
      std::string hint = did_you_mean_suffix(subject, kClauses);
      cx_.report.error(DiagKind::UnknownKey, c.subject.loc,
                       "unknown metric " + quote(subject) + " in `expect`" +
                           (hint.empty() ? ", expected one of " + one_of(kClauses) : hint));
      return;
    }
    e.metric = *metric;
    std::string name = quote(ir::to_string(*metric));
    if (!c.op || !c.value) {
      cx_.report.error(DiagKind::Syntax, c.subject.loc,
                       name + " needs a comparison and a value, e.g. `" + std::string(ir::to_string(*metric)) +
                           " <= 40`");
      return;
    }
    e.cmp = *to_cmp(c.op->text);
    if (c.index && !rank_index(c, *metric, e)) return;
    const Value& v = *c.value;
    if (v.is(Value::Kind::Number)) {
      e.kind = ir::Expectation::Kind::MetricBound;
      auto x = in_problem_unit(v, *metric);
      if (!x) return;
      e.value = *x;
      e.unit = problem_unit(*metric);
      cx_.spec.expect.push_back(std::move(e));
      return;
    }
    if (!v.is(Value::Kind::List)) {
      if (!v.is(Value::Kind::Invalid))
        cx_.report.error(DiagKind::WrongType, v.loc, name + " is compared with a number, got " + describe(v));
      return;
    }
    per_rank_list(c, *metric, std::move(e));
  }

 private:
  // The dimension of a metric's values: none for the ratios.
  static std::optional<Dimension> dimension_of(ir::Metric m) {
    if (m == ir::Metric::PeakMemory) return Dimension::Memory;
    if (m == ir::Metric::BubbleRatio || m == ir::Metric::SpanBubbleRate) return std::nullopt;
    return Dimension::Time;
  }
  std::string problem_unit(ir::Metric m) const {
    auto dim = dimension_of(m);
    return !dim ? "" : *dim == Dimension::Time ? p_.time_unit : p_.memory_unit;
  }

  // A compared value in the problem's unit of the metric's dimension (the clause's unit is kept
  // beside it, so that complete_problem can convert again when the command line changes units).
  std::optional<double> in_problem_unit(const Value& v, ir::Metric metric) {
    if (v.unit.empty()) return v.number;
    std::string name = quote(ir::to_string(metric));
    auto dim = dimension_of(metric);
    const Unit* unit = find_unit(v.unit);
    if (!dim) {
      cx_.report.error(DiagKind::BadUnit, v.loc,
                       name + " is a ratio, compare it with a plain number, got " + quote(v.text));
      return std::nullopt;
    }
    if (unit->dim != *dim) {
      cx_.report.error(DiagKind::BadUnit, v.loc,
                       name + " is a " + std::string(to_string(*dim)) + ", got " + quote(v.text) + " (a " +
                           std::string(to_string(unit->dim)) + " unit)");
      return std::nullopt;
    }
    std::string target = problem_unit(metric);
    if (target.empty()) {
      cx_.report.error(DiagKind::BadUnit, v.loc,
                       name + " is compared with " + quote(v.text) + ", but the problem's " +
                           std::string(to_string(*dim)) +
                           " values have no unit; give them with units, or compare with a plain number");
      return std::nullopt;
    }
    return convert(v.number, *unit, *find_unit(target));
  }

  bool rank_index(const ast::Clause& c, ir::Metric metric, ir::Expectation& e) {
    if (!is_per_rank(metric)) {
      cx_.report.error(DiagKind::WrongType, c.index->loc,
                       quote(ir::to_string(metric)) + " is one number for the whole schedule, it takes no `[rank]`; "
                                                      "`peak_memory` and `busy` do");
      return false;
    }
    auto r = to_int(cx_, *c.index, "the rank in `[...]`", 0, ir::kMaxRanks - 1);
    if (!r) return false;
    if (cx_.problem_ok && (*r < 0 || *r >= p_.ranks)) {
      cx_.report.error(DiagKind::NoSuchRank, c.index->loc,
                       "rank " + quote(c.index->text) + " does not exist, the problem has " +
                           range_text(p_.ranks, "rank", "ranks"));
      return false;
    }
    e.rank = *r;
    return true;
  }

  // `peak_memory = [4, 3, 2, 1]`: one value per rank, compared exactly.
  void per_rank_list(const ast::Clause& c, ir::Metric metric, ir::Expectation e) {
    const Value& v = *c.value;
    std::string name = quote(ir::to_string(metric));
    if (!is_per_rank(metric) || c.index) {
      cx_.report.error(DiagKind::WrongType, v.loc,
                       name + (c.index ? " of one rank" : "") +
                           " is one number, compare it with a number, got a list (per-rank lists are for `peak_memory` "
                           "and `busy`)");
      return;
    }
    if (e.cmp != ir::Cmp::Eq) {
      cx_.report.error(DiagKind::BadValue, c.op->loc,
                       "a per-rank list is compared with `=` or `==`, got " + quote(c.op->text));
      return;
    }
    for (const Value& item : v.items) {
      if (!item.is(Value::Kind::Number)) {
        cx_.report.error(DiagKind::WrongType, item.loc, name + " lists hold numbers, got " + describe(item));
        return;
      }
      auto x = in_problem_unit(item, metric);
      if (!x) return;
      e.values.push_back(*x);
    }
    e.unit = problem_unit(metric);
    if (cx_.problem_ok && e.values.size() != static_cast<size_t>(p_.ranks)) {
      cx_.report.error(DiagKind::BadValue, v.loc,
                       name + " lists one value per rank (" + std::to_string(p_.ranks) + "), got " +
                           std::to_string(e.values.size()));
      return;
    }
    e.kind = ir::Expectation::Kind::PerRank;
    cx_.spec.expect.push_back(std::move(e));
  }

  Context& cx_;
  const ir::Problem& p_;
};

}  // namespace

void check_schedule(Context& cx, const ast::ScheduleValue& s) {
  ScheduleSource& src = cx.spec.schedule;
  const Value& head = s.head;
  if (!head.is(Value::Kind::Word)) {
    if (!head.is(Value::Kind::Invalid))
      cx.report.error(DiagKind::WrongType, head.loc,
                      "`schedule` needs `explicit { ... }`, `family NAME` or `solve`, got " + describe(head));
    return;
  }
  src.loc = head.loc;
  if (head.text == "explicit" && s.orders) {
    src.kind = SourceKind::Explicit;
    ExplicitChecker(cx, src).run(*s.orders);
    return;
  }
  if (head.text == "family" && s.family) {
    src.kind = SourceKind::Family;
    src.family = std::string(s.family->text);
    if (s.options) src.params = to_params(cx, *s.options, s.family->text);
    return;
  }
  if (head.text == "solve") {
    src.kind = SourceKind::Solve;
    if (s.options) src.params = to_params(cx, *s.options, "solve");
    return;
  }
  std::string hint = did_you_mean_suffix(head.text, kSources);
  cx.report.error(DiagKind::BadValue, head.loc,
                  "unknown schedule source " + quote(head.text) +
                      ", expected `explicit { ... }`, `family NAME` or `solve`" + hint);
}

void check_expect(Context& cx, const ast::ExpectBlock& b) {
  ExpectChecker checker(cx);
  for (const ast::Clause& c : b.clauses) checker.clause(c);
}

}  // namespace schedc::frontend::sema
