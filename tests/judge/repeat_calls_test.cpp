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

}  // namespace
}  // namespace ropecheck::judge_test
