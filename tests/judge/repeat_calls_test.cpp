// tests/judge/repeat_calls_test.cpp — the repeat-call check (ropecheck/judge/repeat_calls.hpp), one class
// for every door: equal bits pass, one differing bit is named with where it is.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/repeat_calls.hpp"

namespace ropecheck::judge_test {
namespace {

using judge::repeat_call_finding;

TEST(RepeatCalls, EqualBitsPassAndOneDifferenceIsNamed) {
  const std::vector<std::int64_t> pos{0, 7, 4096};
  std::vector<double> a(3 * 2 * 4);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25 * static_cast<double>(i) - 1;
  EXPECT_FALSE(repeat_call_finding(a, a, pos, 2, 4, "call"));
  std::vector<double> b = a;
  b[1 * 8 + 1 * 4 + 3] = std::nextafter(b[1 * 8 + 1 * 4 + 3], 10.0);  // token 1 (position 7), head 1, coordinate 3
  const auto f = repeat_call_finding(a, b, pos, 2, 4, "call");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bug_class, judge::classes::nondeterministic);
  EXPECT_NE(f->sentence.find("the same call twice"), std::string::npos) << f->sentence;
  EXPECT_NE(f->sentence.find("1 of 24 values differ, first at token 1 (position 7) head 1 coordinate 3"), std::string::npos)
      << f->sentence;
}

TEST(RepeatCalls, SignedZeroDiffersTwoNaNsAgree) {
  const std::vector<std::int64_t> pos{3};
  const std::vector<double> zero{0.0, 1.0}, negzero{-0.0, 1.0};
  EXPECT_TRUE(repeat_call_finding(zero, negzero, pos, 1, 2, "calls"));
  const double qnan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> n1{qnan, 1.0}, n2{-qnan, 1.0};
  EXPECT_FALSE(repeat_call_finding(n1, n2, pos, 1, 2, "calls"));
}

TEST(RepeatCalls, SizesMustAgree) {
  const std::vector<std::int64_t> pos{0};
  const std::vector<double> a{1, 2}, b{1, 2, 3};
  EXPECT_THROW((void)repeat_call_finding(a, b, pos, 1, 2, "call"), std::invalid_argument);
  EXPECT_THROW((void)repeat_call_finding(b, b, pos, 1, 2, "call"), std::invalid_argument);
}

// Under a dynamic NTK claim the carried state is dynamic_ntk_not_reset, with the decode calls' base when they
// name it; under any other claim the finding stays nondeterministic (issue 34).
TEST(RepeatCalls, CarriedStateUnderADynamicNtkClaimIsThatRulesBug) {
  const judge::finding repeat{judge::classes::nondeterministic, "the same prefill calls twice gave different outputs", 1.0};
  rope_config dynamic;
  dynamic.scaling = scaling_kind::dynamic_ntk, dynamic.factor = 2, dynamic.max_position_embeddings = 4096;
  const std::vector<judge::finding> decode{{judge::classes::angle_drift_fp32, "drift", 0.2},
                                           {judge::classes::dynamic_ntk_not_reset, "base 20000 fits (claimed 10000)", 0.9}};
  const judge::finding named = judge::carried_state_finding(repeat, dynamic, decode);
  EXPECT_EQ(named.bug_class, judge::classes::dynamic_ntk_not_reset);
  EXPECT_NE(named.sentence.find("the same prefill calls twice"), std::string::npos) << named.sentence;
  EXPECT_NE(named.sentence.find("the decode calls: base 20000 fits"), std::string::npos) << named.sentence;
  EXPECT_EQ(judge::carried_state_finding(repeat, dynamic, {}).bug_class, judge::classes::dynamic_ntk_not_reset);
  rope_config yarn = dynamic;
  yarn.scaling = scaling_kind::yarn;
  EXPECT_EQ(judge::carried_state_finding(repeat, yarn, decode).bug_class, judge::classes::nondeterministic);
  const judge::finding other{judge::classes::qk_crossed, "crossed", 1.0};
  EXPECT_EQ(judge::carried_state_finding(other, dynamic, decode).bug_class, judge::classes::qk_crossed);
}

}  // namespace
}  // namespace ropecheck::judge_test
