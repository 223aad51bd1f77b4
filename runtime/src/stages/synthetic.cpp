// The synthetic stage holds its rank for each action's cost (cost units x ms_per_unit), for
// comparing measured timelines with simulated ones; the noop stage does nothing at all.
//
// "Holds" is a sleep until the deadline (with the least timer slack), not a busy-wait: with more
// ranks than cores (8 ranks on 2 cores in CI) spinning ranks take the cores that the ranks just
// woken by a message need, and a spinning thread that has used up its share is scheduled late, so
// a busy-wait overshoots by milliseconds under load where a sleep overshoots by tens of
// microseconds. The duration is wall-clock time either way, as a device's would be.

#include <sys/prctl.h>

#include <chrono>
#include <thread>

#include "stages/stages_internal.h"

namespace schedrt {
namespace {

using Clock = std::chrono::steady_clock;

void hold_for(double ms) {
  if (ms <= 0) return;
  // Timer slack (50 us by default) would be added to every action; ask for the least.
  thread_local bool slack_set = (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0), true);
  (void)slack_set;
  std::this_thread::sleep_until(Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(ms * 1e6)));
}

class SyntheticStage final : public Stage {
 public:
  SyntheticStage(const StageConfig& c, int32_t stage) {
    size_t s = static_cast<size_t>(stage);
    auto at = [&](const std::vector<double>& v, double fallback) { return s < v.size() ? v[s] : fallback; };
    f_ = at(c.cost_f, 1) * c.ms_per_unit;
    b_ = at(c.cost_b, 1) * c.ms_per_unit;
    w_ = at(c.cost_w, 1) * c.ms_per_unit;
    fb_ = c.cost_fb.empty() ? -1 : at(c.cost_fb, 0) * c.ms_per_unit;
    r_ = c.cost_r.empty() ? f_ : at(c.cost_r, 0) * c.ms_per_unit;
    bytes_ = static_cast<size_t>(c.hidden) * static_cast<size_t>(c.batch) * (c.dtype == Dtype::F64 ? 8 : 4);
  }

  size_t boundary_bytes() const override { return bytes_; }
  void forward(int32_t, const void*, void*) override { hold_for(f_); }
  void backward_input(int32_t, const void*, void*) override { hold_for(b_); }
  void backward_weight(int32_t) override { hold_for(w_); }
  void backward(int32_t, const void*, void*) override { hold_for(b_ + w_); }
  void recompute(int32_t) override { hold_for(r_); }
  void overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                  void* grad_in) override {
    auto* o = dynamic_cast<SyntheticStage*>(&other);
    double backward_ms = o ? (b.kind == Kind::BW ? o->b_ + o->w_ : o->b_) : 0;
    hold_for(fb_ >= 0 ? fb_ : f_ + backward_ms);
  }

 private:
  double f_ = 0, b_ = 0, w_ = 0, fb_ = -1, r_ = 0;
  size_t bytes_ = 0;
};

class NoopStage final : public Stage {
 public:
  size_t boundary_bytes() const override { return 0; }
  void forward(int32_t, const void*, void*) override {}
  void backward_input(int32_t, const void*, void*) override {}
  void backward_weight(int32_t) override {}
};

}  // namespace

std::unique_ptr<Stage> make_synthetic_stage(const StageConfig& config, int32_t stage) {
  return std::make_unique<SyntheticStage>(config, stage);
}

std::unique_ptr<Stage> make_noop_stage(const StageConfig&, int32_t) { return std::make_unique<NoopStage>(); }

}  // namespace schedrt
