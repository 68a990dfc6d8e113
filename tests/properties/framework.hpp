// tests/properties/framework.hpp — running RapidCheck properties the ropecheck way, in GoogleTest.
//
// The running itself (check_property, property_outcome, the suite's seed, quiet mode) is
// property_runner.hpp, which has no GoogleTest in it so that `ropecheck audit --plugin` runs the
// same drivers; this header adds the GoogleTest checks. Every property runs through
// check_property(), which
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

#include "property_runner.hpp"

// A GoogleTest check of a property: fails the test with the full report. Variadic so that a
// lambda with commas can be passed inline.
#define ROPECHECK_EXPECT_PROPERTY(id, ...) ROPECHECK_EXPECT_PROPERTY_CASES(id, 0, __VA_ARGS__)
// ...with the case count scaled to `cases` per 100 of RapidCheck's max_success.
#define ROPECHECK_EXPECT_PROPERTY_CASES(id, cases, ...)                                                \
  do {                                                                                                 \
    const auto ropecheck_outcome_ = ::ropecheck::test::check_property((id), (__VA_ARGS__), false, (cases)); \
    EXPECT_TRUE(ropecheck_outcome_.passed) << (id) << ": " << ropecheck_outcome_.report();             \
  } while (0)
