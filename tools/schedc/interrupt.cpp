#include "tools/schedc/interrupt.h"

#include <cassert>
#include <csignal>
#include <cstring>

#include <unistd.h>

#include "support/internal_error.h"

namespace schedc::driver {

namespace {

static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler may only touch lock-free atomics");

std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0};
std::atomic<bool> g_installed{false};
// The temporary output being written; only async-signal-safe calls read it (unlink).
char g_pending[4096];
std::atomic<bool> g_has_pending{false};
// Child processes (issue: processes and files): once any was started, signals stop schedc.
std::atomic<bool> g_child_phase{false};
std::atomic<int> g_stop_signal{0};
constexpr int kMaxChildGroups = 64;
std::atomic<pid_t> g_child_groups[kMaxChildGroups];  // 0 = a free slot
static_assert(std::atomic<pid_t>::is_always_lock_free, "the signal handler reads the child groups");

void signal_child_groups(int sig) {
  for (std::atomic<pid_t>& g : g_child_groups)
    if (pid_t group = g.load(); group > 0) ::kill(-group, sig);
}

void write_stderr(const char* text) {
  ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)n;
}

extern "C" void on_signal(int sig) {
  if (g_child_phase.load()) {
    int previous = g_signals.fetch_add(1);
    g_stop.store(true);
    int none = 0;
    g_stop_signal.compare_exchange_strong(none, sig);
    if (previous == 0) {
      signal_child_groups(sig);
      write_stderr("\nschedc: interrupted: stopping the processes schedc started (interrupt again to kill them)\n");
      return;
    }
    signal_child_groups(SIGKILL);
    if (g_has_pending.load()) ::unlink(g_pending);
    write_stderr("schedc: interrupted again: killing the processes schedc started and aborting\n");
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  if (g_signals.fetch_add(1) == 0) {
    g_stop.store(true);
    write_stderr("\nschedc: interrupted: ending the search; the best schedule found so far will be written "
                 "(interrupt again to abort)\n");
    return;
  }
  if (g_has_pending.load()) ::unlink(g_pending);
  write_stderr("schedc: interrupted again: aborting, nothing written\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

const std::atomic<bool>* install_interrupt_handlers() {
  if (!g_installed.exchange(true)) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }
  return &g_stop;
}

bool interrupted() { return g_stop.load(); }

void enter_child_phase() {
  install_interrupt_handlers();
  g_child_phase.store(true);
}

void add_child_group(pid_t group) {
  for (std::atomic<pid_t>& g : g_child_groups) {
    pid_t free_slot = 0;
    if (g.compare_exchange_strong(free_slot, group)) return;
  }
  SCHEDC_INTERNAL_ERROR("more child processes at once than the signal handler tracks");
}

void remove_child_group(pid_t group) {
  for (std::atomic<pid_t>& g : g_child_groups) {
    pid_t expected = group;
    if (g.compare_exchange_strong(expected, 0)) return;
  }
}

int stop_signal() { return g_stop_signal.load(); }

void end_if_stopped() {
  int sig = g_stop_signal.load();
  if (sig == 0) return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

PendingOutput::PendingOutput(const std::string& tmp) {
  if (!g_installed.load() || tmp.size() >= sizeof g_pending) return;
  std::memcpy(g_pending, tmp.c_str(), tmp.size() + 1);
  g_has_pending.store(true);
}

PendingOutput::~PendingOutput() { g_has_pending.store(false); }

}  // namespace schedc::driver
