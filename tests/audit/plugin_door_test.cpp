// tests/audit/plugin_door_test.cpp — the plugin door (tools/audit/plugin_audit.hpp), in this process: probe +
// judge (prefill and decode calls) + properties on the example plugins of tools/audit/plugins/, written in the
// style of foreign kernels. Every correct convention passes (at most an angle_drift_fp32 warning), every bug
// fails with its class named first; the door's child processes. That each form's verdict is `ropecheck audit`'s on
// a file of the same outputs, class for class, is tests/doors/plugin_doors_test.cpp's (with the conformance suite)
// and tests/audit/plugin_door_cli_test.cpp's (the judge flags, the JSON and JUnit).
#include "plugin_door_cases.hpp"

namespace ropecheck::audit {
namespace {

// The door's first finding (when it has none about the calls) is the failing form's first class, prefill's when
// both fail, the qk form's (apply_qk, ABI 3) when only it fails; its exit code is 0 iff both forms pass (and the qk
// form's) and every property holds. (That each form's verdict is the command line's on a dump of that form's outputs,
// class for class, is tests/doors/plugin_doors_test.cpp's.)
void expect_forms_combined(const plugin_case& c, const plugin_audit_result& r) {
  ASSERT_TRUE(r.probe_ran) << c.name;
  ASSERT_EQ(r.forms.size(), 2u);
  ASSERT_EQ(r.findings.size(), r.finding_forms.size());
  bool forms_pass = true, any_call_finding = false;
  std::string first_failing_class;
  for (const auto& f : r.forms) {
    forms_pass = forms_pass && f.judged.pass;
    any_call_finding = any_call_finding || !f.call_findings.empty();
    if (!f.judged.pass && first_failing_class.empty() && !f.judged.findings.empty())
      first_failing_class = f.judged.findings.front().bug_class;
  }
  bool qk_pass = true;
  for (const auto& f : r.qk_forms) {
    qk_pass = qk_pass && f.passed;
    any_call_finding = any_call_finding || !f.call_findings.empty();
    if (forms_pass && !f.judged.pass && first_failing_class.empty() && !f.judged.findings.empty())
      first_failing_class = f.judged.findings.front().bug_class;
  }
  if (any_call_finding) return;
  const bool properties_hold = std::all_of(r.properties.begin(), r.properties.end(), [](const auto& p) { return p.passed; });
  EXPECT_EQ(r.exit_code, forms_pass && qk_pass && properties_hold ? 0 : 1) << c.name << ": the door's exit code";
  if (!first_failing_class.empty()) {
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(r.findings.front().bug_class, first_failing_class) << c.name;
  }
}

// One test per example plugin (ctest runs them side by side).
class PluginDoorCases : public ::testing::TestWithParam<plugin_case> {};

void PrintTo(const plugin_case& c, std::ostream* os) { *os << c.name; }

TEST_P(PluginDoorCases, every_example_plugin_gets_its_verdict) {
  std::cout << "[ropecheck] seed " << kSeed << " (probe and properties)\n";
  const plugin_case& c = GetParam();
  {
    SCOPED_TRACE(c.name);
    if (c.exit_code == 2) {  // cannot be loaded: plugin_error naming the file and what happened
      try {
        (void)audit_case(c);
        ADD_FAILURE() << "expected plugin_error";
      } catch (const plugin::plugin_error& e) {
        EXPECT_NE(std::string(e.what()).find(c.first_class), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.path), std::string::npos) << e.what();
        std::cout << "[plugin door] " << c.name << ": " << e.what() << "\n";
      }
      return;
    }
    const auto r = audit_case(c);
    std::cout << "[plugin door] " << c.name << ": exit " << r.exit_code << ", findings";
    for (const auto& f : r.findings) std::cout << " " << f.bug_class;
    std::cout << "\n";
    EXPECT_EQ(r.exit_code, c.exit_code);
    if (c.exit_code == 0) {
      EXPECT_TRUE(r.passed);
      for (const auto& f : r.findings) EXPECT_EQ(f.bug_class, "angle_drift_fp32") << f.sentence;  // at most a warning
      for (const auto& p : r.properties) EXPECT_TRUE(p.passed) << p.name << ": " << p.description;
    } else {
      EXPECT_FALSE(r.passed);
      ASSERT_FALSE(r.findings.empty());
      EXPECT_EQ(r.findings.front().bug_class, c.first_class) << r.findings.front().sentence;
    }
    if (r.probe_ran) expect_forms_combined(c, r);
  }
}

TEST(PluginDoor, the_example_plugins_are_all_there) { EXPECT_GE(kCases.size(), 18u); }

INSTANTIATE_TEST_SUITE_P(ExamplePlugins, PluginDoorCases, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ropecheck::audit

namespace ropecheck::plugin {
namespace {

// One fp32 call of one token of one head (128 coordinates) through `door`.
apply_outcome call_at(kernel_door& door, std::int64_t pos, std::vector<float>& y) {
  std::vector<float> x(128, 0.5f);
  y.assign(128, 0.0f);
  const std::int64_t positions[1] = {pos};
  return door.apply({std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(x.data()), 512),
                     std::span<unsigned char>(reinterpret_cast<unsigned char*>(y.data()), 512), positions, 1, false});
}

const char* path_of(const std::string& name) {
  for (const auto& c : audit::kCases)
    if (c.name == name) return c.path;
  throw std::invalid_argument("no example plugin " + name);
}

TEST(ChildProcessDoor, serves_every_call_from_one_child_and_answers_as_the_library_does) {
  const auto lib = load_plugin(path_of("hf_f32"));
  child_process_door child(lib, 10);
  in_process_door direct(lib);
  std::vector<float> a, b;
  for (std::int64_t p : {0, 1, 255, 4096, 131071, 16777216}) {
    ASSERT_TRUE(call_at(child, p, a).ok());
    ASSERT_TRUE(call_at(direct, p, b).ok());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), 512), 0) << "position " << p;  // bitwise
  }
  EXPECT_EQ(child.forks(), 1);  // one fork for the whole batch of calls
  EXPECT_FALSE(child.take_failure());
}

