// tools/judge/src/allowance.cpp — see ropecheck/judge/allowance.hpp for the contract.
#include "ropecheck/judge/allowance.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ropecheck::judge {

double dtype_info::u() const { return std::ldexp(1.0, -digits); }
double dtype_info::eps() const { return 2 * u(); }

dtype_info dtype_of(std::string_view s) {
  if (s == "float32") return {24, false};
  if (s == "float64") return {53, false};
  if (s == "bfloat16") return {8, true};
  if (s == "float16") return {11, true};
  throw std::invalid_argument("audit: unknown dtype '" + std::string(s) + "' (float32, bfloat16, float16, float64)");
}

std::string_view to_string(reference_kind k) noexcept {
  return k == reference_kind::hf ? "hf" : k == reference_kind::ggml ? "ggml" : "exact";
}

// The shape of error_model.hpp's bound_hf, with a conservative envelope for the scaling rules.
double k_freq(const rope_config& c, int band, bool fp32) {
  const int d = c.rotary_dim;
  const double e = 2.0 * band / d;
  const bool pow2 = d > 0 && (d & (d - 1)) == 0;
  const double base_inexact = fp32 && static_cast<double>(static_cast<float>(c.base)) != c.base ? 1.0 : 0.0;
  double rho = 2.0 /*pow*/ + 1.0 /*reciprocal*/ + (pow2 ? 0.0 : e * std::log(c.base)) + e * base_inexact;
  const double s = std::max(c.factor, 1.0);
  switch (c.scaling) {
    case scaling_kind::none: break;
    case scaling_kind::linear: rho += 2; break;
    case scaling_kind::ntk:
    case scaling_kind::dynamic_ntk:
      rho += 3 + e * (4 + 2 * std::log(s) + std::log(c.base) * (pow2 ? 0.0 : 1.0));
      break;
    case scaling_kind::yarn:
    case scaling_kind::llama3: rho += 6 + (s - 1) * (2 * rho + 16); break;
    case scaling_kind::longrope: rho += 3; break;
  }
  // ggml forms theta_i by i repeated fp32 products with theta_scale = powf(base, -2/d): its bound
  // (error_model.hpp section 3) grows with the band; DESIGN counts it as a careful fp32
  // implementation whose drift is a warning, so the fp32 allowance covers it too.
  if (fp32) rho = std::max(rho, band * ((2.0 / d) * std::log(c.base) + 3.0) + 2.0 + (rho - 3.0));
  return rho;
}

allowance::allowance(const rope_config& claimed, std::string_view dtype, reference_kind reference, bool strict,
                     std::optional<double> flat_ulps)
    : dt_(dtype_of(dtype)), ref_(reference) {
  if (flat_ulps && !(*flat_ulps > 0 && std::isfinite(*flat_ulps)))
    throw std::invalid_argument("audit: the tolerance override must be a positive number of ulps");
  fp32_angles_ = !strict && dt_.digits < 53;
  uA_ = fp32_angles_ ? 0x1p-24 : 0x1p-53;
  angle_digits_ = fp32_angles_ ? 24 : 53;
  const double uT = dt_.u();
  // cos/sin rounded in T (libm < 1 ulp, times af) 3u; rotation 2u + 4u^2; one store into a 16-bit T.
  fixed_ = 3 * uT + 2 * uT + 4 * uT * uT + (dt_.narrow16 ? uT : 0.0);
  if (flat_ulps) flat_ = *flat_ulps * dt_.eps();
  kf_.resize(static_cast<std::size_t>(claimed.bands()));
  for (int i = 0; i < claimed.bands(); ++i) kf_[static_cast<std::size_t>(i)] = k_freq(claimed, i, fp32_angles_);
}

double allowance::angle_term(std::int64_t p, int band, double abs_angle) const {
  if (flat_ || ref_ != reference_kind::exact || band < 0 || band >= static_cast<int>(kf_.size())) return 0;
  const double kpos = std::fabs(static_cast<double>(p)) > std::ldexp(1.0, angle_digits_) ? 1.0 : 0.0;
  return (kf_[static_cast<std::size_t>(band)] + kpos + 1) * uA_ * abs_angle;
}

double allowance::pair(std::int64_t p, int band, double abs_angle) const {
  return fixed() + angle_term(p, band, abs_angle);
}

}  // namespace ropecheck::judge
