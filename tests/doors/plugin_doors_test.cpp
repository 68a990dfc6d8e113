// tests/doors/plugin_doors_test.cpp — every example plugin (tools/audit/plugin_audit.cmake: the correct
// kernels real engines use, the bugs and the faults) gets the same class, call form by call form, from
//   1. the plugin door (`ropecheck audit --plugin`'s library: audit_plugin, the kernel in a child process),
//   2. the C++ conformance suite (ropecheck::conformance::judge_probe) on the same library loaded here and
//      bound as a conformance kernel, and
//   3. `ropecheck audit` on a safetensors dump of the outputs the plugin door judged,
// with the same probe seed. The class is what a CI reads (judge::outcome_class): "pass", "drift", or the first
// finding's class; a correct kernel passes every door (at most a drift warning), a bug's expected class is
// first in the form(s) it shows in. A class whose catalogue entry does not list the conformance door (a crash,
// a hang, a write past y: judge::classes, doors) is not asked of it: the suite calls kernels in-process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "plugin_audit.hpp"
#include "plugin_loader.hpp"
#include "plugin_probe.hpp"
#include "ropecheck/conformance/run.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "support/dump_file.hpp"
#include "support/plugin_claim.hpp"

#ifndef ROPECHECK_CLI
#error "ROPECHECK_CLI must name the ropecheck executable"
#endif

