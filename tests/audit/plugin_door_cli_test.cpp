// tests/audit/plugin_door_cli_test.cpp — the plugin door against the command line (label doors: it runs the
// `ropecheck` executable, so the sanitizer job, which builds the suites only, leaves it out): the judge flags mean
// the same for a plugin and for a dump of its outputs, `audit --plugin`'s JSON has every key of the dump audit's and
// its JUnit a testcase per check, and a decode-only bug's output names the decode calls.
#include "plugin_door_cases.hpp"

#ifndef ROPECHECK_CLI
#error "ROPECHECK_CLI must name the ropecheck executable"
#endif

namespace ropecheck::audit {
namespace {

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

// A KV-cache off-by-one (hf_rope.cpp BUG_DECODE_ONE_AHEAD: one-token calls rotate at position + 1) is
// right in prefill calls: the door judges decode calls too, names positions_offset first and says the
// finding comes from decode calls.
TEST(PluginDoor, a_kernel_one_position_ahead_in_one_token_calls_fails_as_positions_offset_of_decode_calls) {
  const auto& c = find_case("bug_decode_one_ahead");
  const auto r = audit_case(c, {}, /*properties=*/false);
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

}  // namespace
}  // namespace ropecheck::audit

namespace ropecheck::audit {
namespace {

std::string run_to_files(const plugin_case& c, const std::string& base, const std::string& flags = "") {
  const std::string cmd = std::string(ROPECHECK_CLI) + " audit --plugin " + c.path + " --seed " + std::to_string(kSeed) + flags +
                          " --quiet --json " + base + ".json --junit " + base + ".xml > " + base + ".txt 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status)) << cmd;
  EXPECT_EQ(WEXITSTATUS(status), c.exit_code) << cmd;
  return read_all(base + ".txt");
}

// plugin.h ABI 3: without apply_qk there is no qk form, in the result, the summary, the JSON and the JUnit (an ABI 1
// and an ABI 2 plugin, audited as they were before ABI 3).
TEST(PluginDoor, a_plugin_without_apply_qk_has_no_qk_section) {
  for (const std::string name : {"hf_f32", "abi2_llama3_cache"}) {
    SCOPED_TRACE(name);
    const auto& c = find_case(name);
    EXPECT_TRUE(audit_case(c, {}, /*properties=*/false).qk_forms.empty());
    const std::string base = (scratch_dir() / ("no_qk_" + name)).string();
    const std::string text = run_to_files(c, base, " --max-success 5");
    EXPECT_EQ(text.find("qk form"), std::string::npos) << text;
    const auto j = nlohmann::json::parse(read_all(base + ".json"));
    EXPECT_FALSE(j.contains("qk"));
    for (const auto& f : j.at("findings")) EXPECT_EQ(f.at("form").get<std::string>().rfind("qk", 0), std::string::npos);
    const std::string xml = read_all(base + ".xml");
    EXPECT_EQ(count_of(xml, "<testcase "), 1 + static_cast<int>(j.at("properties").size())) << xml;
    EXPECT_EQ(xml.find("qk form"), std::string::npos) << xml;
  }
}

// An ABI 2 plugin that writes abi = ROPECHECK_PLUGIN_ABI, rebuilt against the ABI 3 header (it declares 3), is audited
// exactly as its ABI 2 build: the same notes, forms, findings, and properties (the inverse one skipped for the same
// reason: ABI 2's supports_inverse 0 still means what it meant), and no qk form.
TEST(PluginDoor, an_abi_2_plugin_rebuilt_against_the_abi_3_header_is_audited_as_before) {
  const auto abi2 = audit_case(find_case("abi2_llama3_cache_no_inverse"));
  const auto abi3 = audit_case(find_case("abi2_llama3_cache_rebuilt_abi3"));
  EXPECT_EQ(abi3.exit_code, abi2.exit_code);
  EXPECT_EQ(abi3.convention, abi2.convention);
  EXPECT_EQ(abi3.notes, abi2.notes);
  EXPECT_TRUE(abi3.qk_forms.empty());
  ASSERT_EQ(abi3.forms.size(), abi2.forms.size());
  for (std::size_t i = 0; i < abi2.forms.size(); ++i) {
    EXPECT_EQ(abi3.forms[i].probe.positions, abi2.forms[i].probe.positions);
    EXPECT_EQ(abi3.forms[i].probe.y, abi2.forms[i].probe.y);
    EXPECT_EQ(abi3.forms[i].judged.pass, abi2.forms[i].judged.pass);
  }
  ASSERT_EQ(abi3.findings.size(), abi2.findings.size());
  for (std::size_t i = 0; i < abi2.findings.size(); ++i) {
    EXPECT_EQ(abi3.findings[i].bug_class, abi2.findings[i].bug_class);
    EXPECT_EQ(abi3.findings[i].sentence, abi2.findings[i].sentence);
    EXPECT_EQ(abi3.finding_forms[i], abi2.finding_forms[i]);
  }
  ASSERT_EQ(abi3.properties.size(), abi2.properties.size());
  int skipped = 0;
  for (std::size_t i = 0; i < abi2.properties.size(); ++i) {
    SCOPED_TRACE(abi2.properties[i].name);
    EXPECT_EQ(abi3.properties[i].name, abi2.properties[i].name);
    EXPECT_EQ(abi3.properties[i].passed, abi2.properties[i].passed);
    EXPECT_EQ(abi3.properties[i].successes, abi2.properties[i].successes);
    EXPECT_EQ(abi3.properties[i].skipped, abi2.properties[i].skipped);
    EXPECT_EQ(abi3.properties[i].description, abi2.properties[i].description);
    skipped += abi3.properties[i].skipped.empty() ? 0 : 1;
  }
  EXPECT_EQ(skipped, 1);  // the inverse: supports_inverse 0 and negative_positions 0, as declared
}

// A crash in apply_qk (plugin.h ABI 3) is plugin_crashed, first, naming apply_qk, the qk form's run and the call; the
// x form and the properties, which apply() answers, pass; the JSON and JUnit say it of the qk form.
TEST(PluginDoor, a_crashing_apply_qk_is_plugin_crashed_naming_the_qk_call) {
  const auto& c = find_case("fault_qk_segv");
  const auto r = audit_case(c);
  EXPECT_EQ(r.exit_code, 1);
  for (const auto& f : r.forms) EXPECT_TRUE(f.passed) << judge::call_form_phrase(f.form);
  for (const auto& p : r.properties) EXPECT_TRUE(p.passed) << p.name;
  ASSERT_EQ(r.qk_forms.size(), 2u);
  const auto& prefill = r.qk_form_result(judge::call_form::prefill);
  EXPECT_FALSE(prefill.ran);
  ASSERT_FALSE(prefill.call_findings.empty());
  const judge::finding& crash = prefill.call_findings.front();
  EXPECT_EQ(crash.bug_class, judge::classes::plugin_crashed);
  for (const std::string needle : {"ropecheck_plugin_apply_qk crashed with SIGSEGV", "8 query and 2 key heads",
                                   "the qk form's probe (ropecheck_plugin_apply_qk), the call of"})
    EXPECT_NE(crash.sentence.find(needle), std::string::npos) << needle << " not in: " << crash.sentence;
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().bug_class, judge::classes::plugin_crashed);
  EXPECT_EQ(r.finding_forms.front(), "qk prefill");
  EXPECT_EQ(r.findings.front().sentence.rfind(qk_phrase() + ", prefill calls", 0), 0u) << r.findings.front().sentence;
  std::cout << "[plugin door] fault_qk_segv: " << r.findings.front().sentence << "\n";

