// The MPFR kernel as an implementation under test: rotate_heads over Boost.Multiprecision's
// mpfr backend (64 decimal digits), cos/sin from the reference carried into MPFR exactly.
// Its own translation unit so that Boost.Multiprecision reaches nothing else.
#include <memory>

#include "ropecheck/scalar_mpfr.hpp"
#include "rope_under_test.hpp"

namespace ropecheck::test {

namespace {

using mp = mpfr_default;

class reference_cos_sin_mpfr {
 public:
  explicit reference_cos_sin_mpfr(std::shared_ptr<const reference::rope_reference> ref) : ref_(std::move(ref)) {
    const auto af = ref_->attention_factor();
    af_ = mp(af.hi) + mp(af.lo);
  }
  [[nodiscard]] cos_sin_pair<mp> cos_sin(std::int64_t pos, int band) const {
    const auto cs = ref_->cos_sin(pos, band);
    return {(mp(cs.cos.hi) + mp(cs.cos.lo)) * af_, (mp(cs.sin.hi) + mp(cs.sin.lo)) * af_};
  }

 private:
  std::shared_ptr<const reference::rope_reference> ref_;
  mp af_;
};

}  // namespace

rope_under_test bind_mpfr_kernel(const named_config& nc) {
  rope_under_test r;
  r.name = "mpfr/mpfr exact";
  r.wide_compute = true;  // MPFR at the reference's precision
  r.declared = nc.cfg;
  r.seq_len = nc.seq_len;
  r.ref = std::make_shared<const reference::rope_reference>(nc.cfg, nc.seq_len);
  r.to_storage = [](long double v) { return v; };
  const auto cs = std::make_shared<reference_cos_sin_mpfr>(r.ref);
  const rope_geometry g = rope_geometry::of(nc.cfg);
  r.rotate = [cs, g](std::span<const long double> x, std::span<long double> y, int heads, std::int64_t pos,
                     rotation_sense sense) {
    std::vector<mp> xs(x.begin(), x.end()), ys(x.size());
    rotate_heads<mp>(std::span<const mp>(xs), std::span<mp>(ys), heads, g, pos, *cs, sense);
    for (std::size_t j = 0; j < y.size(); ++j) y[j] = ys[j].convert_to<long double>();
  };
  // The fast path's 2^-90 on cos/sin, and the final rounding of y to long double (the
  // interchange type), which is what a caller can observe: 2 u_long_double.
  r.bound = [](std::int64_t, int) { return std::ldexp(1.0L, -89) + 2 * unit_roundoff<long double>(); };
  return r;
}

}  // namespace ropecheck::test
