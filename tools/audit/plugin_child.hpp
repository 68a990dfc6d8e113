// tools/audit/plugin_child.hpp — how the plugin audit calls a foreign kernel's apply() (and ABI 3's
// apply_qk()): a door that reports what happened instead of letting a fault in the kernel become a fault
// of ropecheck.
//
// kernel_door is the interface; in_process_door calls the loaded library directly (the tests'
// bindings; a crash there is a crash of the caller); child_process_door calls it in a child process
// (what `ropecheck audit --plugin` uses). Buffers are the wire format of plugin.h (plugin_loader.hpp's
// to_wire/from_wire).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "plugin_loader.hpp"

namespace ropecheck::plugin {

enum class apply_status {
  ok,             // apply() returned 0
  error_code,     // apply() returned nonzero (code)
  crashed,        // the kernel died on a signal (signal)
  timeout,        // apply() did not return within the time limit
  out_of_bounds,  // the kernel wrote past the end of y
  unavailable     // the door is closed (an earlier timeout, too many crashes)
};

struct apply_outcome {
  apply_status status = apply_status::ok;
  int code = 0;         // apply()'s return code (error_code)
  int signal = 0;       // the signal (crashed, out_of_bounds)
  std::string message;  // one sentence naming what happened, empty when ok
  [[nodiscard]] bool ok() const { return status == apply_status::ok; }
};

// One apply() call: x and y hold tokens * heads * head_dim elements of the plugin's dtype.
struct apply_call {
  std::span<const unsigned char> x;
  std::span<unsigned char> y;
  std::span<const std::int64_t> positions;  // `tokens` of them (M-RoPE: row 0)
  int heads = 1;
  bool inverse = false;
  // M-RoPE: every position row, [rows][tokens] row-major (rows = its size / tokens, the plugin's
  // declared rows); empty for 1-D RoPE, and for text tokens (every row = positions).
  std::span<const std::int64_t> position_rows = {};
  [[nodiscard]] int rows() const {
    return position_rows.empty() || positions.empty() ? 1 : static_cast<int>(position_rows.size() / positions.size());
  }
};

// One apply_qk() call (plugin.h ABI 3): q and q_out hold tokens * q_heads * head_dim elements of the plugin's
// dtype, k and k_out tokens * k_heads * head_dim; one position per token.
struct qk_call {
  std::span<const unsigned char> q, k;
  std::span<unsigned char> q_out, k_out;
  std::span<const std::int64_t> positions;
  int q_heads = 1, k_heads = 1;
};

class kernel_door {
 public:
  virtual ~kernel_door() = default;
  [[nodiscard]] virtual apply_outcome apply(const apply_call& call) = 0;
  // The kernel exports apply_qk (ABI 3), and apply_qk(call) calls it. A door without it answers
  // `unavailable` (its message names apply_qk).
  [[nodiscard]] virtual bool has_apply_qk() const { return false; }
  [[nodiscard]] virtual apply_outcome apply_qk(const qk_call&) {
    return {apply_status::unavailable, 0, 0, "this door does not call ropecheck_plugin_apply_qk"};
  }
  // The first failed call since the last take (nullopt: none): what a property run ran into.
  [[nodiscard]] virtual std::optional<apply_outcome> take_failure() { return std::nullopt; }
  // What the kernel behind the door accepts (plugin.h ABI 2's options; ABI 1: the defaults).
  [[nodiscard]] virtual kernel_limits limits() const { return {}; }
};

class in_process_door final : public kernel_door {
 public:
  explicit in_process_door(loaded_plugin p) : p_(std::move(p)) {}
  [[nodiscard]] apply_outcome apply(const apply_call& c) override {
    const int rc = p_.apply_rows_raw(c.x.data(), c.y.data(), c.rows() > 1 ? c.position_rows.data() : c.positions.data(),
                                     c.rows(), static_cast<std::int64_t>(c.positions.size()), c.heads, c.inverse);
    if (rc == 0) return {};
    return {apply_status::error_code, rc, 0, "ropecheck_plugin_apply returned error code " + std::to_string(rc)};
  }
  [[nodiscard]] bool has_apply_qk() const override { return p_.has_apply_qk(); }
  [[nodiscard]] apply_outcome apply_qk(const qk_call& c) override {
    const int rc = p_.apply_qk_raw(c.q.data(), c.k.data(), c.q_out.data(), c.k_out.data(), c.positions.data(),
                                   static_cast<std::int64_t>(c.positions.size()), c.q_heads, c.k_heads);
    if (rc == 0) return {};
    return {apply_status::error_code, rc, 0, "ropecheck_plugin_apply_qk returned error code " + std::to_string(rc)};
  }

 private:
  loaded_plugin p_;

 public:
  [[nodiscard]] kernel_limits limits() const override { return p_.limits(); }
};

// apply() in a child process, so that nothing the kernel does can take ropecheck down:
//   * the child is forked once (after the library was loaded here) and serves calls until it dies:
//     one fork per batch of calls, not per call; x, y and the positions (every row) travel through a shared
//     anonymous mapping, requests and replies through two pipes; an apply_qk() call is served the same
//     way, q then k where x goes and q_out then k_out where y goes;
//   * y (apply_qk: k_out) ends exactly where a PROT_NONE guard page begins, so a write past it faults in
//     the child (plugin_out_of_bounds: its SIGSEGV handler sees the address in the guard page; a write
//     past q_out lands in k_out, which the kernel then writes or leaves wrong: judged, not faulted);
//   * a child that dies on a signal is `crashed` (the signal named) and is forked again for the next
//     call (at most max_restarts times; then the door is unavailable);
//   * a call that does not return within timeout_seconds kills the child (`timeout`) and closes the
//     door: every later call is `unavailable` at once (no second wait);
//   * the child's stdout is the parent's stderr (plugin.h forbids printing to stdout: --json - stays
//     clean), and it dies with its parent (PR_SET_PDEATHSIG).
class child_process_door final : public kernel_door {
 public:
  child_process_door(loaded_plugin p, double timeout_seconds, int max_restarts = 32);
  ~child_process_door() override;
  child_process_door(const child_process_door&) = delete;
  child_process_door& operator=(const child_process_door&) = delete;

  [[nodiscard]] apply_outcome apply(const apply_call& c) override;
  [[nodiscard]] bool has_apply_qk() const override;
  [[nodiscard]] apply_outcome apply_qk(const qk_call& c) override;
  [[nodiscard]] std::optional<apply_outcome> take_failure() override;
  [[nodiscard]] int forks() const;  // children forked so far
  [[nodiscard]] kernel_limits limits() const override;

  struct impl;

 private:
  std::unique_ptr<impl> m_;
};

// load_plugin(path) tried first in a child process (dlopen with the library's constructors,
// describe(), name()), so that a library crashing or hanging while it loads is a plugin_error (exit 2)
// naming the signal or the time limit, not a crash of ropecheck; then loaded here. The loader's own
// errors (missing file or symbol, ABI, invalid convention) come from the load here, unchanged.
[[nodiscard]] loaded_plugin load_plugin_guarded(const std::string& path, double timeout_seconds);

}  // namespace ropecheck::plugin
