// The plugin door (tools/audit/plugin_audit.hpp): probe + judge + properties on the example plugins
// of tools/audit/plugins/, written in the style of foreign kernels. Every correct convention passes
// (at most an angle_drift_fp32 warning), every bug fails with its class named first, and the door's
// verdict is exactly `ropecheck audit`'s on a file of the same outputs: the probe's positions, x and
// y are written to a safetensors dump, the command line audits it with the same claim and the same
// judge flags, and pass, exit code and the bug_class list must be equal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "plugin_audit.hpp"
#include "plugin_child.hpp"
#include "plugin_loader.hpp"
#include "ropecheck/judge/classes.hpp"
#include "support/dump_file.hpp"
#include "support/plugin_claim.hpp"
#include "support/safetensors_writer.hpp"

#ifndef ROPECHECK_CLI
#error "ROPECHECK_CLI must name the ropecheck executable"
#endif

namespace ropecheck::audit {
namespace {

struct plugin_case {
  const char* name;
  const char* path;
  int exit_code;           // expected
  const char* first_class; // expected first finding ("" for a pass)
};

// name, .so, expected exit, first bug class: generated from tools/audit/plugin_audit.cmake's list.
const std::vector<plugin_case> kCases = {
#include "plugin_door_cases.inc"
};

constexpr std::uint64_t kSeed = 0x5eed2026;

std::vector<std::string> classes(const std::vector<judge::finding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.bug_class);
  return v;
}

// The probe's dump as the safetensors file a user would write of those outputs.
void write_probe(const std::string& path, const judge::dump& d) { test::write_dump_file(path, d); }

// The plugin's declared claim as `ropecheck audit` arguments (ABI 2's config.json, or its fields).
std::string claim_of(const std::string& plugin_path) { return test::plugin_claim_args(plugin::load_plugin(plugin_path)); }

struct cli_verdict {
  int exit_code = -1;
  bool pass = false;
  std::vector<std::string> classes;
};

cli_verdict run_cli(const std::string& dump_path, const std::string& claim, const std::string& judge_flags) {
  const std::string json = dump_path + ".json";
  const std::string cmd = std::string(ROPECHECK_CLI) + " audit " + dump_path + claim + judge_flags +
                          " --quiet --json " + json + " > " + dump_path + ".txt 2>&1";
  const int status = std::system(cmd.c_str());
  cli_verdict v;
  v.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(json);
  if (!in) {
    ADD_FAILURE() << "no JSON from: " << cmd;
    return v;
  }
  const auto j = nlohmann::json::parse(in);
  v.pass = j.at("pass").get<bool>();
  EXPECT_EQ(j.at("exit_code").get<int>(), v.exit_code) << cmd;
  for (const auto& f : j.at("findings")) v.classes.push_back(f.at("bug_class").get<std::string>());
  return v;
}

// A directory of this process for the dumps and the command line's outputs, removed at exit.
std::filesystem::path scratch_dir() {
  struct scratch {
    std::filesystem::path p = std::filesystem::temp_directory_path() / ("ropecheck_plugin_door_" + std::to_string(::getpid()));
    scratch() { std::filesystem::create_directories(p); }
    ~scratch() {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  };
  static const scratch s;
  return s.p;
}

// In each call form, the door's verdict and the command line's on that form's dump are the same; the
// door's first finding (when it has none about the calls) is the failing form's first class, prefill's
// when both fail; its exit code is 0 iff both forms' dumps pass and every property holds.
void expect_same_as_dump_audit(const plugin_case& c, const plugin_audit_result& r, const std::string& judge_flags) {
  ASSERT_TRUE(r.probe_ran) << c.name;
  ASSERT_EQ(r.forms.size(), 2u);
  ASSERT_EQ(r.findings.size(), r.finding_forms.size());
  bool cli_pass = true, any_call_finding = false;
  std::string first_failing_class;
  for (const auto& f : r.forms) {
    const std::string path =
        (scratch_dir() / (std::string(c.name) + "_" + judge::to_string(f.form) + ".safetensors")).string();
    write_probe(path, f.probe);
    const cli_verdict cli = run_cli(path, claim_of(c.path), judge_flags);
    EXPECT_EQ(cli.pass, f.judged.pass) << c.name << judge_flags << " " << judge::to_string(f.form);
    EXPECT_EQ(cli.exit_code, f.judged.pass ? 0 : 1) << c.name << judge_flags;
    EXPECT_EQ(cli.classes, classes(f.judged.findings)) << c.name << " " << judge::to_string(f.form);
    cli_pass = cli_pass && cli.pass;
    any_call_finding = any_call_finding || !f.call_findings.empty();
    if (!cli.pass && first_failing_class.empty() && !cli.classes.empty()) first_failing_class = cli.classes.front();
  }
  if (any_call_finding) return;
  const bool properties_hold = std::all_of(r.properties.begin(), r.properties.end(), [](const auto& p) { return p.passed; });
  EXPECT_EQ(r.exit_code, cli_pass && properties_hold ? 0 : 1) << c.name << judge_flags << ": the door's exit code";
  if (!first_failing_class.empty()) {
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(r.findings.front().bug_class, first_failing_class) << c.name;
  }
}

plugin_audit_result audit_case(const plugin_case& c, const judge::audit_options& judge = {}) {
  plugin_audit_options o;
  o.seed = kSeed;
  o.judge = judge;
  o.timeout_seconds = 2;  // fault_hang: one wait
  return audit_plugin(c.path, o);
}

// One test per example plugin (ctest runs them side by side).
class PluginDoorCases : public ::testing::TestWithParam<plugin_case> {};

void PrintTo(const plugin_case& c, std::ostream* os) { *os << c.name; }

TEST_P(PluginDoorCases, every_example_plugin_gets_its_verdict_and_the_same_one_as_the_dump_audit) {
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
    if (r.probe_ran) expect_same_as_dump_audit(c, r, "");
  }
}

TEST(PluginDoor, the_example_plugins_are_all_there) { EXPECT_GE(kCases.size(), 18u); }

INSTANTIATE_TEST_SUITE_P(ExamplePlugins, PluginDoorCases, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

const plugin_case& find_case(const std::string& name) {
  for (const auto& c : kCases)
    if (c.name == name) return c;
  throw std::invalid_argument("no example plugin " + name);
}

TEST(PluginDoor, the_judge_flags_mean_the_same_for_the_plugin_and_for_the_dump) {
  struct variant {
    const char* plugin;
    const char* flags;
    judge::audit_options judge;
  };
  judge::audit_options hf, ggml, strict;
  hf.reference = judge::reference_kind::hf;
  ggml.reference = judge::reference_kind::ggml;
  strict.strict = true;
  for (const auto& v : {variant{"hf_f32", " --reference hf", hf}, variant{"ggml_norm_f32", " --reference ggml", ggml},
                        variant{"ggml_norm_f32", " --reference hf", hf}, variant{"hf_f32", " --strict", strict},
                        variant{"bug_base_500000", " --reference hf", hf}}) {
    SCOPED_TRACE(std::string(v.plugin) + v.flags);
    const auto& c = find_case(v.plugin);
    const auto r = audit_case(c, v.judge);
    ASSERT_TRUE(r.probe_ran);
    for (const auto& f : r.forms) {
      const std::string path =
          (scratch_dir() / (std::string(c.name) + "_flags_" + judge::to_string(f.form) + ".safetensors")).string();
      write_probe(path, f.probe);
      const cli_verdict cli = run_cli(path, claim_of(c.path), v.flags);
      EXPECT_EQ(cli.pass, f.judged.pass) << judge::to_string(f.form);
      EXPECT_EQ(cli.classes, classes(f.judged.findings)) << judge::to_string(f.form);
      std::cout << "[plugin door]" << v.flags << " " << v.plugin << ", " << judge::to_string(f.form)
                << " calls: judge " << (f.judged.pass ? "pass" : "FAIL") << ", door exit " << r.exit_code << "\n";
    }
  }
}

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

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int count_of(const std::string& s, const std::string& needle) {
  int n = 0;
  for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

// `ropecheck audit --plugin` writes the dump audit's JSON keys (plus the plugin's and the properties)
// and a JUnit file with one testcase for the judge, failing with the first bug class, and one per property.
TEST(PluginDoor, json_has_the_dump_audit_s_keys_and_junit_a_testcase_for_the_judge_and_each_property) {
  for (const std::string name : {"hf_f32", "bug_base_500000", "fault_segv"}) {
    SCOPED_TRACE(name);
    const auto& c = find_case(name);
    const std::string base = (scratch_dir() / ("cli_" + name)).string();
    const std::string cmd = std::string(ROPECHECK_CLI) + " audit --plugin " + c.path + " --seed " +
                            std::to_string(kSeed) + " --quiet --json " + base + ".json --junit " + base + ".xml > " +
                            base + ".txt 2>&1";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), c.exit_code);
    const auto j = nlohmann::json::parse(read_all(base + ".json"));
    EXPECT_EQ(j.at("kind"), "plugin");
    EXPECT_EQ(j.at("exit_code").get<int>(), c.exit_code);
    const auto r = audit_case(c);
    if (r.probe_ran) {  // the dump audit's own JSON of the probe: every key is there
      const std::string dump_path = base + ".safetensors";
      write_probe(dump_path, r.form_result(judge::call_form::prefill).probe);
      (void)run_cli(dump_path, claim_of(c.path), "");
      const auto d = nlohmann::json::parse(read_all(dump_path + ".json"));
      for (const auto& [key, value] : d.items()) EXPECT_TRUE(j.contains(key)) << "missing key " << key;
      EXPECT_EQ(j.at("properties").size(), 7u);
    }
    ASSERT_FALSE(j.at("findings").empty() && c.exit_code != 0);
    const std::string xml = read_all(base + ".xml");
    EXPECT_EQ(count_of(xml, "<testcase "), 1 + static_cast<int>(j.at("properties").size())) << xml;
    if (c.exit_code != 0)
      EXPECT_NE(xml.find("<failure type=\"" + std::string(c.first_class) + "\""), std::string::npos) << xml;
    else
      EXPECT_EQ(xml.find("<failure"), std::string::npos) << xml;
  }
}

}  // namespace
}  // namespace ropecheck::audit

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

