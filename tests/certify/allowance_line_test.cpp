// tests/certify/allowance_line_test.cpp — the sweep's allowance line equals the judge's allowance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "certify/allowance_line.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/reference/reference.hpp"

namespace ropecheck::certify {
namespace {

TEST(AllowanceLine, EqualsTheJudgesAllowanceOnBothSidesOfThePositionRoundingEdge) {
  const rope_config cfg = *find_preset("llama3-8b");
  const reference::rope_reference ref(cfg, 0, 256);
  std::vector<double> theta;
  for (int b = 0; b < ref.bands(); ++b) theta.push_back(static_cast<double>(ref.inv_freq(b).value()));
  for (const char* dtype : {"float32", "bfloat16", "float16", "float64"}) {
    const judge::allowance al(cfg, dtype, judge::reference_kind::exact, false);
    const allowance_line line(al, theta);
    const std::int64_t edge = std::int64_t{1} << 24;
    for (const std::int64_t p : {std::int64_t{0}, std::int64_t{1}, edge - 1, edge, edge + 1, (std::int64_t{1} << 31) - 1})
      for (std::size_t b = 0; b < theta.size(); b += 9) {
        const double judge_value = al.pair(p, static_cast<int>(b), static_cast<double>(p) * theta[b]);
        // Same terms, products grouped differently: a few ulps.
        EXPECT_NEAR(allowance_at(line, p, b), judge_value, 4 * std::ldexp(judge_value, -52)) << dtype << " p " << p << " band " << b;
      }
  }
}

}  // namespace
}  // namespace ropecheck::certify
