#include "ir/expect.h"

#include <algorithm>
#include <cmath>

#include "support/numbers.h"

namespace schedc::ir {

std::string_view to_string(Metric m) {
  switch (m) {
    case Metric::Makespan: return "makespan";
    case Metric::MaxRankSpan: return "max_rank_span";
    case Metric::BubbleRatio: return "bubble_ratio";
    case Metric::SpanBubbleRate: return "span_bubble_rate";
    case Metric::PeakMemory: return "peak_memory";
    case Metric::Busy: return "busy";
  }
  return "makespan";
}

std::optional<Metric> parse_metric(std::string_view s) {
  for (Metric m : {Metric::Makespan, Metric::MaxRankSpan, Metric::BubbleRatio, Metric::SpanBubbleRate,
                   Metric::PeakMemory, Metric::Busy})
    if (to_string(m) == s) return m;
  if (s == "max-rank-span") return Metric::MaxRankSpan;
  if (s == "bubble-ratio") return Metric::BubbleRatio;
  if (s == "span-bubble-rate") return Metric::SpanBubbleRate;
  if (s == "peak-memory") return Metric::PeakMemory;
  return std::nullopt;
}

std::string_view to_string(Cmp c) {
  switch (c) {
    case Cmp::Eq: return "==";
    case Cmp::Le: return "<=";
    case Cmp::Lt: return "<";
    case Cmp::Ge: return ">=";
    case Cmp::Gt: return ">";
  }
  return "==";
}

namespace {

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

bool holds(double actual, Cmp c, double want) {
  switch (c) {
    case Cmp::Eq: return near(actual, want);
    case Cmp::Le: return actual <= want || near(actual, want);
    case Cmp::Lt: return actual < want && !near(actual, want);
    case Cmp::Ge: return actual >= want || near(actual, want);
    case Cmp::Gt: return actual > want && !near(actual, want);
  }
  return false;
}

const std::vector<double>* per_rank(const Metrics& m, Metric metric) {
  if (metric == Metric::PeakMemory) return &m.peak_memory;
  if (metric == Metric::Busy) return &m.busy;
  return nullptr;
}

double scalar(const Metrics& m, Metric metric) {
  switch (metric) {
    case Metric::Makespan: return m.makespan;
    case Metric::MaxRankSpan: return m.max_rank_span;
    case Metric::BubbleRatio: return m.bubble_ratio;
    case Metric::SpanBubbleRate: return m.span_bubble_rate;
    default: break;
  }
  const auto* v = per_rank(m, metric);
  return v->empty() ? 0.0 : *std::max_element(v->begin(), v->end());
}

std::string list_text(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_number(v[i]);
  return s + "]";
}

}  // namespace

bool check_metric_expectations(const std::vector<Expectation>& expect, const Metrics& m, Diagnostics& diags) {
  bool ok = true;
  for (const Expectation& e : expect) {
    if (e.kind == Expectation::Kind::MetricBound) {
      std::string name(to_string(e.metric));
      double actual;
      if (e.rank >= 0) {
        const auto* v = per_rank(m, e.metric);
        if (!v || static_cast<size_t>(e.rank) >= v->size()) {
          diags.error(DiagKind::NoSuchRank, e.loc,
                      "expectation names rank " + std::to_string(e.rank) + ", the schedule has " +
                          std::to_string(m.busy.size()) + " ranks");
          ok = false;
          continue;
        }
        actual = (*v)[static_cast<size_t>(e.rank)];
        name += "[" + std::to_string(e.rank) + "]";
      } else {
        actual = scalar(m, e.metric);
      }
      if (holds(actual, e.cmp, e.value)) continue;
      std::string unit = e.unit.empty() ? "" : " " + e.unit;
      diags.error(DiagKind::ExpectFailed, e.loc,
                  "expected " + name + " " + std::string(to_string(e.cmp)) + " " + format_number(e.value) + unit +
                      ", got " + backtick(format_number(actual) + unit));
      ok = false;
    } else if (e.kind == Expectation::Kind::PerRank) {
      const auto* v = per_rank(m, e.metric);
      bool same = v && v->size() == e.values.size() &&
                  std::equal(v->begin(), v->end(), e.values.begin(), [](double a, double b) { return near(a, b); });
      if (same) continue;
      diags.error(DiagKind::ExpectFailed, e.loc,
                  "expected " + std::string(to_string(e.metric)) + " = " + list_text(e.values) +
                      (e.unit.empty() ? "" : " " + e.unit) + ", got " +
                      backtick((v ? list_text(*v) : "?") + (e.unit.empty() ? "" : " " + e.unit)));
      ok = false;
    }
  }
  return ok;
}

}  // namespace schedc::ir
