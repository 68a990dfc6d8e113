// ropecheck/conformance.hpp — the RoPE conformance suite as GoogleTest tests.
//
// Write an adapter for your kernel (ropecheck/conformance/kernel.hpp says what it holds), then register
// the suite over the element types you support, at namespace scope in one test source:
//
//   #include <ropecheck/conformance.hpp>
//   ROPECHECK_CONFORMANCE(my_rope, my_rope<float>, my_rope<ropecheck::bfloat16>);
//
// and link ropecheck::conformance and GTest::gtest_main (ropecheck_add_conformance_test() in CMake does
// both and registers the tests with CTest). Each adapter gets the tests
//
//   my_rope/<name>.prefill_outputs_pass_the_judge
//   my_rope/<name>.decode_outputs_pass_the_judge
//   my_rope/<name>.rotation_matches_reference         (and the other properties, property_names())
//   my_rope/<name>.query_key_scores_match_reference   (queries against keys at the score: apply_k)
//
// where <name> is the adapter's name (A::name, else its dtype and compute type: "float32",
// "bfloat16_float32_compute"). They are registered with ::testing::RegisterTest rather than as a typed
// suite, so the names stay these in GoogleTest, in CTest (gtest_discover_tests) and in JUnit.
//
// A failure says what was checked, the figures (error in ulps of the type, position, band, the
// allowance), the bug class the judge names, and the command that replays it; a pass with fp32 angle
// drift prints a warning (options().strict or ROPECHECK_STRICT=1 fails it). JUnit XML comes from
// --gtest_output=xml:<file>, with the bug classes and warnings as test properties.
//
// Only GoogleTest and ropecheck's light headers reach this translation unit: RapidCheck, MPFR and the
// judge are compiled into ropecheck::conformance.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "ropecheck/conformance/kernel.hpp"
#include "ropecheck/conformance/run.hpp"

namespace ropecheck::conformance::detail {

inline std::string current_test_id() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string();
}

// An outcome as GoogleTest sees it: failed fails the test with the message, skipped skips it,
// warning passes and prints and records the message; the bug classes become the test property
// "bug_classes" (comma-separated, most evidence first).
inline void report(const outcome& o) {
  std::string classes;
  for (const auto& c : o.bug_classes) classes += (classes.empty() ? "" : ",") + c;
  if (!classes.empty()) ::testing::Test::RecordProperty("bug_classes", classes);
  switch (o.status) {
    case status::passed: return;
    case status::warning:
      ::testing::Test::RecordProperty("warning", o.message);
      std::cout << "[ropecheck] warning: " << o.message;
      return;
    case status::skipped: GTEST_SKIP() << o.message; return;
    case status::failed: ADD_FAILURE() << o.message; return;
  }
}

inline constexpr const char* prefill_test = "prefill_outputs_pass_the_judge";
inline constexpr const char* decode_test = "decode_outputs_pass_the_judge";

// The tests of one adapter, in the order they run: the judge in both call forms, the properties, then
// queries against keys.
inline std::vector<std::string> check_names() {
  std::vector<std::string> v{prefill_test, decode_test};
  for (auto& p : property_names()) v.push_back(std::move(p));
  v.emplace_back(key_scores_check);
  return v;
}

class check_test : public ::testing::Test {
 public:
  check_test(kernel (*bind_fn)(), std::string check) : bind_(bind_fn), check_(std::move(check)) {}
  void TestBody() override {
    const kernel k = bind_();
    if (check_ == prefill_test) report(judge_probe(k, call_form::prefill, current_test_id()));
    else if (check_ == decode_test) report(judge_probe(k, call_form::decode, current_test_id()));
    else if (check_ == key_scores_check) report(check_key_scores(k, current_test_id()));
    else report(check_property(k, check_, current_test_id()));
  }

 private:
  kernel (*bind_)();
  std::string check_;
};

// Registers prefix/<name of A>.<check> for every adapter and check; a name two adapters share gets
// the adapter's index appended ("float32_1").
template <class... A>
bool register_suite(const char* prefix, const char* file, int line) {
  const std::vector<std::string> names{adapter_name<A>()...};
  kernel (*const binders[])() = {&bind<A>...};
  std::set<std::string> used;
  for (std::size_t i = 0; i < names.size(); ++i) {
    // (appends, not operator+ on temporaries: g++ 12 -O3 -Wrestrict misfires on `"_" + std::string`)
    std::string name = names[i];
    if (!used.insert(name).second) {
      name.append(1, '_').append(std::to_string(i));
      used.insert(name);
    }
    std::string suite(prefix);
    suite.append(1, '/').append(name);
    for (const std::string& check : check_names()) {
      auto* const b = binders[i];
      ::testing::RegisterTest(suite.c_str(), check.c_str(), nullptr, nullptr, file, line,
                              [b, check]() -> ::testing::Test* { return new check_test(b, check); });
    }
  }
  return true;
}

}  // namespace ropecheck::conformance::detail

// The suite over the adapters given, at namespace scope: ROPECHECK_CONFORMANCE(prefix, A1, A2, ...).
// `prefix` is an identifier naming the kernel family (the first part of every test's suite name).
#define ROPECHECK_CONFORMANCE(prefix, ...)                                                          \
  [[maybe_unused]] static const bool ropecheck_conformance_registered_##prefix =                   \
      ::ropecheck::conformance::detail::register_suite<__VA_ARGS__>(#prefix, __FILE__, __LINE__)
