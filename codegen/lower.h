#pragma once
// Lowering: a verified schedule becomes an ir::Program with explicit point-to-point messages.
//
// Every cross-rank dependency (a forward's activation to the next stage, a backward's input
// gradient to the previous stage) becomes one message; dependencies between two stages on the same
// rank (the V-turn) stay local. All messages are put in one global order (simulated send time,
// ties broken causally) and every rank posts its transfers in that order, so that on every channel
// the k-th send and the k-th receive are the same message, and the program is deadlock-free even
// when a send completes only once its receive is posted (see verify_program.h for the proof and
// its check). Sends are posted right after their producer; receives are posted as late as that
// order allows (together with the next send, as one group, or just before their consumer), so that
// receive buffers are held as briefly as possible. Buffers held while other compute runs count as
// activation memory.

#include "ir/program.h"
#include "ir/schedule.h"

namespace schedc::codegen {

struct LowerOptions {
  /// The lowering of a runtime without grouping or ordering: each receive posted and waited right
  /// before its consumer, each send posted and waited right after its producer. Deadlocks under
  /// rendezvous for most schedules; exists to test verify_program and to show why grouping matters.
  bool naive = false;
};

/// Lowers a schedule that ir::verify accepted. The result still needs verify_program.
ir::Program lower(const ir::Schedule& s, const LowerOptions& options = {});

}  // namespace schedc::codegen
