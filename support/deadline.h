#pragma once
// A point in time after which long-running work (a family's list scheduler, a greedy run) gives up:
// the solver's time limit, or an interrupt. Checking the clock costs tens of nanoseconds, so loops
// poll it every few thousand steps (Poll).

#include <atomic>
#include <chrono>
#include <cstdint>

namespace schedc {

struct Deadline {
  std::chrono::steady_clock::time_point at = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* stop = nullptr;  // an interrupt ends the work as the deadline would

  bool interrupted() const { return stop && stop->load(std::memory_order_relaxed); }
  bool passed() const { return interrupted() || std::chrono::steady_clock::now() >= at; }
  /// Whether a point in time was set (else only the interrupt ends the work).
  bool timed() const { return at != std::chrono::steady_clock::time_point::max(); }

  /// For loops: true once the deadline has passed, looking at the clock every `every` calls
  /// (a power of two; a few thousand for cheap steps, fewer for steps that scan every rank).
  class Poll {
   public:
    explicit Poll(const Deadline* d, uint32_t every = 4096) : d_(d), mask_(every - 1) {}
    bool passed() {
      if (!d_ || (++calls_ & mask_) != 0) return false;
      return d_->passed();
    }

   private:
    const Deadline* d_;
    uint32_t mask_;
    uint32_t calls_ = 0;
  };
};

}  // namespace schedc
