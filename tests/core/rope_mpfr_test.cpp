// The RoPE kernel instantiated over the MPFR scalar (Boost.Multiprecision, 64 decimal digits):
// kept in its own translation unit so that Boost.Multiprecision and MPFR reach no other test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "ropecheck/judge/error_model.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar_mpfr.hpp"
#include "ropecheck/presets.hpp"
#include "support/positions.hpp"
#include "support/rope_check.hpp"

namespace ropecheck {
namespace {

using mp = mpfr_default;

// cos/sin of the reference's fast path, carried into MPFR without loss (hi + lo is exact there),
// times the attention factor: off by at most 2^-90 (the fast path's contract) plus af's 2^-100.
class reference_cos_sin_mpfr {
 public:
  explicit reference_cos_sin_mpfr(const reference::rope_reference& ref) : ref_(&ref) {
    const auto af = ref.attention_factor();
    af_ = mp(af.hi) + mp(af.lo);
  }
  [[nodiscard]] cos_sin_pair<mp> cos_sin(std::int64_t pos, int band) const {
    const auto cs = ref_->cos_sin(pos, band);
    return {(mp(cs.cos.hi) + mp(cs.cos.lo)) * af_, (mp(cs.sin.hi) + mp(cs.sin.lo)) * af_};
  }

 private:
  const reference::rope_reference* ref_;
  mp af_;
};

TEST(RopeKernelMpfr, mpfr_kernel_matches_the_reference_to_the_fast_paths_2_pow_minus_90) {
  static_assert(rope_scalar<mp>);
  EXPECT_GE(scalar_traits<mp>::digits, 200);
  for (const auto& nc : rule_sweep()) {
    const reference::rope_reference ref(nc.cfg, nc.seq_len);
    const reference_cos_sin_mpfr cs(ref);
    const auto r = test::check_rotation<mp, mp>(nc.cfg, ref, cs, 2,
                                                test::regime_positions(std::int64_t{1} << 40, 20, test::test_seed()),
                                                test::test_seed());
    // The comparison itself happens in long double (rope_check widens): its 2^-64 relative
    // rounding of y, not MPFR's, dominates what can be seen; so the bound here is u_long_double.
    const long double bound = 2 * unit_roundoff<long double>() + std::ldexp(1.0L, -89);
    EXPECT_LE(r.worst, bound) << nc.name << ": " << r.describe();
    std::printf("[ropecheck] %-26s mpfr/mpfr worst normalised error %.3Lg (bound %.3Lg)\n", nc.name.c_str(), r.worst, bound);
  }
}

}  // namespace
}  // namespace ropecheck