// A KV-cache off-by-one (hf_rope.cpp BUG_DECODE_ONE_AHEAD: one-token calls rotate at position + 1) is
// right in prefill calls: the door judges decode calls too, names positions_offset first and says the
// finding comes from decode calls.
TEST(PluginDoor, a_kernel_one_position_ahead_in_one_token_calls_fails_as_positions_offset_of_decode_calls) {
  const auto& c = find_case("bug_decode_one_ahead");
  plugin_audit_options o;
  o.seed = kSeed;
  o.run_properties = false;
  const auto r = audit_plugin(c.path, o);
  ASSERT_EQ(r.forms.size(), 2u);
  EXPECT_TRUE(r.form_result(judge::call_form::prefill).passed);
  EXPECT_FALSE(r.form_result(judge::call_form::decode).passed);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().bug_class, judge::classes::positions_offset);
  EXPECT_EQ(r.finding_forms.front(), "decode");
  EXPECT_EQ(r.findings.front().sentence.rfind("decode calls (one token a call): ", 0), 0u) << r.findings.front().sentence;
  std::cout << "[plugin door] bug_decode_one_ahead: " << r.findings.front().sentence << "\n";
  // The command line's JSON and summary say the same.
  const std::string base = (scratch_dir() / "cli_decode_one_ahead").string();
  const std::string cmd = std::string(ROPECHECK_CLI) + " audit --plugin " + c.path + " --seed " + std::to_string(kSeed) +
                          " --max-success 1 --quiet --json " + base + ".json > " + base + ".txt 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  const auto j = nlohmann::json::parse(read_all(base + ".json"));
  EXPECT_TRUE(j.at("forms").at("prefill").at("pass").get<bool>());
  EXPECT_FALSE(j.at("forms").at("decode").at("pass").get<bool>());
  EXPECT_EQ(j.at("findings").at(0).at("form"), "decode");
  EXPECT_EQ(j.at("findings").at(0).at("bug_class"), "positions_offset");
  const std::string text = read_all(base + ".txt");
  EXPECT_NE(text.find("prefill calls pass, decode calls FAIL"), std::string::npos) << text;
}

// A kernel whose output is a function of the position alone answers both forms bitwise alike: a
// warning of both is said once, "(both forms)".
TEST(PluginDoor, a_finding_both_forms_give_is_listed_once_with_both_forms) {
  const auto& c = find_case("hf_f32");
  plugin_audit_options o;
  o.seed = kSeed;
  o.run_properties = false;
  const auto r = audit_plugin(c.path, o);
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
