// tests/audit/plugin_door_cases.hpp — what the plugin door's tests share (tests/audit/plugin_door_test.cpp, the door
// in this process; tests/audit/plugin_door_cli_test.cpp, the door against the command line): the example plugins
// of tools/audit/plugins/ (generated from tools/audit/plugin_audit.cmake's list), the probe seed, a dump of a
// form's outputs, the plugin's claim as flags, and, with ROPECHECK_CLI, `ropecheck audit` on a dump.
#pragma once

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

// Internal linkage, each test executable being one file; [[maybe_unused]]: neither file uses every helper.
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

[[maybe_unused]] std::vector<std::string> classes(const std::vector<judge::finding>& f) {
  std::vector<std::string> v;
  for (const auto& x : f) v.push_back(x.bug_class);
  return v;
}

// The probe's dump as the safetensors file a user would write of those outputs.
[[maybe_unused]] void write_probe(const std::string& path, const judge::dump& d) { test::write_dump_file(path, d); }

// The plugin's declared claim as `ropecheck audit` arguments (ABI 2's config.json, or its fields).
[[maybe_unused]] std::string claim_of(const std::string& plugin_path) { return test::plugin_claim_args(plugin::load_plugin(plugin_path)); }

#ifdef ROPECHECK_CLI
// `ropecheck audit` on a dump: its exit code, verdict and classes (plugin_door_cli_test only).
struct cli_verdict {
  int exit_code = -1;
  bool pass = false;
  std::vector<std::string> classes;
};

[[maybe_unused]] cli_verdict run_cli(const std::string& dump_path, const std::string& claim, const std::string& judge_flags) {
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
#endif

// A directory of this process for the dumps and the command line's outputs, removed at exit.
[[maybe_unused]] std::filesystem::path scratch_dir() {
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

// The plugin door on an example plugin with the probe seed; without properties: the probe and the judge only.
[[maybe_unused]] plugin_audit_result audit_case(const plugin_case& c, const judge::audit_options& judge = {},
                                                bool properties = true) {
  plugin_audit_options o;
  o.seed = kSeed;
  o.judge = judge;
  o.run_properties = properties;
  o.timeout_seconds = 2;  // fault_hang: one wait
  return audit_plugin(c.path, o);
}

[[maybe_unused]] const plugin_case& find_case(const std::string& name) {
  for (const auto& c : kCases)
    if (c.name == name) return c;
  throw std::invalid_argument("no example plugin " + name);
}

}  // namespace
}  // namespace ropecheck::audit
