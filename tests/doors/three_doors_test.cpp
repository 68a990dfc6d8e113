// tests/doors/three_doors_test.cpp — the doors agree: each default implementation of the report, on the
// llama3-8b preset, gets the same class from
//   1. the report's verdict column (report::judge_implementation on the probe set),
//   2. `ropecheck audit --plugin` on the same implementation behind the C plugin interface
//      (tools/report/strategy_plugin.cpp, chosen with ROPECHECK_STRATEGY), and
//   3. `ropecheck audit` on a safetensors dump of its outputs on the probe set,
// all three with the same probe seed. The class is "pass", "drift" (a pass with an angle_drift_fp32
// warning) or the first finding's bug_class: what a CI reads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "report/engine.hpp"
#include "plugin_loader.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/presets.hpp"
#include "report/strategy_outputs.hpp"
#include "support/dump_file.hpp"

#if !defined(ROPECHECK_CLI) || !defined(ROPECHECK_STRATEGY_PLUGIN)
#error "ROPECHECK_CLI and ROPECHECK_STRATEGY_PLUGIN must name the ropecheck executable and the strategy plugin"
#endif

namespace ropecheck {
namespace {

constexpr std::uint64_t kSeed = 0x5eed2026;

// The outcome of a door's JSON, by the judge's one mapping (judge::outcome_class).
std::string class_of(const nlohmann::json& j) {
  std::vector<std::string> classes;
  for (const auto& x : j.at("findings")) classes.push_back(x.at("bug_class").get<std::string>());
  return judge::outcome_class(j.at("pass").get<bool>(), classes);
}

nlohmann::json run_json(const std::string& cmd, const std::filesystem::path& out) {
  std::filesystem::remove(out);
  const int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, -1) << cmd;
  std::ifstream in(out);
  EXPECT_TRUE(in.good()) << "no JSON from: " << cmd;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "unreadable JSON from: " << cmd;
  return j;
}

class ThreeDoors : public ::testing::TestWithParam<std::string> {};

TEST_P(ThreeDoors, the_report_the_plugin_door_and_a_dump_audit_name_the_same_class) {
  std::cout << "[ropecheck] seed " << kSeed << " (probe set)\n";
  const std::string name = GetParam();
  const rope_config cfg = *find_preset("llama3-8b");
  const auto dir = std::filesystem::temp_directory_path() / ("ropecheck_three_doors_" + name);
  std::filesystem::create_directories(dir);

  // 1. The report's verdict column.
  const report::judge_column col = report::judge_implementation(name, cfg, kSeed);
  ASSERT_TRUE(col.judged);

  // 2. The plugin door (a separate process: the plugin reads its strategy once, at load).
  const auto plugin_json = dir / "plugin.json";
  const nlohmann::json pj = run_json("ROPECHECK_STRATEGY=" + name + " ROPECHECK_STRATEGY_PRESET=llama3-8b " +
                                         ROPECHECK_CLI + " audit --plugin " + ROPECHECK_STRATEGY_PLUGIN +
                                         " --seed " + std::to_string(kSeed) + " --quiet --json " +
                                         plugin_json.string() + " > /dev/null",
                                     plugin_json);
  ASSERT_TRUE(pj.is_object());

  // 3. A dump of its outputs on the same probe set.
  const judge::dump d = report::strategy_outputs(name, cfg, judge::make_probe(cfg, kSeed));
  const auto dump_path = dir / "dump.safetensors";
  test::write_dump_file(dump_path.string(), d);
  const auto dump_json = dir / "dump.json";
  const nlohmann::json dj = run_json(std::string(ROPECHECK_CLI) + " audit " + dump_path.string() +
                                         " --preset llama3-8b --quiet --json " + dump_json.string() + " > /dev/null",
                                     dump_json);
  ASSERT_TRUE(dj.is_object());

  const std::string via_plugin = class_of(pj), via_dump = class_of(dj);
  EXPECT_EQ(col.verdict, via_dump) << name << ": report says " << col.verdict << " (" << col.finding
                                   << "), the dump audit " << via_dump;
  EXPECT_EQ(via_plugin, via_dump) << name << ": plugin door says " << via_plugin << ", the dump audit " << via_dump
                                  << "\nplugin findings: " << pj.at("findings").dump();
  std::filesystem::remove_all(dir);
}

std::vector<std::string> default_implementations() {
  std::vector<std::string> v;
  for (const auto& i : report::known_implementations())
    if (i.in_default_set) v.push_back(i.name);
  return v;
}

INSTANTIATE_TEST_SUITE_P(DefaultImplementations, ThreeDoors, ::testing::ValuesIn(default_implementations()),
                         [](const auto& c) { return c.param; });  // not `info`: the macro's own

}  // namespace
}  // namespace ropecheck
