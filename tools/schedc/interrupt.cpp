#include "tools/schedc/interrupt.h"

#include <csignal>
#include <cstring>

#include <unistd.h>

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

void write_stderr(const char* text) {
  ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)n;
}

extern "C" void on_signal(int sig) {
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

PendingOutput::PendingOutput(const std::string& tmp) {
  if (!g_installed.load() || tmp.size() >= sizeof g_pending) return;
  std::memcpy(g_pending, tmp.c_str(), tmp.size() + 1);
  g_has_pending.store(true);
}

PendingOutput::~PendingOutput() { g_has_pending.store(false); }

}  // namespace schedc::driver
