#pragma once
// Lowering: a verified schedule becomes an ir::Program with explicit point-to-point messages.
//
// Every cross-rank dependency (a forward's activation to the next stage, a backward's input
// gradient to the previous stage) becomes one message; dependencies between two stages on the same
// rank (the V-turn) stay local. All messages are put in one global order (simulated send time,
// ties broken causally) and every rank posts its transfers in that order, so that on every channel
// the k-th send and the k-th receive are the same message, and the program is deadlock-free even
// when a send completes only once its receive is posted (see verify_program.h for the proof and
// its check). Two orders (see LowerStrategy): by send time, receiving early to overlap transfers
// with compute, or by need time, receiving just in time. Receive buffers held while other compute
// runs count as activation memory, and Auto falls back to the second when the first would break a
// rank's memory cap.

#include "ir/program.h"
#include "ir/schedule.h"

namespace schedc::codegen {

enum class LowerStrategy {
  /// Prefetch unless that breaks a memory cap, then JustInTime.
  Auto,
  /// Messages in simulated send-time order; a receive is posted with the next send after it (one
  /// group, like Megatron's send_forward_recv_backward) or before its consumer, so transfers
  /// overlap compute, at the price of receive buffers held meanwhile.
  Prefetch,
  /// Messages in simulated need-time order; a receive is posted right before its consumer and a
  /// send once everything ordered before it is posted: no receive buffer is held while other
  /// compute runs (the sender keeps the data, as in PyTorch's and Megatron's runtimes).
  JustInTime,
  /// No grouping, no ordering: each receive posted and waited right before its consumer, each
  /// send posted and waited right after its producer. Deadlocks under rendezvous for most
  /// schedules; exists to test verify_program and to show why the others are needed.
  Naive,
};

struct LowerOptions {
  LowerStrategy strategy = LowerStrategy::Auto;
};

std::string_view to_string(LowerStrategy s);

/// Lowers a schedule that ir::verify accepted. The result still needs verify_program.
ir::Program lower(const ir::Schedule& s, const LowerOptions& options = {});

}  // namespace schedc::codegen
