// ropecheck/judge/allowance.hpp — what a careful implementation may be off by: the judge's per-element
// allowance, the one every door applies (dump audit, plugin audit and its properties, the report's
// verdict column). Derived from the error model (error_model.hpp), never tuned to a measurement.
//
// Unit: an element's error |y - y*| relative to af (|x_a| + |x_b|) of its pair (absolute, not ulps;
// divide by eps_T = 2^(1 - digits(T)) for ulps of the dtype). A pass-through coordinate is measured
// relative to |x_j| and allowed u_T (a copy; u_T because a 16-bit store of a wider value rounds).
//
// Terms, for dtype T (u_T = 2^-digits(T)) and reference R:
//   angle     k u_A |p theta_i|, only against the exact reference: angles formed in A = fp32 (fp64 for
//             float64 dumps, and for every dtype in strict mode); k = k_freq(i) + k_pos + 1 with k_freq
//             the fp32 inv_freq bound (pow 2u, reciprocal 1u, e ln(base) when d is not a power of two,
//             a non-representable base, a conservative envelope of the scaling rules' extra steps), or
//             ggml's repeated-product bound i ((2/d) ln base + 3) + 2 when larger; k_pos = 1 past 2^24
//   cos/sin   3 u_T   libm cos/sin (< 1 ulp = 2u) and the multiply by af, or one rounding of a cos/sin
//             cache into T (HF casts cos/sin to the model dtype: that is this rounding)
//   rotation  2 u_T + 4 u_T^2   two products and a sum in T
//   store     u_T when T is a 16-bit type (compute in fp32, store once in T)
// Against the hf or ggml reference (the framework's own fp32 angles computed exactly) the angle term
// is 0. A flat override (--tolerance-ulps X) replaces every rotated-pair term by X eps_T.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::judge {

// A dump/kernel element type: "float32", "bfloat16", "float16", "float64".
struct dtype_info {
  int digits = 24;       // significand bits (bf16 8, fp16 11, fp32 24, fp64 53)
  bool narrow16 = false; // a 16-bit storage type
  [[nodiscard]] double u() const;    // unit roundoff 2^-digits
  [[nodiscard]] double eps() const;  // one ulp at 1: 2 u
};
// Throws std::invalid_argument naming the dtype and the accepted ones.
[[nodiscard]] dtype_info dtype_of(std::string_view dtype);

enum class reference_kind { exact, hf, ggml };
[[nodiscard]] std::string_view to_string(reference_kind k) noexcept;

// k_freq of the fp32 (or fp64) inv_freq computation for band i, in units of u of the angle type: the
// judge's envelope of error_model.hpp (section 6, judge_k_freq).
[[nodiscard]] double k_freq(const rope_config& c, int band, bool fp32);

class allowance {
 public:
  // flat_ulps: the --tolerance-ulps override (> 0, finite), or nullopt for the derived allowance.
  // extra_fixed: added to the position-independent part (a score's read-out and its second side:
  // error_model.hpp section 7, judge/src/readout.cpp).
  allowance(const rope_config& claimed, std::string_view dtype, reference_kind reference, bool strict,
            std::optional<double> flat_ulps = std::nullopt, double extra_fixed = 0);

  // For a rotated pair of band i at position p, with |p theta_i| = abs_angle (the exact angle).
  [[nodiscard]] double pair(std::int64_t p, int band, double abs_angle) const;
  // The position-independent part (cos/sin + rotation + store), or the flat override.
  [[nodiscard]] double fixed() const { return flat_ ? *flat_ : fixed_; }
  // The angle-formation part alone (0 unless judged against exact angles, without a flat override).
  [[nodiscard]] double angle_term(std::int64_t p, int band, double abs_angle) const;
  [[nodiscard]] double pass_through() const { return dt_.u(); }
  // Angles are allowed fp32 formation (the default for every dtype but float64; off in strict mode).
  [[nodiscard]] bool fp32_angles() const { return fp32_angles_; }
  [[nodiscard]] const dtype_info& dtype() const { return dt_; }
  [[nodiscard]] bool flat() const { return flat_.has_value(); }
  [[nodiscard]] double k_min() const { return kf_.empty() ? 0 : kf_.front(); }
  [[nodiscard]] double k_max() const { return kf_.empty() ? 0 : kf_.back(); }

 private:
  dtype_info dt_;
  reference_kind ref_;
  bool fp32_angles_;
  double uA_;
  int angle_digits_;
  double fixed_;
  std::optional<double> flat_;
  std::vector<double> kf_;
};

}  // namespace ropecheck::judge
