// tests/judge/classes_test.cpp — the bug-class catalogue (ropecheck/judge/classes.hpp): one entry per
// class, the kinds doors branch on, the one verdict -> outcome mapping, and docs/judge.md's table of it.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
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
  const std::regex snake("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  ASSERT_GE(catalogue().size(), 30u);
  for (const class_info& c : catalogue()) {
    EXPECT_TRUE(seen.insert(c.id).second) << "twice: " << c.id;
    EXPECT_TRUE(std::regex_match(std::string(c.id), snake)) << c.id;
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

// docs/judge.md has one row "| `id` | kind | meaning |" per class, and no row for a class that is not one.
TEST(Classes, DocsJudgeListsEveryClassOnce) {
  std::ifstream in(ROPECHECK_SOURCE_DIR "/docs/judge.md");
  ASSERT_TRUE(in.good()) << ROPECHECK_SOURCE_DIR "/docs/judge.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::regex row("\\n\\| `([a-z0-9_]+)` \\| (bug|warning|call|property) \\|");
  std::multiset<std::string> rows;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it) {
    const std::string id = (*it)[1];
    rows.insert(id);
    const class_info* c = find_class(id);
    ASSERT_NE(c, nullptr) << "docs/judge.md lists " << id << ", which is not in the catalogue";
    const char* kinds[] = {"bug", "warning", "call", "property"};
    EXPECT_EQ((*it)[2], kinds[static_cast<int>(c->kind)]) << id;
  }
  for (const class_info& c : catalogue()) EXPECT_EQ(rows.count(std::string(c.id)), 1u) << c.id << " in docs/judge.md";
}

}  // namespace
}  // namespace ropecheck::judge_test
