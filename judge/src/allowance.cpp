// judge/src/allowance.cpp — see ropecheck/judge/allowance.hpp for the contract.
#include "ropecheck/judge/allowance.hpp"

#include "ropecheck/judge/error_model.hpp"

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

// The judge's envelope lives in the error model (error_model.hpp section 6): one table.
double k_freq(const rope_config& c, int band, bool fp32) { return judge_k_freq(c, band, fp32); }

allowance::allowance(const rope_config& claimed, std::string_view dtype, reference_kind reference, bool strict,
                     std::optional<double> flat_ulps, double extra_fixed)
    : dt_(dtype_of(dtype)), ref_(reference) {
  if (!(extra_fixed >= 0 && std::isfinite(extra_fixed)))
    throw std::invalid_argument("audit: the extra allowance must be a finite number >= 0");
  if (flat_ulps && !(*flat_ulps > 0 && std::isfinite(*flat_ulps)))
    throw std::invalid_argument("audit: the tolerance override must be a positive number of ulps");
  fp32_angles_ = !strict && dt_.digits < 53;
  uA_ = fp32_angles_ ? 0x1p-24 : 0x1p-53;
  angle_digits_ = fp32_angles_ ? 24 : 53;
  const double uT = dt_.u();
  // cos/sin rounded in T (libm < 1 ulp, times af) 3u; rotation 2u + 4u^2; one store into a 16-bit T.
  fixed_ = 3 * uT + 2 * uT + 4 * uT * uT + (dt_.narrow16 ? uT : 0.0) + extra_fixed;
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
