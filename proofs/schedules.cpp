// proofs/schedules.cpp — compile-time theorems about the frequency schedules (schedule.hpp) and
// the other positional schemes (positional.hpp). If this translation unit compiles, they hold.
//
// Every theorem is a static_assert over constant evaluation of THE SAME code that runs at run
// time: compute_frequencies<double> / <long double> (hence detail::compute_native, ntk_base_in,
// attention_factor_in, yarn_get_mscale), ntk_scaled_base, alibi_slopes, t5_relative_position_bucket.
// Nothing below re-implements a rule; where a theorem needs a quantity the schedule keeps local
// (YaRN's correction range), it is computed here independently, in long double, from the paper's
// formula, and the theorem only holds if the code agrees with it band by band.
//
// Arithmetic in constant evaluation: g++ folds std::pow/log/exp2/sqrt/floor/ceil/ldexp on double
// and long double through MPFR, correctly rounded. glibc's pow/log at run time are < 1 ulp, so
// the bounds below are stated for the compile-time evaluation and, where different, for glibc.
//
// Clang does not evaluate libm calls in constant expressions: under clang only the exact parts
// that never reach libm are proved (the block after #else at the end of the theorem list).
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numbers>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/positional.hpp"
#include "ropecheck/presets.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::proofs::schedules {
namespace {

// ---- vocabulary ---------------------------------------------------------------------------------

template <class T>
constexpr T magnitude(T x) {
  return x < T(0) ? -x : x;
}

// Bitwise identity. float/double through their bit patterns; long double (x87, 6 padding bytes
// that std::bit_cast may not read in a constant expression) by value and sign, which is bitwise
// identity for the finite non-zero values compared here.
template <class T>
constexpr bool identical(T a, T b) {
  if constexpr (sizeof(T) == sizeof(std::uint64_t) && std::numeric_limits<T>::digits == 53)
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  else if constexpr (sizeof(T) == sizeof(std::uint32_t))
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
  else
    return a == b && std::signbit(a) == std::signbit(b);
}

// |a - b| <= k * eps_T * |b|: "within k epsilons of b, relative" (one eps = one ulp at 1).
template <class T>
constexpr bool within_eps(T a, T b, T k) {
  return magnitude(a - b) <= k * std::numeric_limits<T>::epsilon() * magnitude(b);
}

constexpr rope_config plain(int d, double base) {
  rope_config c;
  c.head_dim = c.rotary_dim = d;
  c.base = base;
  return c;
}

constexpr rope_config ntk(int d, double s, double base) {
  rope_config c = plain(d, base);
  c.scaling = scaling_kind::ntk;
  c.factor = s;
  return c;
}

constexpr rope_config dynamic_ntk(int d, double s, double base, std::int64_t max_positions) {
  rope_config c = plain(d, base);
  c.scaling = scaling_kind::dynamic_ntk;
  c.factor = s;
  c.max_position_embeddings = max_positions;
  return c;
}

// The preset "qwen2.5-7b-yarn" itself (presets.hpp is constexpr, so the proofs use the same data).
constexpr rope_config qwen25_yarn() { return *find_preset("qwen2.5-7b-yarn"); }

// The preset "deepseek-v3" itself (presets.hpp is constexpr, so the proofs use the same data).
constexpr rope_config deepseek_v3() { return *find_preset("deepseek-v3"); }

// Llama-2's geometry under YaRN x8 without truncation: real-valued (non-integer) cut-offs.
constexpr rope_config llama2_yarn_untruncated() {
  rope_config c = plain(128, 10000.0);
  c.scaling = scaling_kind::yarn;
  c.factor = 8.0;
  c.original_max_position_embeddings = 4096;
  c.max_position_embeddings = 32768;
  c.truncate = false;
  return c;
}

// The preset "llama3-8b" itself (presets.hpp is constexpr, so the proofs use the same data).
constexpr rope_config llama31_8b() { return *find_preset("llama3-8b"); }

// The same geometry with the scaling rule removed: the unscaled theta_i = base^(-2i/d).
constexpr rope_config unscaled(rope_config c) {
  c.scaling = scaling_kind::none;
  c.factor = 1.0;
  return c;
}

template <class T>
constexpr T band(const rope_config& c, int i, std::int64_t seq_len = 0) {
  return compute_frequencies<T>(c, seq_len).inv_freq.at(static_cast<std::size_t>(i));
}

}  // namespace

#if defined(__GNUC__) && !defined(__clang__)
namespace {

// ---- NTK ----------------------------------------------------------------------------------------
// theta'_0 = base'^0 = 1: pow(x, -0) is exactly 1 for every x (C Annex F), so exact.
template <class T>
constexpr bool ntk_keeps_first_band(const rope_config& c) {
  return identical(band<T>(c, 0), T(1));
}

// theta'_{n-1} = (base * s^(d/(d-2)))^(-(d-2)/d) = theta_{n-1} / s in exact arithmetic.
// Error bound, u = eps/2 (unit roundoff), all pow correctly rounded (constant evaluation):
//   code: k = fl(d/(d-2)) = d/(d-2) (1+h1); e = fl((d-2)/d) = (d-2)/d (1+h2) (h2 = 0 for d a power
//   of two); P = s^k (1+a1); base' = base P (1+a2); theta' = base'^-e (1+a3).
//   target: theta = base^-e (1+a4), fl(theta / s) (1+a5) (a5 = 0 for s a power of two).
//   theta' / target = s^(1 - k e) (1+a1)^-e (1+a2)^-e (1+a3) / ((1+a4)(1+a5)), with |1 - k e| <= 2u
//   (k e = (1+h1)(1+h2)), e < 1, so the relative gap is <= 2|ln s| u + 2u + 3u (+ O(u^2))
//   < (|ln s| + 3) eps. (With glibc's pow, < 1 ulp = 2u per call, the same sum is < (|ln s| + 4) eps.)
template <class T>
constexpr bool ntk_divides_last_band_by_s(const rope_config& c) {
  const int last = c.bands() - 1;
  const T s = static_cast<T>(c.factor);
  const T target = band<T>(unscaled(c), last) / s;
  return within_eps(band<T>(c, last), target, magnitude(T(std::log(s))) + T(3));
}

// Exactly equal where every step is exact: s = 1 (pow(1, k) = 1, base' = base: the whole schedule
// is the unscaled one), and d = 4 with s a power of two and s^2 base exact (k = 2, e = 1/2:
// theta' = fl((s^2 base)^-1/2) = fl(base^-1/2 / s) = fl(base^-1/2) / s, scaling by 2^j commutes
// with rounding).
template <class T>
constexpr bool ntk_is_exactly_unscaled_when_s_is_1(const rope_config& c) {
  const auto scaled = compute_frequencies<T>(c).inv_freq;
  const auto plain_ = compute_frequencies<T>(unscaled(c)).inv_freq;
  for (std::size_t i = 0; i < scaled.size(); ++i)
    if (!identical(scaled[i], plain_[i])) return false;
  return c.factor == 1.0;
}

template <class T>
constexpr bool ntk_divides_last_band_exactly(const rope_config& c) {
  const int last = c.bands() - 1;
  return identical(band<T>(c, last), band<T>(unscaled(c), last) / static_cast<T>(c.factor));
}

}  // namespace