  const std::string base = (scratch_dir() / "cli_fault_qk_segv").string();
  const std::string text = run_to_files(c, base, " --max-success 5");
  EXPECT_NE(text.find("the qk form's (apply_qk): prefill calls not judged, decode calls not judged"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(read_all(base + ".json"));
  EXPECT_TRUE(j.at("judge").at("pass").get<bool>());  // the x form's judge
  EXPECT_FALSE(j.at("qk").at("pass").get<bool>());
  EXPECT_EQ(j.at("qk").at("forms").at("prefill").at("call_findings").at(0).at("bug_class"), "plugin_crashed");
  EXPECT_EQ(j.at("findings").at(0).at("form"), "qk prefill");
  const std::string xml = read_all(base + ".xml");
  EXPECT_EQ(count_of(xml, "<testcase "), 2 + static_cast<int>(j.at("properties").size())) << xml;
  EXPECT_EQ(count_of(xml, "<failure "), 1) << xml;  // the qk form's testcase only
  EXPECT_NE(xml.find("<failure type=\"plugin_crashed\" message=\"the qk form"), std::string::npos) << xml;
}

// A qk bug apply() does not have: the x form passes, the qk form fails with the pair's class first; the summary shows
// each side and the pair (score identity, diagnosis), the JSON's "qk" each form's sides, score and findings.
TEST(PluginDoor, a_qk_bug_fails_the_qk_form_alone_and_every_output_says_so) {
  const auto& c = find_case("bug_qk_keys_one_ahead");
  const std::string base = (scratch_dir() / "cli_qk_keys_one_ahead").string();
  const std::string text = run_to_files(c, base, " --max-success 5");
  for (const std::string needle :
       {"the qk form (ropecheck_plugin_apply_qk, 8 query and 2 key heads) in prefill calls", ": the queries, judged as a dump --",
        ": the keys, judged as a dump --", ": queries and keys together --\n  score identity: ",
        "diagnosis (most evidence first):\n  [key_positions_wrong]",
        "the probe's verdict: prefill calls pass, decode calls pass; the qk form's (apply_qk): prefill calls FAIL, decode calls FAIL",
        "first finding: [key_positions_wrong] the qk form"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << " not in:\n" << text;
  const auto j = nlohmann::json::parse(read_all(base + ".json"));
  EXPECT_FALSE(j.at("pass").get<bool>());
  EXPECT_TRUE(j.at("judge").at("pass").get<bool>());
  const auto& qk = j.at("qk");
  EXPECT_EQ(qk.at("query_heads"), 8);
  EXPECT_EQ(qk.at("key_heads"), 2);
  for (const char* form : {"prefill", "decode"}) {
    SCOPED_TRACE(form);
    const auto& o = qk.at("forms").at(form);
    EXPECT_FALSE(o.at("pass").get<bool>());
    EXPECT_TRUE(o.at("queries").at("pass").get<bool>());
    EXPECT_FALSE(o.at("keys").at("pass").get<bool>());
    EXPECT_EQ(o.at("findings").at(0).at("bug_class"), "key_positions_wrong");
    EXPECT_GT(o.at("score").at("worst_ratio").get<double>(), 1.0);  // m - n off by one at the score
  }
  EXPECT_EQ(j.at("findings").at(0).at("bug_class"), "key_positions_wrong");
  EXPECT_EQ(j.at("findings").at(0).at("form").get<std::string>().rfind("qk ", 0), 0u);
  const std::string xml = read_all(base + ".xml");
  EXPECT_NE(xml.find("name=\"the qk form (apply_qk) matches the exact reference\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"key_positions_wrong\""), std::string::npos) << xml;
}

}  // namespace
}  // namespace ropecheck::audit
