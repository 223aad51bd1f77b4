#pragma once
// ir::Program: a verified schedule lowered to what each rank executes. Per rank, a straight list
// of compute ops (one action or an overlapped F&B unit), posts of point-to-point groups (one NCCL
// group, or one batch of isend/irecv: the group's transfers progress concurrently), waits, and a
// final wait for everything still in flight. Made by codegen::lower, proved deadlock-free by
// codegen::verify_program, printed by `schedc schedule --format program`, and turned into C++ by
// codegen::emit_cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/action.h"
#include "ir/problem.h"

namespace schedc::ir {

/// What a message carries: a forward's output activation, or a backward's input gradient.
enum class MessageKind : uint8_t { Activation, Gradient };

std::string_view to_string(MessageKind k);

using MessageId = StrongId<struct MessageTag>;

/// One transfer between two ranks: the output of `producer` that `consumer` reads. Messages on
/// the channel (src, dst) are matched first-in first-out: the seq-th send of src to dst and the
/// seq-th receive of dst from src are this message.
struct Message {
  MessageKind kind = MessageKind::Activation;
  Action producer;
  Action consumer;
  RankId src, dst;
  int32_t seq = 0;
  /// Memory units a receive buffer holds (memory.F of the consumer's stage: an upper bound, since
  /// a boundary tensor is never larger than a stage's activations).
  double size = 0;
};

/// Transfers that one rank posts together; all of them progress concurrently, and the group is
/// complete when every one is. Sends and receives are listed in channel order.
struct Group {
  std::vector<MessageId> transfers;
};

enum class OpKind : uint8_t { Compute, Post, Wait, WaitAll };

struct Op {
  OpKind kind = OpKind::Compute;
  /// Compute: the action, and the second action of an overlapped F&B unit.
  Action action;
  std::optional<Action> partner;
  /// The schedule position this op belongs to (its compute, the producer of a send, the consumer
  /// of a receive); -1 for WaitAll. Used for `#line` directives and messages.
  int32_t position = -1;
  /// Post, Wait: the rank-local group index.
  int32_t group = -1;
  /// Wait: the received messages of `group` that the next compute reads. A backend may wait for
  /// just these or for the whole group; deadlock freedom is proved for the whole group.
  std::vector<MessageId> needs;
};

struct RankProgram {
  std::vector<Op> ops;
  std::vector<Group> groups;
  /// Peak activation memory including receive buffers held while other compute runs.
  double peak_memory = 0;
};

struct Program {
  Problem problem;
  /// How the program was lowered ("prefetch", "just-in-time", "naive"), for the text form.
  std::string strategy;
  std::vector<Message> messages;
  std::vector<RankProgram> ranks;

  const Message& message(MessageId id) const { return messages[id.index()]; }
  size_t num_ops() const;
  size_t num_groups() const;
};

/// True when the message leaves `rank` (a send from its point of view).
inline bool is_send_on(const Message& m, RankId rank) { return m.src == rank; }

/// The text form (`schedc schedule --format program`): a header, then per rank one numbered op
/// per line: `F3.s1`, `(F7.s0 B3.s7)`, `post g4 {recv B0.s1 <- r1 #0, send F3.s0 -> r1 #3}`,
/// `wait g4 (B0.s1)`, `wait all`. Ends with a newline.
std::string format_program(const Program& p);

/// One op of `rank` as printed in the text form (without its number).
std::string format_op(const Program& p, RankId rank, const Op& op);

/// One transfer as printed: `send F3.s0 -> r1 #3` or `recv B0.s1 <- r1 #0`.
std::string format_transfer(const Message& m, RankId on_rank);

}  // namespace schedc::ir
