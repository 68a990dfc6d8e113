// tests/doors/plugin_doors_test.cpp — every example plugin (tools/audit/plugin_audit.cmake: the correct
// kernels real engines use, the bugs and the faults) gets the same class, call form by call form, from
//   1. the plugin door (`ropecheck audit --plugin`'s library: audit_plugin, the kernel in a child process),
//   2. the C++ conformance suite (ropecheck::conformance::judge_probe) on the same library loaded here and
//      bound as a conformance kernel, and
//   3. `ropecheck audit` on a safetensors dump of the outputs the plugin door judged,
// with the same probe seed. A plugin with apply_qk (plugin.h ABI 3) is judged in the qk form too: `ropecheck probe
// --form qk` gives the same queries and keys, and `ropecheck audit` of a qk outputs file of the outputs the plugin
// door judged gives each side's and the pair's verdict and classes. The class is what a CI reads (judge::outcome_class): "pass", "drift", or the first
// finding's class; a correct kernel passes every door (at most a drift warning), a bug's expected class is
// first in the form(s) it shows in. A class whose catalogue entry does not list the conformance door (a crash,
// a hang, a write past y: judge::classes, doors) is not asked of it: the suite calls kernels in-process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "plugin_audit.hpp"
#include "plugin_loader.hpp"
#include "plugin_probe.hpp"
#include "tensor_file.hpp"
#include "tensor_write.hpp"
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

// The plugin's dtype as the probe's --dtype and the tensor files' dtype.
std::string probe_dtype(plugin::dtype t) { return audit::judge_dtype(t); }

std::vector<unsigned char> wire(plugin::dtype t, const std::vector<double>& v) {
  std::vector<unsigned char> w(v.size() * plugin::element_bytes(t));
  plugin::to_wire(t, v, w.data());
  return w;
}

