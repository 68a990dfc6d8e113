// tools/audit/plugin_child.cpp — see plugin_child.hpp (child_process_door).
#include "plugin_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ropecheck::plugin {
namespace {

// The entries a request calls.
enum : std::int32_t { op_apply = 0, op_apply_qk = 1 };

// The first page of the mapping: the request and the child's answer.
struct control {
  std::int64_t tokens;
  std::int32_t op;    // op_apply (apply or apply2) or op_apply_qk
  std::int32_t rows;  // position rows in the mapping ([rows][tokens])
  std::int32_t heads;  // apply_qk: the query heads
  std::int32_t k_heads;  // apply_qk: the key heads
  std::int32_t inverse;
  std::uint64_t x_bytes, y_bytes;  // apply_qk: q and k, q_out and k_out, one after the other
  std::uint64_t q_bytes;           // apply_qk: q's (and q_out's) share of x_bytes (y_bytes)
  std::int32_t rc;
  volatile std::int32_t wrote_past_y;  // set by the child's SIGSEGV handler
};

// One call of either entry as the mapping carries it: the inputs one after the other where x goes, the
// outputs where y goes (the last one ending at the guard page).
struct request {
  std::int32_t op = op_apply;
  const char* entry = "ropecheck_plugin_apply";  // the symbol, in every message
  const char* last_output = "y";                 // the buffer that ends at the guard page
  std::span<const unsigned char> in[2];
  std::span<unsigned char> out[2];
  std::span<const std::int64_t> positions;  // rows * tokens
  std::size_t tokens = 0, rows = 1;
  int heads = 1, k_heads = 0;
  bool inverse = false;
  std::string shape;  // " (n tokens, h heads)", for the messages
  [[nodiscard]] std::size_t in_bytes() const { return in[0].size() + in[1].size(); }
  [[nodiscard]] std::size_t out_bytes() const { return out[0].size() + out[1].size(); }
};

std::string tokens_text(std::size_t tokens) { return std::to_string(tokens) + (tokens == 1 ? " token, " : " tokens, "); }

std::size_t page_size() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
std::size_t round_up(std::size_t n, std::size_t page) { return (n + page - 1) / page * page; }

// The child's guard page, for its signal handler.
unsigned char* g_guard = nullptr;
std::size_t g_page = 0;
control* g_control = nullptr;

void on_fault(int sig, siginfo_t* info, void*) {
  const auto* a = static_cast<unsigned char*>(info->si_addr);
  if (g_guard && a >= g_guard && a < g_guard + g_page && g_control) g_control->wrote_past_y = 1;
  // SA_RESETHAND: returning re-executes the faulting access with the default action (the child dies
  // on `sig`, which the parent reports).
  (void)sig;
}

// In a freshly forked child: the crash signals back to their default action, so that a plugin's crash
// kills the child with its own signal, which the parent names. A host process may have installed
// handlers that the child inherits and that end the process with an exit status instead (ASan's and
// UBSan's SEGV/BUS/FPE handlers print a report and exit(1); crash reporters do the same); the parent
// would then misreport a crash as a plugin calling exit. tests/audit/plugin_child_test.cpp checks both doors.
void default_crash_signals() {
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) sigaction(sig, &dfl, nullptr);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = strsignal(sig);
  return std::string("SIG") + (abbrev ? abbrev : "?") + " (signal " + std::to_string(sig) + (desc ? std::string(", ") + desc : "") + ")";
}

}  // namespace

struct child_process_door::impl {
  loaded_plugin plugin;
  double timeout;
  int max_restarts;
  std::size_t page = page_size();
  // The mapping: [control page][positions: rows * tokens][x][y ... | guard page].
  unsigned char* map = nullptr;
  std::size_t map_bytes = 0, cap_tokens = 0, cap_bytes = 0;
  pid_t child = -1;
  int req = -1, resp = -1;  // parent's ends
  int forks = 0, crashes = 0;
  bool closed = false;
  std::string closed_why{};
  std::optional<apply_outcome> failure{};

  control* ctl() const { return reinterpret_cast<control*>(map); }
  std::int64_t* positions() const { return reinterpret_cast<std::int64_t*>(map + page); }
  unsigned char* x() const { return map + page + round_up(cap_tokens * 8, page); }
  unsigned char* guard() const { return map + map_bytes - page; }

  void unmap() {
    if (map) munmap(map, map_bytes);
    map = nullptr;
  }