TEST(ChildProcessDoor, a_crash_is_named_with_its_signal_and_the_next_call_gets_a_new_child) {
  child_process_door door(load_plugin(path_of("fault_segv")), 10);
  std::vector<float> y;
  EXPECT_TRUE(call_at(door, 4096, y).ok());  // the kernel crashes past 4096 only
  const auto o = call_at(door, 4097, y);
  EXPECT_EQ(o.status, apply_status::crashed);
  EXPECT_EQ(o.signal, SIGSEGV);
  EXPECT_NE(o.message.find("SIGSEGV"), std::string::npos) << o.message;
  EXPECT_TRUE(call_at(door, 4096, y).ok());
  EXPECT_EQ(door.forks(), 2);
  const auto f = door.take_failure();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, apply_status::crashed);
  child_process_door aborting(load_plugin(path_of("fault_abort")), 10);
  EXPECT_EQ(call_at(aborting, 5000, y).signal, SIGABRT);
}

TEST(ChildProcessDoor, a_write_past_y_faults_on_the_guard_page) {
  child_process_door door(load_plugin(path_of("fault_write_past_y")), 10);
  std::vector<float> y;
  const auto o = call_at(door, 3, y);
  EXPECT_EQ(o.status, apply_status::out_of_bounds) << o.message;
  EXPECT_NE(o.message.find("wrote past the end of y"), std::string::npos) << o.message;
  // The same kernel without the stray write answers through the same door geometry.
  child_process_door good(load_plugin(path_of("hf_f32")), 10);
  EXPECT_TRUE(call_at(good, 3, y).ok());
}

TEST(ChildProcessDoor, a_hang_is_killed_at_the_time_limit_and_closes_the_door) {
  child_process_door door(load_plugin(path_of("fault_hang")), 0.5);
  std::vector<float> y;
  EXPECT_TRUE(call_at(door, 4096, y).ok());  // hangs past 4096 only
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = call_at(door, 4097, y);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.status, apply_status::timeout) << o.message;
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 5.0);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(call_at(door, 1, y).status, apply_status::unavailable);  // no second wait
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 0.5);
}

}  // namespace
}  // namespace ropecheck::plugin

namespace ropecheck::audit {
namespace {

// ggml's chain of fp32 products is a correct convention: its property excesses over the exact-angle
// allowance are drift warnings; --strict (exact angles for every dtype) fails them and the judge names
// angle_drift_fp32. A shrunk counterexample prints its input vectors as their nonzero coordinates.
TEST(PluginDoor, drift_is_a_warning_by_default_and_a_failure_under_strict) {
  const auto& c = find_case("ggml_norm_f32");
  const auto lenient = audit_case(c);
  EXPECT_TRUE(lenient.passed);
  int warnings = 0;
  for (const auto& p : lenient.properties) {
    EXPECT_TRUE(p.passed) << p.name;
    if (p.drift_warning) {
      ++warnings;
      EXPECT_NE(p.drift.find("> bound"), std::string::npos) << p.drift;  // the exact-angle excess, with figures
    }
  }
  EXPECT_GE(warnings, 1);
  judge::audit_options strict;
  strict.strict = true;
  const auto r = audit_case(c, strict);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().bug_class, "angle_drift_fp32");
  int failed = 0;
  for (const auto& p : r.properties) {
    EXPECT_FALSE(p.drift_warning) << p.name;  // no warnings in strict mode: a failure or a pass
    if (p.passed) continue;
    ++failed;
    EXPECT_FALSE(p.reproduce.empty()) << p.name;
    if (p.counterexample.find("std::vector") != std::string::npos) {
      EXPECT_NE(p.counterexample.find("nonzero): "), std::string::npos) << p.counterexample;
      EXPECT_EQ(p.counterexample.find(", 0, 0"), std::string::npos) << p.counterexample;  // no run of zeros
    }
    std::cout << "[plugin door] --strict " << p.name << ":\n" << p.counterexample;
  }
  EXPECT_GE(failed, 1);
}

}  // namespace
}  // namespace ropecheck::audit

namespace ropecheck::audit {
namespace {

TEST(PluginDoor, a_finding_both_forms_give_is_listed_once_with_both_forms) {
  const auto& c = find_case("hf_f32");
  const auto r = audit_case(c, {}, /*properties=*/false);
  ASSERT_EQ(r.forms.size(), 2u);
  EXPECT_EQ(r.forms[0].probe.y, r.forms[1].probe.y);
  ASSERT_FALSE(r.findings.empty());  // angle_drift_fp32's warning past 2^24
  ASSERT_EQ(r.findings.size(), r.forms[0].judged.findings.size());
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    EXPECT_EQ(r.finding_forms[i], "both");
    EXPECT_EQ(r.findings[i].sentence, r.forms[0].judged.findings[i].sentence + " (both forms)");
  }
}

}  // namespace
}  // namespace ropecheck::audit
