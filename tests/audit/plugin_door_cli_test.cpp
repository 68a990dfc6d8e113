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
