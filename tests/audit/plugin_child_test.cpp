// The child processes of tools/audit/plugin_child.hpp under a host that has its own crash handlers.
// ASan and UBSan install SIGSEGV/SIGBUS/SIGFPE handlers that print a report and exit(1); crash
// reporters do the same. A forked child inherits them, so unless the child restores the default
// actions a plugin's crash ends the child with exit status 1 and the parent misreads it as a plugin
// calling exit (found by the sanitizer job: `fault_describe_segv` was "ended the process while
// loading (exit status 1)" instead of "crashed while loading ... SIGSEGV"). Here the test process
// plays that host: a handler that exits, installed for the length of one test.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plugin_child.hpp"
#include "plugin_loader.hpp"

#ifndef ROPECHECK_FAULT_SEGV_PLUGIN
#error "ROPECHECK_FAULT_SEGV_PLUGIN, ROPECHECK_FAULT_ABORT_PLUGIN and ROPECHECK_FAULT_DESCRIBE_SEGV_PLUGIN must name the example plugins"
#endif

namespace ropecheck::plugin {
namespace {

void exit_like_a_crash_reporter(int) { _exit(1); }

// The host's handler for `sig` while the object lives; the previous action restored after.
class host_crash_handler {
 public:
  explicit host_crash_handler(int sig) : sig_(sig) {
    struct sigaction sa{};
    sa.sa_handler = exit_like_a_crash_reporter;
    sigemptyset(&sa.sa_mask);
    sigaction(sig_, &sa, &old_);
  }
  ~host_crash_handler() { sigaction(sig_, &old_, nullptr); }
  host_crash_handler(const host_crash_handler&) = delete;
  host_crash_handler& operator=(const host_crash_handler&) = delete;

 private:
  int sig_;
  struct sigaction old_{};
};

// One fp32 call of one token of one head (128 coordinates) at `pos`.
apply_outcome call_at(kernel_door& door, std::int64_t pos) {
  std::vector<float> x(128, 0.5f), y(128, 0.0f);
  const std::int64_t positions[1] = {pos};
  return door.apply({std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(x.data()), 512),
                     std::span<unsigned char>(reinterpret_cast<unsigned char*>(y.data()), 512), positions, 1, false});
}

TEST(ChildProcesses, a_crash_while_loading_is_named_with_its_signal_under_a_host_segv_handler) {
  const host_crash_handler host(SIGSEGV);
  try {
    (void)load_plugin_guarded(ROPECHECK_FAULT_DESCRIBE_SEGV_PLUGIN, 10);
    FAIL() << "a plugin crashing in describe() was loaded";
  } catch (const plugin_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("crashed while loading"), std::string::npos) << m;
    EXPECT_NE(m.find("SIGSEGV"), std::string::npos) << m;
  }
}

TEST(ChildProcesses, an_abort_in_apply_is_named_with_its_signal_under_a_host_abort_handler) {
  const host_crash_handler host(SIGABRT);
  child_process_door door(load_plugin(ROPECHECK_FAULT_ABORT_PLUGIN), 10);
  EXPECT_TRUE(call_at(door, 4096).ok());  // the kernel aborts past 4096 only
  const apply_outcome o = call_at(door, 4097);
  EXPECT_EQ(o.status, apply_status::crashed) << o.message;
  EXPECT_EQ(o.signal, SIGABRT) << o.message;
}

TEST(ChildProcesses, a_segv_in_apply_is_named_with_its_signal_under_a_host_segv_handler) {
  const host_crash_handler host(SIGSEGV);
  child_process_door door(load_plugin(ROPECHECK_FAULT_SEGV_PLUGIN), 10);
  const apply_outcome o = call_at(door, 4097);
  EXPECT_EQ(o.status, apply_status::crashed) << o.message;
  EXPECT_EQ(o.signal, SIGSEGV) << o.message;
}

}  // namespace
}  // namespace ropecheck::plugin

namespace ropecheck::plugin {
namespace {

// Four tokens of two heads (128 coordinates each) through `door` with the rows given ([3][4]).
std::vector<float> call_rows(kernel_door& door, const std::vector<std::int64_t>& rows) {
  constexpr int heads = 2, tokens = 4;
  std::vector<float> x(static_cast<std::size_t>(tokens * heads * 128)), y(x.size(), 0.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 255) - 127) / 128.0f;
  const std::vector<std::int64_t> row0(rows.begin(), rows.begin() + tokens);
  const auto bytes = x.size() * sizeof(float);
  const apply_outcome o = door.apply({std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(x.data()), bytes),
                                      std::span<unsigned char>(reinterpret_cast<unsigned char*>(y.data()), bytes), row0,
                                      heads, false, rows});
  EXPECT_TRUE(o.ok()) << o.message;
  return y;
}

// M-RoPE rows cross the child's shared mapping ([rows][tokens] after the control block): a door call
// with 3 rows answers bitwise what the in-process call answers, and not what text rows (every row =
// row 0) would, so the rows reached the kernel through both doors.
TEST(ChildProcesses, position_rows_cross_the_child_mapping_as_the_in_process_call_takes_them) {
  const loaded_plugin p = load_plugin(ROPECHECK_MROPE_PLUGIN);
  ASSERT_EQ(p.limits().rows, 3);
  // An image's tokens at st = 64 (temporal 64, height 64 + i, width 64 + j), as plugin_limits.hpp lays them.
  const std::vector<std::int64_t> image = {64, 64, 64, 64, 64, 64, 65, 65, 64, 65, 64, 65};
  const std::vector<std::int64_t> text = {64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64};
  in_process_door here(p);
  child_process_door child(p, 10);
  const std::vector<float> want = call_rows(here, image);
  const std::vector<float> got = call_rows(child, image);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(got.data(), call_rows(here, text).data(), got.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace ropecheck::plugin
