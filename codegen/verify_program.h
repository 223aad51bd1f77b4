#pragma once
// The verifier of lowered programs. It checks that a Program runs exactly its schedule (the same
// compute units in the same order on every rank, one message per cross-rank dependency and none
// between stages on one rank, each send posted after its producer, each receive waited before its
// consumer), that every channel is first-in first-out consistent (the k-th send and the k-th
// receive are the same message), that receive buffers keep every rank within its memory cap, and
// that the program cannot deadlock.
//
// Deadlock freedom is checked under the strictest semantics a backend has: a transfer completes
// only when both its send and its receive are active (rendezvous, as NCCL without buffering), and
// each rank's groups become active one at a time in posting order (one NCCL stream per rank); a
// wait waits for its whole group. The program is executed in that model to a fixed point; it must
// finish. Backends that are more permissive (buffered sends, several streams, waits for single
// transfers) only enable transfers earlier, so they cannot deadlock either.
//
// Why codegen::lower passes: every rank posts its transfers in one global order O that extends the
// execution's causal order. Let M be the first transfer in O that never completes. On both of its
// ranks every transfer posted before M is earlier in O, hence complete, so M's groups are the
// active ones as soon as they are posted; and neither rank can be stuck before posting M, since
// every wait before that point waits for transfers earlier in O. So M completes: contradiction.

#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/schedule.h"
#include "support/diagnostics.h"

namespace schedc::codegen {

/// One reason a lowered program is rejected.
struct ProgramIssue {
  DiagKind kind = DiagKind::Internal;
  /// True for a malformed or deadlocking program (a bug in schedc's lowering); false for a user
  /// error (receive buffers push a rank above its memory cap).
  bool is_bug = true;
  int32_t rank = -1;
  int32_t op = -1;
  std::string message;
};

/// Every issue found, structure first; the deadlock and memory checks run only on a well-formed
/// program.
std::vector<ProgramIssue> verify_program(const ir::Schedule& s, const ir::Program& p);

}  // namespace schedc::codegen