namespace ropecheck {
namespace {

struct plugin_case {
  const char* name;
  const char* path;
  int exit_code;            // expected
  const char* first_class;  // expected first finding ("" for a pass)
};

void PrintTo(const plugin_case& c, std::ostream* os) { *os << c.name; }

// Generated from tools/audit/plugin_audit.cmake's list (tests/audit/CMakeLists.txt).
const std::vector<plugin_case> kCases = {
#include "plugin_door_cases.inc"
};

constexpr std::uint64_t kSeed = 0x5eed2026;

std::string class_of(bool pass, const std::vector<judge::finding>& call, const std::vector<judge::finding>& judged) {
  std::vector<std::string> c;
  for (const auto& f : call) c.push_back(f.bug_class);
  for (const auto& f : judged) c.push_back(f.bug_class);
  return judge::outcome_class(pass, c);
}

// The library loaded in this process, as the conformance suite sees a kernel: x converted exactly to the
// plugin's dtype, apply() called, y widened exactly; the kernel's ABI 2 limits as the suite's options.
conformance::kernel bind_plugin(const plugin::loaded_plugin& p) {
  conformance::kernel k;
  k.name = p.name();
  k.dtype = audit::judge_dtype(p.element_type());
  k.compute_digits = 24;
  const rope_config declared = p.declared();
  k.convention = [declared] { return declared; };
  k.opts.seed = kSeed;
  k.opts.max_position = p.limits().max_position;
  k.opts.negative_positions = p.limits().negative_positions;
  k.opts.inverse = p.limits().supports_inverse;
  k.apply = [p](std::span<const long double> x, std::span<long double> y, const conformance::call& c) {
    const std::size_t bytes = x.size() * plugin::element_bytes(p.element_type());
    std::vector<unsigned char> xw(bytes), yw(bytes);
    plugin::to_wire(p.element_type(), x, xw.data());
    const int rc = p.apply_rows_raw(xw.data(), yw.data(), c.positions.data(), 1, c.tokens, c.heads, c.inverse);
    if (rc != 0) throw std::runtime_error("apply() returned " + std::to_string(rc));
    plugin::from_wire(p.element_type(), yw.data(), y);
  };
  k.round = [](long double v) { return v; };  // not used by judge_probe
  return k;
}

struct cli_verdict {
  bool pass = false;
  std::vector<std::string> classes;
};

// `ropecheck audit` on a dump of `d`, claimed as the plugin declares: its JSON's verdict and classes in order.
cli_verdict dump_door(const judge::dump& d, const std::string& claim, const std::filesystem::path& dir) {
  const auto path = dir / "dump.safetensors", json = dir / "dump.json";
  test::write_dump_file(path.string(), d);
  std::filesystem::remove(json);
  const std::string cmd = std::string(ROPECHECK_CLI) + " audit " + path.string() + claim + " --quiet --json " +
                          json.string() + " > " + (dir / "dump.txt").string() + " 2>&1";
  (void)std::system(cmd.c_str());
  std::ifstream in(json);
  cli_verdict v;
  if (!in) {
    ADD_FAILURE() << "no JSON from: " << cmd;
    return v;
  }
  const auto j = nlohmann::json::parse(in);
  v.pass = j.at("pass").get<bool>();
  for (const auto& f : j.at("findings")) v.classes.push_back(f.at("bug_class").get<std::string>());
  return v;
}

std::vector<std::string> classes_of(const std::vector<judge::finding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.bug_class);
  return v;
}

class PluginDoors : public ::testing::TestWithParam<plugin_case> {};

TEST_P(PluginDoors, the_plugin_door_the_conformance_suite_and_a_dump_audit_name_the_same_class_in_each_form) {
  const plugin_case& c = GetParam();
  std::cout << "[ropecheck] seed " << kSeed << " (probe set)\n";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ropecheck_plugin_doors_" + std::string(c.name) + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  audit::plugin_audit_options o;
  o.seed = kSeed;
  o.run_properties = false;
  o.timeout_seconds = 2;
  const audit::plugin_audit_result r = audit::audit_plugin(c.path, o);
  const judge::class_info* expected = c.first_class[0] ? judge::find_class(c.first_class) : nullptr;
  if (c.first_class[0]) {
    ASSERT_NE(expected, nullptr) << c.first_class << " is not a class";
  }
  const bool conformance_too = expected == nullptr || (expected->doors & judge::door::conformance_door) != 0;

  const plugin::loaded_plugin p = plugin::load_plugin(c.path);
  const std::string claim = test::plugin_claim_args(p);
  std::vector<std::string> plugin_classes;
  for (const judge::call_form form : {judge::call_form::prefill, judge::call_form::decode}) {
    SCOPED_TRACE(std::string(c.name) + ", " + judge::call_form_phrase(form));
    const audit::plugin_form_result& f = r.form_result(form);
    const std::string via_plugin = class_of(f.passed, f.call_findings, f.judged.findings);
    plugin_classes.push_back(via_plugin);
    std::cout << "[doors] " << c.name << " " << judge::to_string(form) << ": plugin door " << via_plugin;
    if (f.ran) {
      // The dump cannot show what the calls did (a repeat that differed): the judged part, class for class.
      const cli_verdict dv = dump_door(f.probe, claim, dir);
      std::cout << ", dump audit " << judge::outcome_class(dv.pass, dv.classes);
      EXPECT_EQ(dv.pass, f.judged.pass);
      EXPECT_EQ(dv.classes, classes_of(f.judged.findings));
    }
    if (conformance_too) {
      const conformance::outcome co = conformance::judge_probe(
          bind_plugin(p), form == judge::call_form::prefill ? conformance::call_form::prefill : conformance::call_form::decode);
      const std::string via_suite = judge::outcome_class(co.status != conformance::status::failed, co.bug_classes);
      std::cout << ", conformance suite " << via_suite;
      EXPECT_EQ(via_plugin, via_suite) << co.message;
    }
    std::cout << "\n";
  }
  // The expected class is first in a failing form, and a correct kernel passes both (drift at most).
  if (c.exit_code == 0) {
    for (const auto& k : plugin_classes) EXPECT_TRUE(k == "pass" || k == "drift") << k;
  } else {
    const bool named = plugin_classes[0] == c.first_class || plugin_classes[1] == c.first_class;
    EXPECT_TRUE(named) << "expected " << c.first_class << ", got prefill " << plugin_classes[0] << ", decode "
                       << plugin_classes[1];
    // A form passes, names the bug, or was not called: the door closed after the other form's timeout.
    for (const auto& k : plugin_classes)
      EXPECT_TRUE(k == c.first_class || k == "pass" || k == "drift" || k == judge::classes::plugin_unavailable)
          << "a form names " << k;
  }
  std::filesystem::remove_all(dir);
}

std::vector<plugin_case> judged_cases() {
  std::vector<plugin_case> v;
  for (const auto& c : kCases)
    if (c.exit_code != 2) v.push_back(c);  // a plugin that cannot be loaded has no verdict
  return v;
}

INSTANTIATE_TEST_SUITE_P(ExamplePlugins, PluginDoors, ::testing::ValuesIn(judged_cases()),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace ropecheck
