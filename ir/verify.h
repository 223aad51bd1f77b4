#pragma once
// The schedule verifier: every required action exactly once, on its rank, in an order consistent
// with the dependencies, without deadlock, within every cap; a reference, so it uses no ir::DepGraph.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/schedule.h"
#include "ir/simulate.h"
#include "support/diagnostics.h"

namespace schedc::ir {

/// One reason a schedule is invalid, naming the rank, the position and the action when known.
struct VerifyIssue {
  DiagKind kind;
  int32_t rank = -1;      // -1: no particular rank
  int32_t position = -1;  // -1: no particular position
  std::optional<Action> action;
  std::string message;  // lowercase, no location prefix
};

struct VerifyOptions {
  bool check_memory = true;
  size_t max_issues = 20;
  /// When set, receives the simulation the deadlock check ran (left empty when an earlier check
  /// failed), so that a caller who needs the timeline too does not simulate again.
  SimResult* simulation = nullptr;
};

/// All issues found, in a stable order (structure, tokens, completeness, order, deadlock, memory).
/// Later checks run only when the earlier ones pass, so that each message has a clear cause.
std::vector<VerifyIssue> verify(const Schedule& s, const VerifyOptions& options = {});

/// Rank `rank`'s order on one or more lines, the action at `mark` shown as `>>F3.s1<<`; a long
/// order shows only the dozen actions on either side of the mark and counts the rest.
std::string render_order(const Schedule& s, int32_t rank, int32_t mark);

}  // namespace schedc::ir
