#pragma once
// The executor context: what generated code calls, one object per rank. Every call runs one op of
// the rank's program (a compute action, a post of a point-to-point group, a wait) and records its
// interval for the measured timeline. The state lives in ContextImpl (context_impl.h); this header
// stays small so that generated sources compile fast.

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "schedrt/action.h"

namespace schedrt {

class ContextImpl;

class Context {
 public:
  explicit Context(ContextImpl& impl) : impl_(impl) {}

  /// F(mb, stage): reads the stage's input activation, writes its output (or the loss).
  void forward(int32_t mb, int32_t stage);
  /// B(mb, stage): the input gradient only.
  void backward_input(int32_t mb, int32_t stage);
  /// W(mb, stage): the weight gradient only.
  void backward_weight(int32_t mb, int32_t stage);
  /// BW(mb, stage): both.
  void backward(int32_t mb, int32_t stage);
  /// R(mb, stage): recomputes a checkpointed forward before its backward.
  void recompute(int32_t mb, int32_t stage);
  /// An overlapped F&B unit: forward `f` and backward `b` (B or BW) as one unit.
  void overlapped(Action f, Action b);
  /// Posts rank-local group `group`: its sends and receives start, and this returns at once.
  void post(int32_t group, std::initializer_list<Transfer> transfers) {
    post(group, transfers.begin(), transfers.size());
  }
  void post(int32_t group, const Transfer* transfers, size_t count);
  /// Waits until the outputs of `needs` (producers of transfers in `group`) have arrived.
  void wait(int32_t group, std::initializer_list<Action> needs) { wait(group, needs.begin(), needs.size()); }
  void wait(int32_t group, const Action* needs, size_t count);
  /// Waits for every transfer still in flight; the last call of a rank's program.
  void wait_all();

  ContextImpl& impl() { return impl_; }

 private:
  ContextImpl& impl_;
};

}  // namespace schedrt
