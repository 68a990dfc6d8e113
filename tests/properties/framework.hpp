// tests/properties/framework.hpp — running RapidCheck properties the ropecheck way.
//
// Every property runs through check_property(), which
//   * uses the suite's seed: RC_PARAMS="seed=N" if given, else ROPECHECK_SEED, else a fixed
//     default, so a CI run is reproducible and `RC_PARAMS=...` or `ROPECHECK_SEED=...` changes it;
//   * uses RC_PARAMS' max_success (default 100): the deep nightly mode is
//     RC_PARAMS="max_success=2000" ctest -L property;
//   * prints, on failure, the seed, the shrunk counterexample, RapidCheck's reproduce string and
//     the property's own message (the worst case in hex floats, with its position);
//   * can run quietly (for deliberately broken kernels, tests/properties/mutation_test.cpp): the
//     outcome is returned and nothing is printed or added to RapidCheck's reproduce summary.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "rapidcheck/detail/Configuration.h"
#include "rapidcheck/detail/TestListener.h"

namespace ropecheck::test {

struct property_outcome {
  bool passed = false;
  int successes = 0;
  std::uint64_t seed = 0;
  std::string description;     // why it failed: the property's message
  std::string counterexample;  // the shrunk counterexample, one "name: value" per line
  std::string reproduce;       // RC_PARAMS value that replays exactly this failure
  [[nodiscard]] std::string report() const {
    std::ostringstream s;
    s << (passed ? "passed" : "FAILED") << " after " << successes << " successful cases (seed " << seed << ")";
    if (!passed) {
      s << "\n  " << description << "\n  counterexample:\n" << counterexample
        << "  reproduce with: RC_PARAMS=\"" << reproduce << "\"";
    }
    return s.str();
  }
};

namespace detail {

class silent_listener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

inline std::uint64_t suite_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    const char* rc_params = std::getenv("RC_PARAMS");
    if (rc_params && std::strstr(rc_params, "seed=")) return rc::detail::configuration().testParams.seed;
    const char* env = std::getenv("ROPECHECK_SEED");
    return env ? static_cast<std::uint64_t>(std::strtoull(env, nullptr, 0)) : std::uint64_t{0x5eed2026};
  }();
  static const bool printed = [] {
    std::cout << "[ropecheck] property seed " << seed << " (rerun with ROPECHECK_SEED=" << seed
              << "; RapidCheck's own \"Using configuration\" seed is not used)\n";
    return true;
  }();
  (void)printed;
  return seed;
}

}  // namespace detail

// Run one property with shrinking. `id` names it in reproduce strings: keep it unique per
// (property, implementation).
template <class Testable>
property_outcome check_property(const std::string& id, Testable&& property, bool quiet = false, int cases = 0) {
  using namespace rc::detail;
  TestParams params = configuration().testParams;
  params.seed = detail::suite_seed();
  // `cases` scales the case count down for a property that is expensive per case; RC_PARAMS'
  // max_success still scales it up in the deep mode.
  if (cases > 0) params.maxSuccess = std::max(1, params.maxSuccess * cases / 100);
  TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  detail::silent_listener silent;
  const TestResult result =
      quiet ? checkProperty(toProperty(std::forward<Testable>(property)), metadata, params, silent)
            : checkProperty(toProperty(std::forward<Testable>(property)), metadata, params);
  property_outcome out;
  out.seed = params.seed;
  if (result.template is<SuccessResult>()) {
    out.passed = true;
    out.successes = result.template get<SuccessResult>().numSuccess;
    return out;
  }
  if (result.template is<FailureResult>()) {
    const auto& f = result.template get<FailureResult>();
    out.successes = f.numSuccess;
    out.description = f.description;
    std::ostringstream ce;
    for (const auto& [type, value] : f.counterExample) ce << "    " << type << ": " << value << '\n';
    out.counterexample = ce.str();
    Configuration replay;
    replay.testParams = params;
    replay.reproduce[id] = f.reproduce;
    out.reproduce = configToString(replay);
    return out;
  }
  if (result.template is<GaveUpResult>()) {
    out.description = "gave up: " + result.template get<GaveUpResult>().description;
  } else {
    out.description = "error: " + result.template get<Error>().description;
  }
  return out;
}

}  // namespace ropecheck::test

// A GoogleTest check of a property: fails the test with the full report. Variadic so that a
// lambda with commas can be passed inline.
#define ROPECHECK_EXPECT_PROPERTY(id, ...) ROPECHECK_EXPECT_PROPERTY_CASES(id, 0, __VA_ARGS__)
// ...with the case count scaled to `cases` per 100 of RapidCheck's max_success.
#define ROPECHECK_EXPECT_PROPERTY_CASES(id, cases, ...)                                                \
  do {                                                                                                 \
    const auto ropecheck_outcome_ = ::ropecheck::test::check_property((id), (__VA_ARGS__), false, (cases)); \
    EXPECT_TRUE(ropecheck_outcome_.passed) << (id) << ": " << ropecheck_outcome_.report();             \
  } while (0)
