// The library behind `ropecheck audit --plugin` (tools/audit/plugin_audit.hpp), used as the
// command line uses it: through its light header only. The correct example plugin passes every
// property of the suite; the one with positions held in bf16 fails with a shrunk counterexample
// and a reproduce string that replays it; the same seed gives the same audit, verbose or not; a
// plugin that cannot be loaded is reported naming its file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_audit.hpp"
#include "plugin_loader.hpp"

#ifndef ROPECHECK_EXAMPLE_PLUGIN
#error "ROPECHECK_EXAMPLE_PLUGIN must name the example plugin's .so"
#endif
#ifndef ROPECHECK_EXAMPLE_PLUGIN_BUGGY
#error "ROPECHECK_EXAMPLE_PLUGIN_BUGGY must name the buggy example plugin's .so"
#endif
#ifndef ROPECHECK_EXAMPLE_PLUGIN_ABI4
#error "ROPECHECK_EXAMPLE_PLUGIN_ABI4 must name the ABI-4 example plugin's .so"
#endif

namespace ropecheck::audit {
namespace {

const std::vector<std::string> kProperties = {
    "rotation_matches_reference",       "rotation_preserves_norms",       "inverse_rotation_undoes_rotation",
    "rotations_compose_additively",     "materialised_matrix_is_orthogonal", "relative_offset_identity_holds",
    "scores_are_shift_invariant"};

// The cases each property runs for a given max_success (the materialised matrix: 20 per 100).
int expected_cases(const std::string& property, int max_success) {
  return property == "materialised_matrix_is_orthogonal" ? std::max(1, max_success * 20 / 100) : max_success;
}

plugin_audit_options with_seed(std::uint64_t seed, int max_success = 100) {
  plugin_audit_options o;
  o.seed = seed;
  o.max_success = max_success;
  return o;
}

// Everything but the timings.
void expect_same_results(const plugin_audit_result& a, const plugin_audit_result& b) {
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.passed, b.passed);
  ASSERT_EQ(a.properties.size(), b.properties.size());
  for (std::size_t i = 0; i < a.properties.size(); ++i) {
    const auto &p = a.properties[i], &q = b.properties[i];
    EXPECT_EQ(p.name, q.name);
    EXPECT_EQ(p.passed, q.passed) << p.name;
    EXPECT_EQ(p.successes, q.successes) << p.name;
    EXPECT_EQ(p.description, q.description) << p.name;
    EXPECT_EQ(p.counterexample, q.counterexample) << p.name;
    EXPECT_EQ(p.reproduce, q.reproduce) << p.name;
  }
}

const plugin_property_result* find(const plugin_audit_result& r, const std::string& name) {
  for (const auto& p : r.properties)
    if (p.name == name) return &p;
  return nullptr;
}

// The buggy plugin's audit at the default max_success, run once for the tests that read it.
const plugin_audit_result& buggy_audit() {
  static const plugin_audit_result r = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, with_seed(0x5eed2026));
  return r;
}

TEST(PluginAudit, runs_every_property_of_the_suite_in_order) {
  EXPECT_EQ(plugin_property_names(), kProperties);
}