  void reserve(std::size_t tokens, std::size_t bytes) {
    if (map && tokens <= cap_tokens && bytes <= cap_bytes) return;
    stop();
    unmap();
    cap_tokens = std::max<std::size_t>(tokens, 1024);
    cap_bytes = round_up(std::max<std::size_t>(bytes, 1 << 20), page);
    map_bytes = page + round_up(cap_tokens * 8, page) + 2 * cap_bytes + page;
    void* m = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error(std::string("plugin door: mmap: ") + std::strerror(errno));
    map = static_cast<unsigned char*>(m);
    if (mprotect(guard(), page, PROT_NONE) != 0)
      throw std::runtime_error(std::string("plugin door: mprotect: ") + std::strerror(errno));
  }

  [[noreturn]] void serve(int in, int out) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(2, 1);  // the plugin must not print to stdout; if it does, it goes to stderr
    default_crash_signals();  // SIGSEGV and SIGBUS then get on_fault below
    g_guard = guard();
    g_page = page;
    g_control = ctl();
    static unsigned char alt[64 * 1024];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    char b;
    while (read(in, &b, 1) == 1) {
      control* c = ctl();
      unsigned char* y = guard() - c->y_bytes;  // y (apply_qk: q_out, k_out) ends at the guard page
      if (c->op == op_apply_qk)
        c->rc = plugin.apply_qk_raw(x(), x() + c->q_bytes, y, y + c->q_bytes, positions(), c->tokens, c->heads,
                                    c->k_heads);
      else
        c->rc = plugin.apply_rows_raw(x(), y, positions(), c->rows, c->tokens, c->heads, c->inverse != 0);
      if (write(out, &b, 1) != 1) break;
    }
    _exit(0);
  }

  void start() {
    // One socket pair (not pipes): the parent sends with MSG_NOSIGNAL, so a dead child is an error
    // code, not a SIGPIPE of ropecheck.
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      throw std::runtime_error(std::string("plugin door: socketpair: ") + std::strerror(errno));
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("plugin door: fork: ") + std::strerror(errno));
    if (pid == 0) {
      close(fds[0]);
      serve(fds[1], fds[1]);
    }
    close(fds[1]);
    child = pid;
    req = resp = fds[0];
    ++forks;
  }

  // Ends the child (if any) and returns its wait status (or 0).
  int stop(bool kill_it = true) {
    if (req >= 0) close(req);
    req = resp = -1;
    int status = 0;
    if (child > 0) {
      if (kill_it) kill(child, SIGKILL);
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      child = -1;
    }
    return status;
  }

  apply_outcome fail(apply_outcome o) {
    if (!failure) failure = o;
    return o;
  }

  apply_outcome call(const apply_call& c) {
    request r;
    r.tokens = c.positions.size();
    if (c.x.size() != c.y.size()) throw std::invalid_argument("plugin door: x and y differ in size");
    r.rows = static_cast<std::size_t>(c.rows());
    if (r.rows > 1 && c.position_rows.size() != r.rows * r.tokens)
      throw std::invalid_argument("plugin door: position_rows must hold rows * tokens positions");
    r.in[0] = c.x;
    r.out[0] = c.y;
    r.positions = r.rows > 1 ? c.position_rows : c.positions;
    r.heads = c.heads;
    r.inverse = c.inverse;
    r.shape = " (" + tokens_text(r.tokens) + std::to_string(c.heads) + " heads)";
    return exchange(r);
  }

  apply_outcome call_qk(const qk_call& c) {
    request r;
    r.op = op_apply_qk;
    r.entry = "ropecheck_plugin_apply_qk";
    r.last_output = "k_out";
    r.tokens = c.positions.size();
    if (c.q.size() != c.q_out.size() || c.k.size() != c.k_out.size())
      throw std::invalid_argument("plugin door: q and q_out, or k and k_out, differ in size");
    r.in[0] = c.q;
    r.in[1] = c.k;
    r.out[0] = c.q_out;
    r.out[1] = c.k_out;
    r.positions = c.positions;
    r.heads = c.q_heads;
    r.k_heads = c.k_heads;
    r.shape = " (" + tokens_text(r.tokens) + std::to_string(c.q_heads) + " query and " + std::to_string(c.k_heads) +
              " key heads)";
    return exchange(r);
  }

  apply_outcome exchange(const request& c) {
    if (closed) return fail({apply_status::unavailable, 0, 0, closed_why});
    const std::size_t tokens = c.tokens, rows = c.rows;
    reserve(tokens * rows, std::max(c.in_bytes(), c.out_bytes()));
    if (child < 0) start();
    control* k = ctl();
    k->tokens = static_cast<std::int64_t>(tokens);
    k->op = c.op;
    k->rows = static_cast<std::int32_t>(rows);
    k->heads = c.heads;
    k->k_heads = c.k_heads;
    k->inverse = c.inverse ? 1 : 0;
    k->x_bytes = c.in_bytes();
    k->y_bytes = c.out_bytes();
    k->q_bytes = c.in[0].size();
    k->rc = 0;
    k->wrote_past_y = 0;
    std::memcpy(positions(), c.positions.data(), rows * tokens * sizeof(std::int64_t));
    std::memcpy(x(), c.in[0].data(), c.in[0].size());
    if (!c.in[1].empty()) std::memcpy(x() + c.in[0].size(), c.in[1].data(), c.in[1].size());
    unsigned char* y = guard() - c.out_bytes();
    std::memset(y, 0, c.out_bytes());
    const char go = 1;
    if (send(req, &go, 1, MSG_NOSIGNAL) != 1) return died(c);
    pollfd pfd{resp, POLLIN, 0};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      const int r = now < deadline ? poll(&pfd, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 1))) : 0;
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 && std::chrono::steady_clock::now() < deadline) continue;
      if (r == 0) {
        stop();
        closed = true;
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s did not return within %g s (--plugin-timeout); the child was "
                      "killed and no further call is made", c.entry, timeout);
        closed_why = std::string(buf) + " (after an earlier timeout)";
        return fail({apply_status::timeout, 0, 0, buf});
      }
      break;
    }
    char b;
    if (recv(resp, &b, 1, 0) != 1) return died(c);
    if (k->rc != 0)
      return fail({apply_status::error_code, k->rc, 0, std::string(c.entry) + " returned error code " + std::to_string(k->rc)});
    std::memcpy(c.out[0].data(), y, c.out[0].size());
    if (!c.out[1].empty()) std::memcpy(c.out[1].data(), y + c.out[0].size(), c.out[1].size());
    return {};
  }

  apply_outcome died(const request& c) {
    const bool past_y = ctl()->wrote_past_y != 0;
    const int status = stop(false);
    ++crashes;
    if (crashes > max_restarts) {
      closed = true;
      closed_why = "the plugin crashed " + std::to_string(crashes) + " times; no further call is made";
    }
    const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    const std::string entry = c.entry;
    const std::span<unsigned char> last = c.out[1].empty() ? c.out[0] : c.out[1];
    if (past_y)
      return fail({apply_status::out_of_bounds, 0, sig,
                   entry + " wrote past the end of " + c.last_output + " (" + std::to_string(last.size()) +
                       " bytes; the guard page after it faulted, " + signal_name(sig) + ")" + c.shape});
    if (sig) return fail({apply_status::crashed, 0, sig, entry + " crashed with " + signal_name(sig) + c.shape});
    return fail({apply_status::crashed, 0, 0,
                 "the plugin's process ended during " + entry + " (exit status " +
                     std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "; plugin.h forbids exit)" + c.shape});
  }
};

