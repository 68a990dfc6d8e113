// tests/judge/classes_test.cpp — the bug-class catalogue (ropecheck/judge/classes.hpp): one entry per
// class, the kinds doors branch on, the one verdict -> outcome mapping, and docs/judge.md's table of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ropecheck/judge/classes.hpp"

namespace ropecheck::judge_test {
namespace {

using namespace ropecheck::judge;

TEST(Classes, EveryEntryIsUniqueSnakeCaseAndSaysWhatItMeans) {
  std::set<std::string_view> seen;
  ASSERT_GE(catalogue().size(), 30u);
  for (const class_info& c : catalogue()) {
    EXPECT_TRUE(seen.insert(c.id).second) << "twice: " << c.id;
    // snake case: [a-z][a-z0-9]*(_[a-z0-9]+)*
    const bool snake = !c.id.empty() && c.id.front() >= 'a' && c.id.front() <= 'z' && c.id.back() != '_' &&
                       c.id.find("__") == std::string_view::npos &&
                       c.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string_view::npos;
    EXPECT_TRUE(snake) << c.id;
    EXPECT_GE(c.meaning.size(), 20u) << c.id;
    EXPECT_EQ(find_class(c.id), &c) << c.id;
  }
  EXPECT_EQ(find_class("plugin_nondeterministic"), nullptr);  // one name for the repeat-call check
  EXPECT_EQ(find_class(""), nullptr);
  EXPECT_EQ(find_class("base_wrong "), nullptr) << "lookup is exact";
}

TEST(Classes, CallFailuresAreTheClassesAboutTheCallItself) {
  for (const char* id : {classes::plugin_crashed, classes::plugin_timeout, classes::plugin_out_of_bounds,
                         classes::plugin_error, classes::plugin_unavailable, classes::nondeterministic})
    EXPECT_TRUE(is_call_failure(id)) << id;
  for (const char* id : {classes::base_wrong, classes::unexplained, classes::angle_drift_fp32, classes::property_failed,
                         "plugin_something_new"})
    EXPECT_FALSE(is_call_failure(id)) << id;
  EXPECT_EQ(find_class(classes::angle_drift_fp32)->kind, class_kind::warning);
  EXPECT_EQ(find_class(classes::outputs_in_place)->kind, class_kind::warning);
  EXPECT_EQ(find_class(classes::property_failed)->kind, class_kind::property);
  EXPECT_EQ(find_class(classes::layer_convention_wrong)->kind, class_kind::bug);
}

TEST(Classes, OutcomeIsPassDriftTheFirstClassOrFail) {
  using v = std::vector<std::string>;
  EXPECT_EQ(outcome_class(true, v{}), "pass");
  EXPECT_EQ(outcome_class(true, v{classes::outputs_in_place}), "pass");
  EXPECT_EQ(outcome_class(true, v{classes::angle_drift_fp32}), "drift");
  EXPECT_EQ(outcome_class(true, v{classes::outputs_in_place, classes::angle_drift_fp32}), "drift");  // any warning
  EXPECT_EQ(outcome_class(false, v{}), "fail");
  EXPECT_EQ(outcome_class(false, v{classes::base_wrong, classes::angle_drift_fp32}), "base_wrong");
  EXPECT_EQ(outcome_class(false, v{classes::angle_drift_fp32}), "angle_drift_fp32");  // strict: the drift is the failure
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_cells(const std::string& row) {  // "| a | b |" -> {"a", "b"}
  std::vector<std::string> cells;
  std::size_t at = 1;
  for (std::size_t bar; (bar = row.find(" |", at)) != std::string::npos; at = bar + 2) {
    std::string cell = row.substr(at, bar - at);
    cells.push_back(cell.substr(cell.find_first_not_of(' ')));
  }
  return cells;
}

constexpr const char* kKinds[] = {"bug", "warning", "call", "property"};

// docs/judge.md has one row "| `id` | kind | meaning | decided by | doors | shown red by |" per class, equal to
// the catalogue's entry, and no row for a class that is not one.
TEST(Classes, DocsJudgeTableIsTheCatalogue) {
  const std::string text = read_file(ROPECHECK_SOURCE_DIR "/docs/judge.md");
  std::multiset<std::string> rows;
  for (std::size_t at = 0; (at = text.find("\n| `", at)) != std::string::npos; ++at) {
    const std::string row = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    const std::vector<std::string> cells = split_cells(row);
    ASSERT_EQ(cells.size(), 6u) << row;
    const std::string id = cells[0].substr(1, cells[0].size() - 2);
    rows.insert(id);
    const class_info* c = find_class(id);
    ASSERT_NE(c, nullptr) << "docs/judge.md lists " << id << ", which is not in the catalogue";
    EXPECT_EQ(cells[1], kKinds[static_cast<int>(c->kind)]) << id;
    EXPECT_EQ(cells[2], c->meaning) << id;
    EXPECT_EQ(cells[3], "`" + std::string(c->decided_by) + "`") << id;
    EXPECT_EQ(cells[4], door_names(c->doors)) << id;
    EXPECT_EQ(cells[5], "`" + std::string(c->red_test) + "`") << id;
  }
  for (const class_info& c : catalogue()) EXPECT_EQ(rows.count(std::string(c.id)), 1u) << c.id << " in docs/judge.md";
}

TEST(Classes, DoorNamesFollowTheBits) {
  EXPECT_EQ(door_names(door::every_door), "dump, plugin, conformance, report, certify");
  EXPECT_EQ(door_names(door::plugin_door | door::certify_door), "plugin, certify");
  EXPECT_EQ(door_names(0), "");
}

// Each class is named where the catalogue says (that file spells judge::classes::<id>), reaches at least one
// door, and has a test that shows it red: a GoogleTest of that name whose body names the class, or, for a
// class an example plugin is expected to be named with (tools/audit/plugin_audit.cmake), the test that runs
// every example plugin.
TEST(Classes, EveryClassIsDecidedWhereTheCatalogueSaysAndHasARedTest) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> tests;  // "Suite.Name" -> its body
  for (const auto& e : fs::recursive_directory_iterator(ROPECHECK_SOURCE_DIR "/tests")) {
    if (e.path().extension() != ".cpp") continue;
    const std::string s = read_file(e.path());
    for (std::size_t at = 0; (at = s.find("\nTEST", at)) != std::string::npos; ++at) {
      const std::size_t open = s.find('(', at), comma = s.find(',', open), close = s.find(')', comma);
      if (open == std::string::npos || comma == std::string::npos || close == std::string::npos) break;
      const std::string macro = s.substr(at + 1, open - at - 1);
      if (macro != "TEST" && macro != "TEST_P" && macro != "TEST_F") continue;
      std::string name = s.substr(open + 1, comma - open - 1) + "." + s.substr(comma + 1, close - comma - 1);
      name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
      const std::size_t next = s.find("\nTEST", close);
      tests[name] = s.substr(close, next == std::string::npos ? std::string::npos : next - close);
    }
  }
  ASSERT_GT(tests.size(), 200u);
  const std::string plugins = read_file(ROPECHECK_SOURCE_DIR "/tools/audit/plugin_audit.cmake");
  const std::string runner = "PluginDoorCases.every_example_plugin_gets_its_verdict";
  for (const class_info& c : catalogue()) {
    const std::string id(c.id);
    EXPECT_NE(c.doors, 0u) << id;
    const std::string src = read_file(fs::path(ROPECHECK_SOURCE_DIR) / c.decided_by);
    EXPECT_NE(src.find("classes::" + id), std::string::npos) << c.decided_by << " does not name " << id;
    const auto t = tests.find(std::string(c.red_test));
    if (t == tests.end()) {
      ADD_FAILURE() << id << ": no test " << c.red_test;
      continue;
    }
    const bool names_it = t->second.find("classes::" + id) != std::string::npos ||
                          t->second.find("\"" + id + "\"") != std::string::npos;
    const bool by_plugin = c.red_test == runner && plugins.find(" " + id + " ") != std::string::npos;
    EXPECT_TRUE(names_it || by_plugin) << id << ": " << c.red_test << " does not name it";
  }
}

}  // namespace
}  // namespace ropecheck::judge_test