TEST(PluginAudit, the_correct_example_plugin_passes_every_property) {
  const auto r = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN, with_seed(0x5eed2026));
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.plugin_path, ROPECHECK_EXAMPLE_PLUGIN);
  EXPECT_EQ(r.plugin_name, "example hf fp32");
  EXPECT_EQ(r.element_type, "float32");
  EXPECT_EQ(r.convention,
            "head_dim 128, rotary_dim 128, base 10000, scaling default, factor 1, layout half_split, "
            "max_position_embeddings 4096");
  EXPECT_EQ(r.seed, 0x5eed2026u);
  EXPECT_EQ(r.max_success, 100);
  EXPECT_NE(r.rerun.find("ropecheck audit --plugin "), std::string::npos) << r.rerun;
  EXPECT_NE(r.rerun.find(ROPECHECK_EXAMPLE_PLUGIN), std::string::npos) << r.rerun;
  EXPECT_NE(r.rerun.find("--seed " + std::to_string(0x5eed2026)), std::string::npos) << r.rerun;
  ASSERT_EQ(r.properties.size(), kProperties.size());
  for (std::size_t i = 0; i < kProperties.size(); ++i) {
    const auto& p = r.properties[i];
    EXPECT_EQ(p.name, kProperties[i]);
    EXPECT_TRUE(p.passed) << p.name << ": " << p.description << "\n" << p.counterexample;
    EXPECT_EQ(p.successes, expected_cases(p.name, 100)) << p.name;
    EXPECT_TRUE(p.description.empty() && p.counterexample.empty() && p.reproduce.empty() && p.replay.empty()) << p.name;
    EXPECT_GE(p.seconds, 0.0);
  }
}

TEST(PluginAudit, the_buggy_plugin_fails_with_a_shrunk_counterexample_and_a_reproduce_string) {
  const auto& r = buggy_audit();
  EXPECT_FALSE(r.passed);
  int failures = 0;
  for (const auto& p : r.properties) {
    if (p.passed) continue;
    ++failures;
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_FALSE(p.counterexample.empty()) << p.name;
    EXPECT_NE(p.reproduce.find("reproduce="), std::string::npos) << p.name << ": " << p.reproduce;
    EXPECT_NE(p.reproduce.find("seed=" + std::to_string(r.seed)), std::string::npos) << p.reproduce;
    EXPECT_EQ(p.replay, "RC_PARAMS=\"" + p.reproduce + "\" ropecheck audit --plugin " + r.plugin_path);
    std::cout << "[plugin audit] FAILS " << p.name << ": " << p.description << "\n" << p.counterexample
              << "  " << p.replay << "\n";
  }
  EXPECT_GE(failures, 1);
  // Positions > 256 are rounded in bf16: the comparison with the reference must see it, at a
  // position shrunk into the first octave past 256 (every position up to 256 is exact in bf16).
  const auto* ref = find(r, "rotation_matches_reference");
  ASSERT_NE(ref, nullptr);
  EXPECT_FALSE(ref->passed);
  const std::string head = "rotation differs from the reference: position ";
  ASSERT_EQ(ref->description.rfind(head, 0), 0u) << ref->description;  // the message, no RC_FAIL preamble
  const long long pos = std::stoll(ref->description.substr(head.size()));
  EXPECT_GT(pos, 256);
  EXPECT_LT(pos, 512);
}

TEST(PluginAudit, the_same_seed_gives_the_same_counterexamples) {
  const auto again = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, with_seed(0x5eed2026));
  expect_same_results(buggy_audit(), again);
}

TEST(PluginAudit, a_reproduce_string_replays_exactly_its_counterexample) {
  const auto& r = buggy_audit();
  const auto* failed = find(r, "rotation_matches_reference");
  ASSERT_NE(failed, nullptr);
  ASSERT_FALSE(failed->reproduce.empty());
  plugin_audit_options o;
  o.rc_params = failed->reproduce;
  const auto replay = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, o);
  EXPECT_EQ(replay.seed, r.seed);  // the reproduce string carries the seed
  EXPECT_FALSE(replay.passed);
  for (const auto& p : replay.properties) {
    if (p.name != failed->name) {
      EXPECT_TRUE(p.passed) << p.name;  // not named by the reproduce string: not run
      EXPECT_EQ(p.successes, 0) << p.name;
      continue;
    }
    EXPECT_FALSE(p.passed);
    EXPECT_EQ(p.description, failed->description);
    EXPECT_EQ(p.counterexample, failed->counterexample);
  }
  o.rc_params = "max_success=banana";
  EXPECT_THROW((void)audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, o), std::invalid_argument);
}