child_process_door::child_process_door(loaded_plugin p, double timeout_seconds, int max_restarts)
    : m_(std::make_unique<impl>(impl{std::move(p), timeout_seconds, max_restarts})) {
  if (!(timeout_seconds > 0) || !std::isfinite(timeout_seconds))
    throw std::invalid_argument("plugin door: the time limit must be a positive number of seconds");
}

child_process_door::~child_process_door() {
  m_->stop();
  m_->unmap();
}

apply_outcome child_process_door::apply(const apply_call& c) { return m_->call(c); }
bool child_process_door::has_apply_qk() const { return m_->plugin.has_apply_qk(); }
apply_outcome child_process_door::apply_qk(const qk_call& c) { return m_->call_qk(c); }

std::optional<apply_outcome> child_process_door::take_failure() {
  auto f = m_->failure;
  m_->failure.reset();
  return f;
}

int child_process_door::forks() const { return m_->forks; }
kernel_limits child_process_door::limits() const { return m_->plugin.limits(); }

loaded_plugin load_plugin_guarded(const std::string& path, double timeout_seconds) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw plugin_error(path + ": cannot fork to load the plugin: " + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(2, 1);
    default_crash_signals();
    try {
      const loaded_plugin p = load_plugin(path);
      (void)p.name();
    } catch (...) {
      _exit(3);  // a loader error: the load below reports it with its message
    }
    _exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) throw plugin_error(path + ": waitpid: " + std::strerror(errno));
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      char buf[96];
      std::snprintf(buf, sizeof buf, "%g s", timeout_seconds);
      throw plugin_error(path + ": loading the plugin (dlopen, ropecheck_plugin_describe, ropecheck_plugin_name) did "
                                "not finish within " + buf + " (--plugin-timeout)");
    }
    usleep(1000);
  }
  if (WIFSIGNALED(status))
    throw plugin_error(path + ": the plugin crashed while loading (dlopen, ropecheck_plugin_describe or "
                              "ropecheck_plugin_name) with " + signal_name(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3)
    throw plugin_error(path + ": the plugin ended the process while loading (exit status " +
                       std::to_string(WEXITSTATUS(status)) + "; plugin.h forbids exit)");
  return load_plugin(path);
}

}  // namespace ropecheck::plugin
