#pragma once
// Actions and point-to-point transfers: the plain values generated executors pass to the Context.
// Only <cstdint>, so that generated sources compile fast.

#include <cstdint>

namespace schedrt {

/// F: forward; B: input gradient; W: weight gradient; BW: fused backward; R: recompute a
/// checkpointed forward before its backward (docs/design.md section 3).
enum class Kind : uint8_t { F = 0, B = 1, W = 2, BW = 3, R = 4 };

/// One action of the schedule: kind, microbatch, stage.
struct Action {
  Kind kind = Kind::F;
  int32_t mb = 0;
  int32_t stage = 0;

  friend constexpr bool operator==(const Action&, const Action&) = default;
};

constexpr Action F(int32_t mb, int32_t stage) { return {Kind::F, mb, stage}; }
constexpr Action B(int32_t mb, int32_t stage) { return {Kind::B, mb, stage}; }
constexpr Action W(int32_t mb, int32_t stage) { return {Kind::W, mb, stage}; }
constexpr Action BW(int32_t mb, int32_t stage) { return {Kind::BW, mb, stage}; }
constexpr Action R(int32_t mb, int32_t stage) { return {Kind::R, mb, stage}; }

/// True for the actions that produce an input gradient (B and BW).
constexpr bool is_backward(Kind k) { return k == Kind::B || k == Kind::BW; }

enum class Dir : uint8_t { Send, Recv };

/// One side of a point-to-point transfer: the output of `producer` (an activation when it is an
/// F, an input gradient when it is a B or BW) sent to or received from `peer`, as the `seq`-th
/// message of that channel (channels are first-in first-out per ordered pair of ranks).
struct Transfer {
  Dir dir = Dir::Send;
  Action producer;
  int32_t peer = 0;
  int32_t seq = 0;
};

constexpr Transfer send(Action producer, int32_t peer, int32_t seq) { return {Dir::Send, producer, peer, seq}; }
constexpr Transfer recv(Action producer, int32_t peer, int32_t seq) { return {Dir::Recv, producer, peer, seq}; }

}  // namespace schedrt