TEST(PluginAudit, results_do_not_depend_on_verbose) {
  auto quiet = with_seed(7, 20), loud = with_seed(7, 20);
  loud.verbose = true;
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const auto a = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, quiet);
  const std::string quiet_err = testing::internal::GetCapturedStderr();
  const std::string quiet_out = testing::internal::GetCapturedStdout();
  testing::internal::CaptureStderr();
  const auto b = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN_BUGGY, loud);
  const std::string loud_err = testing::internal::GetCapturedStderr();
  expect_same_results(a, b);
  EXPECT_FALSE(a.passed);
  if (!std::getenv("RC_PARAMS")) {
    EXPECT_EQ(quiet_err, "");  // RC_PARAMS makes RapidCheck announce itself
  }
  EXPECT_EQ(quiet_out, "");
  EXPECT_NE(loud_err.find("[ropecheck audit] rotation_matches_reference"), std::string::npos) << loud_err;
  EXPECT_NE(loud_err.find("shrunk:"), std::string::npos) << loud_err;
}

TEST(PluginAudit, max_success_is_honoured_and_the_progress_callback_sees_every_property) {
  auto o = with_seed(11, 7);
  std::vector<std::string> seen;
  o.on_property = [&](const std::string& name, int index, int total) {
    EXPECT_EQ(index, static_cast<int>(seen.size()));
    EXPECT_EQ(total, static_cast<int>(kProperties.size()));
    seen.push_back(name);
  };
  const auto r = audit_plugin(ROPECHECK_EXAMPLE_PLUGIN, o);
  EXPECT_EQ(seen, kProperties);
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.max_success, 7);
  EXPECT_NE(r.rerun.find("--max-success 7"), std::string::npos) << r.rerun;
  for (const auto& p : r.properties) EXPECT_EQ(p.successes, expected_cases(p.name, 7)) << p.name;
  o.max_success = 0;
  EXPECT_THROW((void)audit_plugin(ROPECHECK_EXAMPLE_PLUGIN, o), std::invalid_argument);
}

TEST(PluginAudit, without_a_seed_the_suite_s_seed_policy_applies) {
  if (const char* p = std::getenv("RC_PARAMS"); p && std::string(p).find("seed=") != std::string::npos)
    GTEST_SKIP() << "RC_PARAMS names a seed";
  const char* saved = std::getenv("ROPECHECK_SEED");
  const std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  plugin_audit_options o;
  o.max_success = 1;
  ::setenv("ROPECHECK_SEED", "12345", 1);
  EXPECT_EQ(audit_plugin(ROPECHECK_EXAMPLE_PLUGIN, o).seed, 12345u);
  ::unsetenv("ROPECHECK_SEED");
  EXPECT_EQ(audit_plugin(ROPECHECK_EXAMPLE_PLUGIN, o).seed, 0x5eed2026u);  // the suite's fixed default
  if (restore) ::setenv("ROPECHECK_SEED", restore->c_str(), 1);
}

// Expect audit_plugin(path) to throw plugin_error whose message contains every one of `needles`.
void expect_plugin_error(const std::string& path, const std::vector<std::string>& needles) {
  try {
    (void)audit_plugin(path);
    ADD_FAILURE() << "expected plugin_error for " << path;
  } catch (const plugin::plugin_error& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

TEST(PluginAudit, a_plugin_declaring_an_unknown_abi_4_is_rejected_naming_the_file) {
  expect_plugin_error(ROPECHECK_EXAMPLE_PLUGIN_ABI4,
                      {ROPECHECK_EXAMPLE_PLUGIN_ABI4, "ABI mismatch: plugin declares 4, loader implements 1 to 3"});
}

TEST(PluginAudit, a_missing_file_is_rejected_naming_the_file) {
  const std::string path = "/nonexistent/dir/libno_such_plugin.so";
  expect_plugin_error(path, {path, "cannot load plugin"});
}

}  // namespace
}  // namespace ropecheck::audit