// The qk form of the plugin door against `ropecheck audit` of a qk outputs file (docs/scores.md) holding the outputs
// the door judged: `ropecheck probe --form qk` with the door's seed and heads must give the door's queries and keys
// bitwise; each form's queries, keys and pair then get the same verdict and classes. The file's repeated runs are the
// first run's (what the calls did is the door's own finding, as the dump of the x form cannot show it either).
void expect_qk_form_is_the_command_line_s(const audit::plugin_audit_result& r, const plugin::loaded_plugin& p,
                                          const std::string& claim, const std::filesystem::path& dir) {
  const plugin::dtype t = p.element_type();
  const auto probe = dir / "qk_probe.safetensors", outputs = dir / "qk_outputs.safetensors", json = dir / "qk.json";
  const std::string make = std::string(ROPECHECK_CLI) + " probe --form qk --heads " + std::to_string(audit::qk_query_heads) +
                           " --kv-heads " + std::to_string(audit::qk_key_heads) + " --seed " + std::to_string(kSeed) +
                           " --dtype " + probe_dtype(t) + claim + " --out " + probe.string() + " > " + (dir / "probe.txt").string() +
                           " 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  std::map<std::string, std::string> meta;
  const audit::mapped_tensors m = audit::map_safetensors(probe, &meta);
  std::vector<audit::tensor_out> out;
  for (const auto& [name, tb] : m.tensors) out.push_back({name, tb.type, tb.shape, {tb.bytes.begin(), tb.bytes.end()}});
  const auto same_bytes = [&](const std::string& name, const std::vector<unsigned char>& w) {
    const auto& b = m.tensors.at(name).bytes;
    return std::vector<unsigned char>(b.begin(), b.end()) == w;
  };
  for (const auto& f : r.qk_forms) {
    ASSERT_TRUE(f.ran);
    EXPECT_TRUE(same_bytes("q", wire(t, f.queries.x))) << "the door's queries are not the probe file's q";
    EXPECT_TRUE(same_bytes("k", wire(t, f.keys.x))) << "the door's keys are not the probe file's k";
    const std::string F = judge::to_string(f.form);
    const audit::tensor_bytes &q = m.tensors.at("q"), &k = m.tensors.at("k");
    std::vector<std::pair<std::string, bool>> names = {{F + ".q_out", false}, {F + ".k_out", true}};
    if (f.form == judge::call_form::prefill)
      names.insert(names.end(), {{"prefill.q_out_again", false}, {"prefill.k_out_again", true},
                                 {"prefill.q_out_kalt", false}, {"prefill.k_out_qalt", true}});
    for (const auto& [name, keys] : names)
      out.push_back({name, (keys ? k : q).type, (keys ? k : q).shape, wire(t, keys ? f.keys.y : f.queries.y)});
  }
  meta["ropecheck_probe_outputs"] = "1";
  meta["kernel"] = p.name();
  meta["adapter"] = "plugin door";
  meta["device"] = "cpu";
  audit::write_safetensors(outputs, out, meta);
  const std::string audit = std::string(ROPECHECK_CLI) + " audit " + outputs.string() + claim + " --quiet --json " +
                            json.string() + " > " + (dir / "qk.txt").string() + " 2>&1";
  (void)std::system(audit.c_str());
  std::ifstream in(json);
  ASSERT_TRUE(in) << "no JSON from: " << audit;
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("form"), "qk");
  const auto classes_in = [](const nlohmann::json& a) {
    std::vector<std::string> v;
    for (const auto& x : a) v.push_back(x.at("bug_class").get<std::string>());
    return v;
  };
  for (const auto& f : r.qk_forms) {
    SCOPED_TRACE(std::string("the qk form, ") + judge::call_form_phrase(f.form));
    const auto& o = j.at("forms").at(judge::to_string(f.form));
    EXPECT_EQ(o.at("queries").at("pass").get<bool>(), f.judged.queries.pass);
    EXPECT_EQ(classes_in(o.at("queries").at("findings")), classes_of(f.judged.queries.findings));
    EXPECT_EQ(o.at("keys").at("pass").get<bool>(), f.judged.keys.pass);
    EXPECT_EQ(classes_in(o.at("keys").at("findings")), classes_of(f.judged.keys.findings));
    EXPECT_EQ(classes_in(o.at("findings")), classes_of(f.judged.findings));
    EXPECT_EQ(o.at("score").at("pairs").get<std::int64_t>(), f.judged.score.pairs);
    std::cout << "[doors] " << p.name() << " qk " << judge::to_string(f.form) << ": plugin door "
              << class_of(f.judged.pass, {}, f.judged.findings) << ", qk outputs audit "
              << judge::outcome_class(f.judged.pass, classes_in(o.at("findings"))) << "\n";
  }
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
  // ABI 3's apply_qk: the qk form in both call forms, against the command line on its outputs.
  EXPECT_EQ(r.qk_forms.empty(), !p.has_apply_qk());
  if (!r.qk_forms.empty()) {
    for (const auto& f : r.qk_forms) plugin_classes.push_back(class_of(f.passed, f.call_findings, f.judged.findings));
    const bool ran = std::all_of(r.qk_forms.begin(), r.qk_forms.end(), [](const auto& f) { return f.ran; });
    if (ran) expect_qk_form_is_the_command_line_s(r, p, claim, dir);
  }
  // The expected class is first in a failing form, and a correct kernel passes every form (drift at most).
  if (c.exit_code == 0) {
    for (const auto& k : plugin_classes) EXPECT_TRUE(k == "pass" || k == "drift") << k;
  } else {
    const bool named = std::find(plugin_classes.begin(), plugin_classes.end(), c.first_class) != plugin_classes.end();
    std::string got;
    for (const auto& k : plugin_classes) got += " " + k;
    EXPECT_TRUE(named) << "expected " << c.first_class << ", got (prefill, decode[, qk prefill, qk decode])" << got;
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