// Theorem NTK-1: the first band keeps theta_0 = 1, exactly.
static_assert(ntk_keeps_first_band<double>(ntk(128, 8.0, 1e4)), "NTK keeps theta_0 = 1 exactly (d 128, s 8, base 1e4, double).");
static_assert(ntk_keeps_first_band<long double>(ntk(128, 8.0, 1e4)), "NTK keeps theta_0 = 1 exactly (d 128, s 8, base 1e4, long double).");
static_assert(ntk_keeps_first_band<double>(ntk(128, 4.0, 5e5)), "NTK keeps theta_0 = 1 exactly (d 128, s 4, base 5e5).");
static_assert(ntk_keeps_first_band<double>(ntk(96, 3.0, 1e4)), "NTK keeps theta_0 = 1 exactly (d 96, s 3, base 1e4).");
static_assert(ntk_keeps_first_band<long double>(ntk(64, 40.0, 1e4)), "NTK keeps theta_0 = 1 exactly (d 64, s 40, long double).");
static_assert(ntk_keeps_first_band<double>(ntk(128, 0.5, 1e4)), "NTK keeps theta_0 = 1 exactly even when s < 1 compresses the schedule.");

// Theorem NTK-2: the last band becomes theta_{n-1} / s, within (|ln s| + 3) eps (bound above).
static_assert(ntk_divides_last_band_by_s<double>(ntk(128, 8.0, 1e4)), "NTK divides the last band by s (d 128, s 8, base 1e4, double).");
static_assert(ntk_divides_last_band_by_s<long double>(ntk(128, 8.0, 1e4)), "NTK divides the last band by s (d 128, s 8, base 1e4, long double).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(128, 4.0, 5e5)), "NTK divides the last band by s (d 128, s 4, base 5e5).");
static_assert(ntk_divides_last_band_by_s<long double>(ntk(128, 4.0, 5e5)), "NTK divides the last band by s (d 128, s 4, base 5e5, long double).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(128, 32.0, 1e6)), "NTK divides the last band by s (d 128, s 32, base 1e6).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(64, 40.0, 1e4)), "NTK divides the last band by s (d 64, s 40, base 1e4).");
static_assert(ntk_divides_last_band_by_s<long double>(ntk(64, 40.0, 1e4)), "NTK divides the last band by s (d 64, s 40, long double).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(96, 3.0, 1e4)), "NTK divides the last band by s when neither d nor s is a power of two (d 96, s 3).");
static_assert(ntk_divides_last_band_by_s<long double>(ntk(80, 2.5, 1e4)), "NTK divides the last band by s (d 80, s 2.5, long double).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(256, 16.0, 1e4)), "NTK divides the last band by s (d 256, s 16).");
static_assert(ntk_divides_last_band_by_s<double>(ntk(128, 0.5, 1e4)), "NTK multiplies the last band by 1/s when s < 1 (d 128, s 0.5).");

// Theorem NTK-3: exactly where every step is exact.
static_assert(ntk_is_exactly_unscaled_when_s_is_1<double>(ntk(128, 1.0, 1e4)), "NTK with s = 1 is the unscaled schedule, bit for bit.");
static_assert(ntk_is_exactly_unscaled_when_s_is_1<long double>(ntk(96, 1.0, 5e5)), "NTK with s = 1 is the unscaled schedule, bit for bit (d 96, long double).");
static_assert(ntk_divides_last_band_exactly<double>(ntk(4, 8.0, 1e4)), "NTK divides the last band by s exactly for d 4, s 8 (k = 2, e = 1/2).");
static_assert(ntk_divides_last_band_exactly<long double>(ntk(4, 8.0, 1e4)), "NTK divides the last band by s exactly for d 4, s 8 (long double).");
static_assert(ntk_divides_last_band_exactly<double>(ntk(4, 2.0, 5e5)), "NTK divides the last band by s exactly for d 4, s 2, base 5e5.");

// ---- YaRN ---------------------------------------------------------------------------------------
namespace {

// The correction range of YaRN (Peng et al. 2023, sec. 3.2; HF find_correction_range), computed
// here in long double from the formula, independently of the schedule:
//   cd(r) = d ln(L0 / (2 pi r)) / (2 ln base), low = cd(beta_fast), high = cd(beta_slow),
//   floor/ceil when truncating, clamped to [0, d - 1].
struct correction_range {
  long double low;
  long double high;
};

constexpr correction_range yarn_reference_range(const rope_config& c) {
  const long double d = c.rotary_dim;
  const long double L0 = static_cast<long double>(c.trained_length());
  const long double two_pi = 2.0L * std::numbers::pi_v<long double>;
  const auto cd = [&](long double r) { return d * std::log(L0 / (two_pi * r)) / (2.0L * std::log(static_cast<long double>(c.base))); };
  long double low = cd(c.beta_fast);
  long double high = cd(c.beta_slow);
  if (c.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {low < 0 ? 0.0L : low, high > d - 1 ? d - 1 : high};
}

// Bands at or below the low cut-off are the unscaled theta_i, bit for bit (ramp 0: extrapolation).
template <class T>
constexpr bool yarn_keeps_bands_up_to_low_cutoff(const rope_config& c) {
  const correction_range r = yarn_reference_range(c);
  const auto f = compute_frequencies<T>(c).inv_freq;
  const auto x = compute_frequencies<T>(unscaled(c)).inv_freq;
  int checked = 0;
  for (int i = 0; i < c.bands(); ++i)
    if (i <= r.low) {
      if (!identical(f[i], x[i])) return false;
      ++checked;
    }
  return checked > 0;
}

// Bands at or above the high cut-off are theta_i / s, bit for bit (ramp 1: interpolation).
template <class T>
constexpr bool yarn_interpolates_bands_from_high_cutoff(const rope_config& c) {
  const correction_range r = yarn_reference_range(c);
  const auto f = compute_frequencies<T>(c).inv_freq;
  const auto x = compute_frequencies<T>(unscaled(c)).inv_freq;
  const T s = static_cast<T>(c.factor);
  int checked = 0;
  for (int i = 0; i < c.bands(); ++i)
    if (i >= r.high) {
      if (!identical(f[i], x[i] / s)) return false;
      ++checked;
    }
  return checked > 0;
}

// Between the cut-offs the ratio theta'_i / theta_i falls strictly, band by band, from 1 at the
// last band <= low to 1/s at the first band >= high, and the ramp it implies, (1 - ratio) / (1 - 1/s),
// is the linear (i - low) / (high - low) to within 1e-12 (each ratio carries a few roundings,
// ~1e-16; the ramp's steps are >= 1/45). (Outside the cut-offs the ratio is 1, or fl(fl(x/s)/x),
// which wobbles by an ulp around 1/s when s is not a power of two: not asserted monotone there.)
template <class T>
constexpr bool yarn_ramp_is_monotone_and_linear_between_cutoffs(const rope_config& c) {
  const correction_range r = yarn_reference_range(c);
  const auto f = compute_frequencies<T>(c).inv_freq;
  const auto x = compute_frequencies<T>(unscaled(c)).inv_freq;
  const T s = static_cast<T>(c.factor);
  const int first = static_cast<int>(std::floor(r.low));
  const int last = static_cast<int>(std::ceil(r.high));
  if (first < 0 || last >= c.bands() || !(first < last)) return false;
  if (!identical(f[first] / x[first], T(1))) return false;
  T previous = T(1);
  for (int i = first + 1; i <= last; ++i) {
    const T ratio = f[i] / x[i];
    if (!(ratio < previous)) return false;  // strictly falling
    if (i < last) {
      if (!(ratio > T(1) / s) || !(ratio < T(1))) return false;  // strictly inside
      const T ramp = (T(1) - ratio) / (T(1) - T(1) / s);
      const T linear = static_cast<T>((i - r.low) / (r.high - r.low));
      if (magnitude(ramp - linear) > T(1e-12)) return false;
    }
    previous = ratio;
  }
  return true;
}

// The attention factor is 0.1 ln s + 1 (YaRN's sqrt(1/t)). Each side (the schedule's, and the
// long double closed form here) is four roundings of size <= u |result| away from the exact value,
// so they differ by <= 8u = 4 eps.
template <class T>
constexpr bool yarn_attention_factor_is_tenth_ln_s_plus_1(const rope_config& c) {
  const long double exact = 1.0L + std::log(static_cast<long double>(c.factor)) / 10.0L;
  return within_eps(compute_frequencies<T>(c).attention_factor, static_cast<T>(exact), T(4));
}

}  // namespace

// The correction ranges, stated: the numbers below are the independent long double computation.
static_assert(yarn_reference_range(qwen25_yarn()).low == 23 && yarn_reference_range(qwen25_yarn()).high == 40,
              "YaRN's correction range for Qwen2.5 (d 128, theta 1e6, L0 32768, beta 32/1) is bands 23..40 (floor 23.60, ceil 39.65).");
static_assert(yarn_reference_range(deepseek_v3()).low == 10 && yarn_reference_range(deepseek_v3()).high == 23,
              "YaRN's correction range for DeepSeek-V3 (d 64, theta 1e4, L0 4096) is bands 10..23 (floor 10.47, ceil 22.51).");
static_assert(yarn_reference_range(llama2_yarn_untruncated()).low > 20.94L && yarn_reference_range(llama2_yarn_untruncated()).low < 20.95L &&
                  yarn_reference_range(llama2_yarn_untruncated()).high > 45.02L && yarn_reference_range(llama2_yarn_untruncated()).high < 45.03L,
              "Without truncation the correction range of d 128, theta 1e4, L0 4096 is the real interval [20.944, 45.027].");

// Theorem YaRN-1: ramp 0 at and below the low cut-off — those bands are untouched.
static_assert(yarn_keeps_bands_up_to_low_cutoff<double>(qwen25_yarn()), "YaRN leaves bands 0..23 of Qwen2.5 exactly unscaled (double).");
static_assert(yarn_keeps_bands_up_to_low_cutoff<long double>(qwen25_yarn()), "YaRN leaves bands 0..23 of Qwen2.5 exactly unscaled (long double).");
static_assert(yarn_keeps_bands_up_to_low_cutoff<double>(deepseek_v3()), "YaRN leaves bands 0..10 of DeepSeek-V3 exactly unscaled.");
static_assert(yarn_keeps_bands_up_to_low_cutoff<double>(llama2_yarn_untruncated()), "YaRN leaves bands 0..20 exactly unscaled when the cut-off 20.944 is not truncated.");
static_assert(yarn_keeps_bands_up_to_low_cutoff<long double>(llama2_yarn_untruncated()), "YaRN leaves bands 0..20 exactly unscaled, untruncated (long double).");

// Theorem YaRN-2: ramp 1 at and above the high cut-off — those bands are theta_i / s exactly.
static_assert(yarn_interpolates_bands_from_high_cutoff<double>(qwen25_yarn()), "YaRN divides bands 40..63 of Qwen2.5 by s = 4 exactly (double).");
static_assert(yarn_interpolates_bands_from_high_cutoff<long double>(qwen25_yarn()), "YaRN divides bands 40..63 of Qwen2.5 by s = 4 exactly (long double).");
static_assert(yarn_interpolates_bands_from_high_cutoff<double>(deepseek_v3()), "YaRN divides bands 23..31 of DeepSeek-V3 by s = 40 exactly.");
static_assert(yarn_interpolates_bands_from_high_cutoff<double>(llama2_yarn_untruncated()), "YaRN divides bands 46..63 by s exactly when the cut-off 45.027 is not truncated.");
static_assert(yarn_interpolates_bands_from_high_cutoff<long double>(llama2_yarn_untruncated()), "YaRN divides bands 46..63 by s exactly, untruncated (long double).");

// Theorem YaRN-3: between the cut-offs the ratio falls strictly and the ramp is linear.
static_assert(yarn_ramp_is_monotone_and_linear_between_cutoffs<double>(qwen25_yarn()), "YaRN's ratio theta'/theta falls strictly and linearly in the band between 23 and 40 (Qwen2.5).");
static_assert(yarn_ramp_is_monotone_and_linear_between_cutoffs<long double>(qwen25_yarn()), "YaRN's ratio falls strictly and linearly between the cut-offs (Qwen2.5, long double).");
static_assert(yarn_ramp_is_monotone_and_linear_between_cutoffs<double>(deepseek_v3()), "YaRN's ratio falls strictly and linearly between 10 and 23 (DeepSeek-V3).");
static_assert(yarn_ramp_is_monotone_and_linear_between_cutoffs<double>(llama2_yarn_untruncated()), "YaRN's ratio falls strictly and linearly between real cut-offs 20.944 and 45.027.");

// Theorem YaRN-4: the attention factor.
static_assert(yarn_attention_factor_is_tenth_ln_s_plus_1<double>(qwen25_yarn()), "YaRN's attention factor is 0.1 ln s + 1 for s = 4 (double).");
static_assert(yarn_attention_factor_is_tenth_ln_s_plus_1<long double>(qwen25_yarn()), "YaRN's attention factor is 0.1 ln s + 1 for s = 4 (long double).");
static_assert(yarn_attention_factor_is_tenth_ln_s_plus_1<double>(llama2_yarn_untruncated()), "YaRN's attention factor is 0.1 ln s + 1 for s = 8.");
static_assert(magnitude(compute_frequencies<double>(qwen25_yarn()).attention_factor - 1.1386294361) < 1e-10,
              "YaRN's attention factor for s = 4 is 1 + 0.2 ln 2 = 1.1386294361.");
static_assert(identical(compute_frequencies<double>(deepseek_v3()).attention_factor, 1.0),
              "With mscale = mscale_all_dim the YaRN attention factor is exactly 1 (DeepSeek-V3 folds it into the softmax scale).");
static_assert([] {
  rope_config c = deepseek_v3();
  c.mscale.reset();
  c.mscale_all_dim.reset();
  return yarn_attention_factor_is_tenth_ln_s_plus_1<double>(c) &&
         magnitude(compute_frequencies<double>(c).attention_factor - 1.3688879454) < 1e-10;
}(), "Without mscales the YaRN attention factor for s = 40 is 0.1 ln 40 + 1 = 1.3688879454.");
static_assert([] {
  rope_config c = qwen25_yarn();
  c.factor = 0.5;
  return identical(compute_frequencies<double>(c).attention_factor, 1.0);
}(), "YaRN's attention factor is exactly 1 when s <= 1.");

// ---- Llama-3 ------------------------------------------------------------------------------------
namespace {

enum class llama3_regime { unchanged, smoothed, divided };

// The regime of band i by its wavelength 2 pi / theta_i, the comparison the schedule makes.
template <class T>
constexpr llama3_regime regime_of(const rope_config& c, T theta) {
  const T L0 = static_cast<T>(c.original_max_position_embeddings);
  const T wavelength = (T(2) * std::numbers::pi_v<T>) / theta;
  if (wavelength < L0 / static_cast<T>(c.high_freq_factor)) return llama3_regime::unchanged;
  if (wavelength > L0 / static_cast<T>(c.low_freq_factor)) return llama3_regime::divided;
  return llama3_regime::smoothed;
}

// Unchanged (bit for bit) where wavelength < L0/high_freq_factor, theta_i / s (bit for bit) where
// wavelength > L0/low_freq_factor, and between theta_i / s and theta_i in the smoothed middle.
template <class T>
constexpr bool llama3_bands_follow_their_wavelength(const rope_config& c) {
  const auto f = compute_frequencies<T>(c).inv_freq;
  const auto x = compute_frequencies<T>(unscaled(c)).inv_freq;
  const T s = static_cast<T>(c.factor);
  for (std::size_t i = 0; i < f.size(); ++i) {
    switch (regime_of(c, x[i])) {
      case llama3_regime::unchanged:
        if (!identical(f[i], x[i])) return false;
        break;
      case llama3_regime::divided:
        if (!identical(f[i], x[i] / s)) return false;
        break;
      case llama3_regime::smoothed:
        if (!(f[i] >= x[i] / s * (T(1) - T(4) * std::numeric_limits<T>::epsilon()) &&
              f[i] <= x[i] * (T(1) + T(4) * std::numeric_limits<T>::epsilon())))
          return false;
        break;
    }
  }
  return true;
}

template <class T>
constexpr int llama3_bands_in(const rope_config& c, llama3_regime want) {
  int count = 0;
  for (T theta : compute_frequencies<T>(unscaled(c)).inv_freq) count += regime_of(c, theta) == want ? 1 : 0;
  return count;
}

// v = odd * 2^exponent for a finite v > 0, by exact scalings by 2.
struct dyadic {
  unsigned long long odd;
  int exponent;
};

template <class T>
constexpr dyadic dyadic_of(T v) {
  int exponent = 0;
  while (v != std::floor(v)) {
    v *= T(2);
    --exponent;
  }
  while (v >= T(2) && std::floor(v / T(2)) == v / T(2)) {
    v /= T(2);
    ++exponent;
  }
  return {static_cast<unsigned long long>(v), exponent};
}

// A Llama-3 config whose low (or high) boundary wavelength is EXACTLY the wavelength of band i:
// wavelength_i = M 2^E (M odd), L0 = M, and the boundary factor 2^-E, so that L0 / factor = M 2^E
// is exact and the code's comparison finds band i on the boundary, not beside it; the other
// factor is 4x away (as Llama-3.1's 1 and 4). Powers of two keep every step exact: at the low
// boundary L0 / wavelength = lo exactly, smooth = 0, so theta' = (1 - 0) theta / s + 0 theta;
// at the high boundary L0 / wavelength = hi, smooth = (hi - lo)/(hi - lo) = 1, theta' = 0 + theta.
// No real config lands exactly on a boundary; the formula is scale-free in (L0, lo, hi), so these
// factors test the smoothing formula itself where it meets the two outer regimes.
// Returns band -1 if no band's odd significand fits L0's int64 (long double has 64-bit significands).
struct boundary_case {
  rope_config cfg;
  int band;
};

template <class T>
constexpr boundary_case llama3_boundary_at_band(int d, double base, double s, bool at_low_boundary) {
  const auto x = compute_frequencies<T>(plain(d, base)).inv_freq;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    const T wavelength = (T(2) * std::numbers::pi_v<T>) / x[static_cast<std::size_t>(i)];
    const dyadic w = dyadic_of(wavelength);
    if (w.odd > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) continue;
    rope_config c = plain(d, base);
    c.scaling = scaling_kind::llama3;
    c.factor = s;
    c.original_max_position_embeddings = static_cast<std::int64_t>(w.odd);
    const double boundary_factor = std::ldexp(1.0, -w.exponent);
    c.low_freq_factor = at_low_boundary ? boundary_factor : boundary_factor / 4;
    c.high_freq_factor = at_low_boundary ? boundary_factor * 4 : boundary_factor;
    // the boundary wavelength the schedule computes is band i's own, exactly
    const T L0 = static_cast<T>(c.original_max_position_embeddings);
    const T edge = L0 / static_cast<T>(at_low_boundary ? c.low_freq_factor : c.high_freq_factor);
    if (!identical(edge, wavelength)) return {c, -2};
    return {c, i};
  }
  return {plain(d, base), -1};
}

// Continuity: on the boundary itself the smoothing formula gives the outer regime's value.
template <class T>
constexpr bool llama3_smoothing_meets_divided_band_at_low_boundary(int d, double base, double s) {
  const boundary_case k = llama3_boundary_at_band<T>(d, base, s, true);
  if (k.band < 0) return false;
  const T x = band<T>(unscaled(k.cfg), k.band);
  return regime_of(k.cfg, x) == llama3_regime::smoothed && identical(band<T>(k.cfg, k.band), x / static_cast<T>(s));
}

template <class T>
constexpr bool llama3_smoothing_meets_unchanged_band_at_high_boundary(int d, double base, double s) {
  const boundary_case k = llama3_boundary_at_band<T>(d, base, s, false);
  if (k.band < 0) return false;
  const T x = band<T>(unscaled(k.cfg), k.band);
  return regime_of(k.cfg, x) == llama3_regime::smoothed && identical(band<T>(k.cfg, k.band), x);
}

}  // namespace

// Theorem Llama3-1: the three regimes, band by band, for Llama-3.1-8B.
static_assert(llama3_bands_in<double>(llama31_8b(), llama3_regime::unchanged) == 29 &&
                  llama3_bands_in<double>(llama31_8b(), llama3_regime::smoothed) == 6 &&
                  llama3_bands_in<double>(llama31_8b(), llama3_regime::divided) == 29,
              "Llama-3.1-8B's bands split 29 unchanged (wavelength < 2048), 6 smoothed, 29 divided (wavelength > 8192).");
static_assert(llama3_bands_follow_their_wavelength<double>(llama31_8b()),
              "Llama-3 leaves bands with wavelength < L0/high_freq_factor unchanged, divides those > L0/low_freq_factor by s, and keeps the rest between (double).");
static_assert(llama3_bands_follow_their_wavelength<long double>(llama31_8b()),
              "Llama-3 leaves short wavelengths unchanged, divides long ones by s, keeps the rest between (long double).");
static_assert([] {
  rope_config c = llama31_8b();
  c.base = 10000.0;
  c.factor = 4.0;
  c.low_freq_factor = 2.0;
  c.high_freq_factor = 8.0;
  c.original_max_position_embeddings = 4096;
  return llama3_bands_follow_their_wavelength<double>(c) && llama3_bands_in<double>(c, llama3_regime::smoothed) > 0;
}(), "Llama-3's three regimes hold for other factors too (theta 1e4, s 4, low 2, high 8, L0 4096).");

// Theorem Llama3-2: the smoothing formula is continuous at both boundaries.
static_assert(llama3_smoothing_meets_divided_band_at_low_boundary<double>(128, 500000.0, 8.0),
              "At wavelength exactly L0/low_freq_factor, Llama-3's smoothing gives exactly theta/s, the divided regime's value (double).");
static_assert(llama3_smoothing_meets_divided_band_at_low_boundary<long double>(128, 500000.0, 8.0),
              "At wavelength exactly L0/low_freq_factor, Llama-3's smoothing gives exactly theta/s (long double).");
static_assert(llama3_smoothing_meets_unchanged_band_at_high_boundary<double>(128, 500000.0, 8.0),
              "At wavelength exactly L0/high_freq_factor, Llama-3's smoothing gives exactly theta, the unchanged regime's value (double).");
static_assert(llama3_smoothing_meets_unchanged_band_at_high_boundary<long double>(128, 500000.0, 8.0),
              "At wavelength exactly L0/high_freq_factor, Llama-3's smoothing gives exactly theta (long double).");
static_assert(llama3_smoothing_meets_divided_band_at_low_boundary<double>(64, 10000.0, 3.0) &&
                  llama3_smoothing_meets_unchanged_band_at_high_boundary<double>(64, 10000.0, 3.0),
              "Llama-3's smoothing is continuous at both boundaries for d 64, theta 1e4, s 3 as well.");

// ---- dynamic NTK --------------------------------------------------------------------------------
namespace {

template <class T>
constexpr bool dynamic_ntk_is_unscaled_at(const rope_config& c, std::int64_t seq_len) {
  const frequency_schedule<T> dyn = compute_frequencies<T>(c, seq_len);
  const frequency_schedule<T> plain_ = compute_frequencies<T>(unscaled(c));
  if (dyn.inv_freq.size() != plain_.inv_freq.size() || !identical(dyn.attention_factor, T(1))) return false;
  for (std::size_t i = 0; i < dyn.inv_freq.size(); ++i)
    if (!identical(dyn.inv_freq[i], plain_.inv_freq[i])) return false;
  return identical(ntk_scaled_base<T>(c, seq_len), static_cast<T>(c.base));
}

template <class T>
constexpr bool dynamic_ntk_is_unscaled_up_to_max_positions(const rope_config& c) {
  const std::int64_t L = c.max_position_embeddings;
  for (std::int64_t seq : {std::int64_t{0}, std::int64_t{1}, L / 2, L - 1, L})
    if (!dynamic_ntk_is_unscaled_at<T>(c, seq)) return false;
  return true;
}

// One token past max_position_embeddings the base grows: theta_0 stays 1, the slowest band slows.
template <class T>
constexpr bool dynamic_ntk_scales_past_max_positions(const rope_config& c) {
  const std::int64_t past = c.max_position_embeddings + 1;
  const int last = c.bands() - 1;
  return identical(band<T>(c, 0, past), T(1)) && band<T>(c, last, past) < band<T>(unscaled(c), last) &&
         ntk_scaled_base<T>(c, past) > static_cast<T>(c.base);
}

}  // namespace

// Theorem DynNTK-1: at seq_len <= max_position_embeddings dynamic NTK is the plain schedule, bit for bit.
static_assert(dynamic_ntk_is_unscaled_up_to_max_positions<double>(dynamic_ntk(128, 2.0, 1e4, 4096)),
              "Dynamic NTK (s 2, L 4096) equals the unscaled schedule bit for bit at seq_len 0, 1, 2048, 4095, 4096.");
static_assert(dynamic_ntk_is_unscaled_up_to_max_positions<long double>(dynamic_ntk(128, 8.0, 1e4, 4096)),
              "Dynamic NTK (s 8, L 4096) equals the unscaled schedule bit for bit up to max_position_embeddings (long double).");
static_assert(dynamic_ntk_is_unscaled_up_to_max_positions<double>(dynamic_ntk(96, 3.0, 5e5, 8192)),
              "Dynamic NTK (d 96, s 3, theta 5e5, L 8192) equals the unscaled schedule up to max_position_embeddings.");
// ... and it does scale once the sequence is longer (so the theorem above is not vacuous).
static_assert(dynamic_ntk_scales_past_max_positions<double>(dynamic_ntk(128, 2.0, 1e4, 4096)),
              "Dynamic NTK at seq_len 4097 keeps theta_0 = 1, slows the last band and raises the base.");
static_assert(dynamic_ntk_scales_past_max_positions<long double>(dynamic_ntk(128, 8.0, 1e4, 4096)),
              "Dynamic NTK at seq_len 4097 raises the base (long double).");

// ---- ALiBi --------------------------------------------------------------------------------------
namespace {

template <class T>
constexpr T power_of_half(int k) {
  T v = T(1);
  for (int j = 0; j < k; ++j) v /= T(2);  // exact
  return v;
}

template <class T>
constexpr bool alibi_slopes_are_powers_of_half(int heads, std::initializer_list<int> exponents) {
  const std::vector<T> m = alibi_slopes<T>(heads);
  if (m.size() != exponents.size()) return false;
  std::size_t h = 0;
  for (int k : exponents)
    if (!identical(m[h++], power_of_half<T>(k))) return false;
  return true;
}

// The published rule in closed form, written independently of alibi_slopes' loop: n = bit_floor(H),
// slope h (1-based) = 2^(-8h/n) for h <= n, then 2^(-8(2k-1)/(2n)) for k = 1..H-n; the power is
// the correctly rounded pow(2, q) in T. Equal bit for bit to alibi_slopes<T>, which takes ldexp
// for integer exponents and exp2l rounded to T otherwise.
template <class T>
constexpr bool alibi_slopes_follow_published_rule(int heads) {
  const std::vector<T> m = alibi_slopes<T>(heads);
  const int n = static_cast<int>(std::bit_floor(static_cast<unsigned>(heads)));
  if (static_cast<int>(m.size()) != heads) return false;
  for (int h = 1; h <= heads; ++h) {
    const T q = h <= n ? T(-8 * h) / T(n) : T(-8 * (2 * (h - n) - 1)) / T(2 * n);  // exact: n a power of two
    if (!identical(m[static_cast<std::size_t>(h - 1)], T(std::pow(T(2), q)))) return false;
  }
  return true;
}

}  // namespace

// Theorem ALiBi-1: 8 heads are 1/2, 1/4, ..., 1/256 exactly.
static_assert(alibi_slopes_are_powers_of_half<double>(8, {1, 2, 3, 4, 5, 6, 7, 8}), "ALiBi's slopes for 8 heads are exactly 2^-1 ... 2^-8 (double).");
static_assert(alibi_slopes_are_powers_of_half<float>(8, {1, 2, 3, 4, 5, 6, 7, 8}), "ALiBi's slopes for 8 heads are exactly 2^-1 ... 2^-8 (float).");
static_assert(alibi_slopes_are_powers_of_half<long double>(8, {1, 2, 3, 4, 5, 6, 7, 8}), "ALiBi's slopes for 8 heads are exactly 2^-1 ... 2^-8 (long double).");

// Theorem ALiBi-2: head counts that are not powers of two, against the paper's closed form.
static_assert(alibi_slopes_are_powers_of_half<double>(6, {2, 4, 6, 8, 1, 3}), "ALiBi's 6 heads are 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3.");
static_assert(alibi_slopes_are_powers_of_half<double>(3, {4, 8, 2}), "ALiBi's 3 heads are 2^-4, 2^-8, then 2^-2.");
static_assert([] {
  const std::vector<double> m = alibi_slopes<double>(12);
  for (int h = 1; h <= 8; ++h)
    if (!identical(m[static_cast<std::size_t>(h - 1)], power_of_half<double>(h))) return false;
  for (int k = 0; k < 4; ++k)  // 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    if (!identical(m[static_cast<std::size_t>(8 + k)], std::sqrt(0.5) / double(1 << k))) return false;
  return m.size() == 12;
}(), "ALiBi's 12 heads are 2^-1 ... 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 correctly rounded.");
static_assert([] {
  const std::vector<float> m = alibi_slopes<float>(16);
  for (int h = 1; h <= 16; ++h) {
    const float want = h % 2 == 0 ? power_of_half<float>(h / 2) : std::sqrt(0.5f) / float(1 << (h / 2));
    if (!identical(m[static_cast<std::size_t>(h - 1)], want)) return false;
  }
  return true;
}(), "ALiBi's 16 heads are 2^(-h/2), correctly rounded to float.");
static_assert([] {
  for (int heads = 1; heads <= 64; ++heads)
    if (!alibi_slopes_follow_published_rule<double>(heads) || !alibi_slopes_follow_published_rule<float>(heads) ||
        !alibi_slopes_follow_published_rule<long double>(heads))
      return false;
  return true;
}(), "ALiBi's slopes follow the published rule, correctly rounded, for every head count from 1 to 64 in float, double and long double.");

// ---- T5 -----------------------------------------------------------------------------------------
namespace {

// Over every relative position r in [-range, range] and a few far ones:
//   bucket in [0, num_buckets); keys after the query in [B/2, B) (bidirectional) or bucket 0
//   (causal); within a direction nondecreasing in the distance |r|; exact (bucket = |r|) below
//   max_exact; constant from max_distance on; every bucket used, except B/2 when bidirectional
//   (it would hold a later key at distance 0, and r = 0 counts as the query's own side).
constexpr bool t5_buckets_are_monotone_and_saturate(bool bidirectional, int num_buckets, int max_distance, std::int64_t range) {
  const int per_direction = bidirectional ? num_buckets / 2 : num_buckets;
  const int max_exact = per_direction / 2;
  std::vector<bool> used(static_cast<std::size_t>(num_buckets), false);
  for (int sign : {-1, +1}) {
    const int offset = bidirectional && sign > 0 ? per_direction : 0;
    int previous = -1;
    for (std::int64_t n = sign > 0 ? 1 : 0; n <= range; ++n) {  // r = 0 counts as the query's side
      const int b = t5_relative_position_bucket(sign * n, bidirectional, num_buckets, max_distance);
      if (b < 0 || b >= num_buckets) return false;
      used[static_cast<std::size_t>(b)] = true;
      if (!bidirectional && sign > 0) {  // causal: a key after the query carries no distance
        if (b != 0) return false;
        continue;
      }
      if (b < offset || b >= offset + per_direction) return false;            // its direction's half
      if (b < previous) return false;                                         // monotone in distance
      if (n < max_exact && b != offset + n) return false;                     // exact buckets
      if (n >= max_distance && b != offset + per_direction - 1) return false; // saturated
      previous = b;
    }
    for (std::int64_t far : {std::int64_t{1} << 20, std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max()}) {
      const int b = t5_relative_position_bucket(sign * far, bidirectional, num_buckets, max_distance);
      if (b != (!bidirectional && sign > 0 ? 0 : offset + per_direction - 1)) return false;
    }
  }
  if (t5_relative_position_bucket(std::numeric_limits<std::int64_t>::min(), bidirectional, num_buckets, max_distance) !=
      per_direction - 1)
    return false;
  for (std::size_t b = 0; b < used.size(); ++b)
    if (used[b] != !(bidirectional && b == static_cast<std::size_t>(per_direction))) return false;
  return true;
}

// The log region: bucket max_exact + j begins at the first distance >= max_exact * (max_distance /
// max_exact)^(j / (B - max_exact)) (float32 arithmetic may move a boundary by one token; it does not
// for these defaults).
constexpr bool t5_log_buckets_start_where_the_formula_says(bool bidirectional) {
  const int per_direction = bidirectional ? 16 : 32;
  const int max_exact = per_direction / 2;
  for (int j = 1; j < per_direction - max_exact; ++j) {
    const long double start = max_exact * std::pow(128.0L / max_exact, static_cast<long double>(j) / (per_direction - max_exact));
    const auto first = static_cast<std::int64_t>(std::ceil(start));
    if (t5_relative_position_bucket(-first, bidirectional) != max_exact + j) return false;
    if (t5_relative_position_bucket(-(first - 1), bidirectional) != max_exact + j - 1) return false;
  }
  return true;
}

}  // namespace

// Theorem T5-1: monotone and saturating, both variants, every |r| <= 5000.
static_assert(t5_buckets_are_monotone_and_saturate(true, 32, 128, 5000),
              "T5's bidirectional buckets (32, 128) are monotone in distance, exact below 8, saturate from 128, and use every bucket but 16.");
static_assert(t5_buckets_are_monotone_and_saturate(false, 32, 128, 5000),
              "T5's causal buckets (32, 128) are 0 for later keys, monotone in distance, exact below 16, saturate from 128, and use all 32.");
static_assert(t5_buckets_are_monotone_and_saturate(true, 64, 256, 2000) && t5_buckets_are_monotone_and_saturate(false, 16, 64, 2000),
              "T5's buckets are monotone and saturate for other sizes too (64 over 256, 16 over 64).");
// Theorem T5-2: log-spaced between max_exact and max_distance, with the exact boundaries 16, 32, 64.
static_assert(t5_relative_position_bucket(16, true) == 26 && t5_relative_position_bucket(32, true) == 28 &&
                  t5_relative_position_bucket(64, true) == 30 && t5_relative_position_bucket(-16, true) == 10 &&
                  t5_relative_position_bucket(15, true) == 25,
              "T5's bidirectional buckets step at exactly 16, 32, 64 tokens (8 + 2 log2(r/8)), offset by 16 for later keys.");
static_assert(t5_log_buckets_start_where_the_formula_says(true) && t5_log_buckets_start_where_the_formula_says(false),
              "T5's log buckets begin at the distances max_exact (max_distance/max_exact)^(j/(B - max_exact)), rounded up.");

// ---- the seeds' figures (DESIGN.md, "Reference numbers from the seeds") --------------------------
namespace {
constexpr double llama_theta(int i) { return band<double>(plain(128, 10000.0), i); }
constexpr double two_pi = 2.0 * std::numbers::pi;
}  // namespace

// "NTK-aware: d=128, s=8 gives ~82,700": exactly 1e4 * 8^(64/63) = 82684.62..., which "about
// 82,700" states to three significant figures (|x - 82,700| <= 50).
static_assert(magnitude(ntk_scaled_base<double>(ntk(128, 8.0, 1e4)) - 82700.0) <= 50.0,
              "NTK's base' for d 128, s 8 is 82,700 to three significant figures.");
static_assert(magnitude(ntk_scaled_base<double>(ntk(128, 8.0, 1e4)) - 82684.6) <= 0.05,
              "NTK's base' for d 128, s 8 is 82684.6 to one decimal.");
// "theta_0 = 1 (wavelength 6.3 tokens)".
static_assert(identical(llama_theta(0), 1.0) && magnitude(two_pi / llama_theta(0) - 6.3) <= 0.05,
              "Band 0 of d 128, base 1e4 has theta_0 = 1 exactly and wavelength 6.3 tokens.");
// "theta_63 = 1.155e-4" to four significant figures (exactly 1.15478e-4).
static_assert(magnitude(llama_theta(63) - 1.155e-4) <= 0.0005e-4, "theta_63 of d 128, base 1e4 is 1.155e-4 to four significant figures.");
// "wavelength ~54,400": exactly 54410.14, three significant figures means |x - 54,400| <= 50.
static_assert(magnitude(two_pi / llama_theta(63) - 54400.0) <= 50.0, "Band 63's wavelength is 54,400 tokens to three significant figures.");
static_assert(magnitude(two_pi / llama_theta(63) - 54410.1) <= 0.05, "Band 63's wavelength is 54410.1 tokens to one decimal.");
// "Trained at 4096, band 0 turns ~650 times": 4096 / (2 pi) = 651.90 turns, 650 to the nearest ten.
static_assert(magnitude(4096.0 * llama_theta(0) / two_pi - 650.0) <= 5.0 && magnitude(4096.0 * llama_theta(0) / two_pi - 651.9) <= 0.05,
              "Band 0 turns 651.9 times in 4096 tokens, about 650.");
// "band 63 sweeps 0.47 rad": 4096 theta_63 = 0.47300.
static_assert(magnitude(4096.0 * llama_theta(63) - 0.47) <= 0.005 && magnitude(4096.0 * llama_theta(63) - 0.4730) <= 0.00005,
              "Band 63 sweeps 0.47 rad in 4096 tokens (0.4730).");
// "at 32768 band 63 sweeps 3.79 rad": the exact figure is 3.7840, i.e. 3.78 to two decimals — the
// DESIGN's 3.79 is off by one in the last digit (asserted, so that the discrepancy stays documented).
static_assert(magnitude(32768.0 * llama_theta(63) - 3.784) <= 0.0005, "Band 63 sweeps 3.784 rad in 32768 tokens.");
static_assert(magnitude(32768.0 * llama_theta(63) - 3.79) > 0.005, "3.79 rad is not the two-decimal rounding of band 63's sweep at 32768 (3.78 is).");
// "88% of it never seen": 1 - 4096/32768 = 7/8 = 87.5% exactly (scaling by 8 is exact in double).
static_assert(1.0 - (4096.0 * llama_theta(63)) / (32768.0 * llama_theta(63)) == 0.875,
              "Seven eighths (87.5%, rounded 88%) of band 63's sweep at 32768 is never seen in training at 4096.");

#else
// Clang (and any compiler that does not evaluate libm calls in constant expressions): only the
// exact parts, which never reach pow/log/exp2, are proved here. The full theorem list above is the
// g++ build's; the run-time suites (tests/core/schedule_test.cpp, tests/core/positional_test.cpp) cover the rest.

// Dynamic NTK at seq_len <= max_position_embeddings returns the base unchanged before any pow.
static_assert(ntk_scaled_base<double>(dynamic_ntk(128, 8.0, 1e4, 4096), 4096) == 1e4,
              "Dynamic NTK's base is exactly the configured base at seq_len = max_position_embeddings.");
static_assert(ntk_scaled_base<double>(dynamic_ntk(128, 8.0, 1e4, 4096), 1) == 1e4,
              "Dynamic NTK's base is exactly the configured base below max_position_embeddings.");
// YaRN's factor falls back to max/original when no factor is given; the attention factor of s <= 1 is 1.
static_assert(detail::effective_factor_in<double>([] {
                rope_config c = qwen25_yarn();
                c.factor = 1.0;
                return c;
              }()) == 4.0,
              "YaRN without a factor uses max_position_embeddings / original_max_position_embeddings (131072 / 32768 = 4).");
static_assert(detail::effective_factor_in<double>(llama2_yarn_untruncated()) == 8.0, "An explicit YaRN factor is used as given.");
static_assert(detail::attention_factor_in<double>(llama31_8b()) == 1.0, "Llama-3 has no attention factor (exactly 1).");
static_assert(detail::attention_factor_in<double>(ntk(128, 8.0, 1e4)) == 1.0, "NTK has no attention factor (exactly 1).");
static_assert(detail::attention_factor_in<double>(unscaled(deepseek_v3())) == 1.0, "The unscaled schedule has no attention factor (exactly 1).");
// T5's exact region (|r| < max_exact) returns before the logarithm.
static_assert([] {
  for (int n = 0; n < 8; ++n)
    if (t5_relative_position_bucket(-n, true) != n || t5_relative_position_bucket(n, true) != (n == 0 ? 0 : 16 + n)) return false;
  for (int n = 0; n < 16; ++n)
    if (t5_relative_position_bucket(-n, false) != n) return false;
  return true;
}(), "T5's buckets below max_exact are the distance itself, offset by 16 for later keys when bidirectional.");
#endif

}  // namespace ropecheck::proofs::schedules
