#include "tools/schedc/os.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#include <sys/prctl.h>
#endif

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "tools/schedc/interrupt.h"

namespace schedc::driver {

namespace {

// How long a child group may take to end after a forwarded signal before it is killed.
constexpr auto kStopGrace = std::chrono::seconds(5);

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* args, int output_fd, pid_t parent, const sigset_t& mask) {
  ::setpgid(0, 0);
#ifdef __linux__
  // Killed with schedc, however schedc dies; if schedc died before this line, do not run at all.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
#else
  (void)parent;
#endif
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGINT, &dfl, nullptr);
  ::sigaction(SIGTERM, &dfl, nullptr);
  // In a process group of its own, a child that read the terminal would be stopped.
  int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0 && in != 0) ::dup2(in, 0), ::close(in);
  if (output_fd >= 0) {
    ::dup2(output_fd, 1);
    ::dup2(output_fd, 2);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::execvp(args[0], args);
  ::_exit(127);
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string host = buf;
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
  return host;
}

}  // namespace

pid_t start_process(const std::vector<std::string>& argv, int output_fd) {
  enter_child_phase();
  if (stop_signal() != 0 || argv.empty()) return -1;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  // Signals wait until the child is registered, so that none misses it.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  pid_t pid = ::fork();
  if (pid == 0) exec_child(args.data(), output_fd, parent, old);
  if (pid > 0) {
    ::setpgid(pid, pid);  // also here: the group must exist before a signal is forwarded to it
    add_child_group(pid);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pid;
}

int wait_process(pid_t pid) {
  if (pid < 0) return 127;
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> stopping;
  bool killed = false;
  siginfo_t info{};
  for (;;) {
    // WNOWAIT: the leader stays a zombie, so its group id cannot be reused while we signal it.
    info = siginfo_t{};
    int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (stop_signal() != 0) {
      if (!stopping) stopping = Clock::now();
      if (!killed && Clock::now() - *stopping > kStopGrace) ::kill(-pid, SIGKILL), killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // After a stop or a crash, what the child left in its group (mpiexec's ranks) dies with it.
  bool abnormal = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
  if (stop_signal() != 0 || abnormal) ::kill(-pid, SIGKILL);
  remove_child_group(pid);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w != pid) return 127;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

int run_process(const std::vector<std::string>& argv, int output_fd) {
  return wait_process(start_process(argv, output_fd));
}

int open_log(const std::string& fallback_path) {
#ifdef __linux__
  int fd = ::memfd_create("schedc-log", MFD_CLOEXEC);
  if (fd >= 0) return fd;
#endif
  return ::open(fallback_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

std::string read_log(int fd) {
  std::string text;
  if (fd < 0) return text;
  char buf[8192];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return text;
}

std::string temp_owner() { return host_name() + "-" + std::to_string(::getpid()); }

bool is_stale_owner(std::string_view owner) {
  size_t dash = owner.rfind('-');
  std::string_view host = dash == std::string_view::npos ? std::string_view{} : owner.substr(0, dash);
  std::string_view digits = dash == std::string_view::npos ? owner : owner.substr(dash + 1);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return false;
  // Another host's process cannot be asked whether it runs (a cache on a shared file system).
  if (!host.empty() && host != host_name()) return false;
  pid_t pid = static_cast<pid_t>(std::stol(std::string(digits)));
  if (pid <= 0 || pid == ::getpid()) return false;
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::string write_file(const std::string& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::strerror(errno);
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? std::strerror(errno) : "nothing was written";
      ::close(fd);
      return why;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return std::strerror(errno);
  return "";
}

}  // namespace schedc::driver
