// ropecheck/conformance/kernel.hpp — a user's RoPE kernel as the conformance suite sees it.
//
// The adapter a kernel author writes (a struct, often a template over the element type):
//
//   template <class T>
//   struct my_rope {
//     using storage = T;                 // element type of x and y (required)
//     using compute = float;             // type it computes in (optional; default: storage)
//     static ropecheck::rope_config convention() {            // what it claims (required)
//       return ropecheck::conformance::hf_config("config.json");  // or preset("llama3-8b"), or fields
//     }
//     static void apply(std::span<const T> x, std::span<T> y, const ropecheck::conformance::call& c) {
//       my::rope<T>(x.data(), y.data(), c.positions.data(), c.tokens, c.heads);   // (required)
//     }
//     static void apply_k(std::span<const T> x, std::span<T> y,                 // (optional) the keys'
//                         const ropecheck::conformance::call& c) { ... }        // rotation, when not apply
//     static ropecheck::conformance::options options() { return {}; }  // (optional)
//     static constexpr const char* name = "bf16_fused";                 // (optional) test-name suffix
//   };
//
// apply() is given `c.tokens` tokens of `c.heads` heads of `c.head_dim` coordinates, token-major
// (token t, head h, coordinate j at (t * heads + h) * head_dim + j), and must write R(p_t) x_t to y
// (y never aliases x). Within one call the positions are consecutive (positions[t] = start() + t), so
// a kernel taking a start offset (n_past) adapts as well as one taking a position per token. A call
// with one token is a decode step; the suite makes both kinds of call.
//
// apply_k(), when given, rotates keys (c.heads = options().kv_heads key heads, same layout and contract
// as apply); without it keys are rotated by apply(). The suite's check query_key_scores_match_reference
// reads queries (apply, options().probe_heads heads) against keys at the score: query head h reads key
// head h / (probe_heads / kv_heads), and <R(m) q, R(n) k> must be the reference's for every (m, n).
//
// Element types: float, double, long double, ropecheck::bfloat16 / ropecheck::float16 (Eigen's, from
// ropecheck/scalar.hpp), the MPFR type of ropecheck/scalar_mpfr.hpp, _Float16; any other type by
// specialising storage_traits below.
//
// Light header: std types and ropecheck/config.hpp (no Eigen unless the element type needs it, no
// RapidCheck, MPFR, json or GoogleTest).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck {
template <class T>
struct scalar_traits;  // ropecheck/scalar.hpp (bfloat16, float16), ropecheck/scalar_mpfr.hpp (MPFR)
}

namespace ropecheck::conformance {

// One call of the kernel.
struct call {
  std::span<const std::int64_t> positions;  // one per token, consecutive
  int tokens = 0, heads = 0, head_dim = 0;
  // R(-p) x (the transpose) instead of R(p) x; only asked of an adapter whose options say inverse.
  bool inverse = false;
  [[nodiscard]] std::int64_t start() const { return positions.empty() ? 0 : positions.front(); }
};

// Which mathematics the probe set is judged against (as `ropecheck audit --reference`):
//   exact  the schedule computed exactly (default): what the model means; fp32 angle drift at large
//          positions is a warning, a failure under strict
//   hf     Hugging Face's fp32 angles (inv_freq and p * inv_freq rounded to fp32) computed exactly
//   ggml   llama.cpp's fp32 chain of products computed exactly
enum class reference { exact, hf, ggml };

struct options {
  conformance::reference reference = conformance::reference::exact;
  bool strict = false;  // angles must be exact too: fp32 angle drift fails (and is named)
  // The kernel's own last position (e.g. a cos/sin cache of max_position + 1 rows); 0: no limit
  // beyond the element type's. The probe set and the properties stay within it.
  std::int64_t max_position = 0;
  // apply() accepts negative positions (R(-p) = R(p)^T). A kernel indexing a cache by position does
  // not: say false, and the properties rotate by nonnegative offsets only.
  bool negative_positions = true;
  // apply() honours call::inverse. When false the suite obtains R(p)^T as apply at -p (when negative
  // positions are accepted), else it skips the inverse property and says so.
  bool inverse = false;
  int max_success = 0;                 // cases per property; 0: RC_PARAMS' max_success (100)
  std::optional<std::uint64_t> seed;   // unset: RC_PARAMS="seed=N", ROPECHECK_SEED, the suite's default
  int probe_heads = 4;                 // heads per token of the probe set (the query heads)
  // Key heads of the score check (query_key_scores_match_reference), dividing probe_heads; 0: half the
  // query heads when that divides them (grouped-query attention, two query heads a key head), else as many.
  int kv_heads = 0;
};

// The element type's exact widening to long double (every supported type but MPFR widens exactly;
// MPFR rounds to 64 bits, far below any allowance), rounding from long double, and the judge's dtype.
template <class S, class = void>
struct storage_traits {
  static_assert(sizeof(S) == 0,
                "ropecheck::conformance::storage_traits<S> is not defined for this element type: include "
                "ropecheck/scalar.hpp for ropecheck::bfloat16/float16, ropecheck/scalar_mpfr.hpp for MPFR, or "
                "specialise storage_traits<S> with dtype (\"float32\", \"float64\", \"bfloat16\", \"float16\"), "
                "widen(S) -> long double and narrow(long double) -> S");
};

namespace detail {
template <class S>
struct ieee_storage {
  static long double widen(S v) { return static_cast<long double>(v); }
  static S narrow(long double v) { return static_cast<S>(v); }
};
}  // namespace detail

template <>
struct storage_traits<float> : detail::ieee_storage<float> {
  static constexpr std::string_view dtype = "float32";
};
template <>
struct storage_traits<double> : detail::ieee_storage<double> {
  static constexpr std::string_view dtype = "float64";
};
// Judged as float64, the finest dtype the judge has: a long double kernel is allowed what a careful
// double one is.
template <>
struct storage_traits<long double> : detail::ieee_storage<long double> {
  static constexpr std::string_view dtype = "float64";
};
#ifdef __FLT16_MANT_DIG__
template <>
struct storage_traits<_Float16> : detail::ieee_storage<_Float16> {  // long double -> _Float16 rounds once
  static constexpr std::string_view dtype = "float16";
};
#endif

// ropecheck's own scalars (and any type with a ropecheck::scalar_traits specialisation): the dtype
// from its significand bits, 53 or more judged as float64.
template <class S>
struct storage_traits<S, std::void_t<decltype(scalar_traits<S>::digits)>> {
  static constexpr int digits = scalar_traits<S>::digits;
  static_assert(digits == 8 || digits == 11 || digits == 24 || digits >= 53,
                "ropecheck::conformance: no judge dtype for this scalar's significand width");
  static constexpr std::string_view dtype = digits == 8    ? "bfloat16"
                                            : digits == 11 ? "float16"
                                            : digits == 24 ? "float32"
                                                           : "float64";
  static long double widen(const S& v) { return scalar_traits<S>::widen(v); }
  static S narrow(long double v) { return scalar_traits<S>::narrow(v); }
};

// Significand bits of a compute type (positions are drawn to 2^31 for 53 or more, else to 2^24).
template <class C>
constexpr int compute_digits() {
  if constexpr (std::is_floating_point_v<C>) return std::numeric_limits<C>::digits;
  else return scalar_traits<C>::digits;
}

// A kernel with its element type erased: what the compiled suite (ropecheck::conformance) runs.
struct kernel {
  std::string name;          // the adapter's name, or its dtype (+ "_<compute>_compute")
  std::string dtype;         // the judge's: "float32", "float64", "bfloat16", "float16"
  int compute_digits = 24;   // significand bits of the compute type
  std::function<rope_config()> convention;
  conformance::options opts;
  // apply() on widened values: x rounded to the element type (exact for the probe's and the
  // properties' inputs), the kernel called, y widened.
  std::function<void(std::span<const long double> x, std::span<long double> y, const call& c)> apply;
  std::function<long double(long double)> round;  // a value rounded to the element type (widened)
  // The keys' apply (the adapter's apply_k); empty: keys are rotated by apply.
  std::function<void(std::span<const long double> x, std::span<long double> y, const call& c)> apply_k;
};

template <class A>
concept kernel_adapter = requires(std::span<const typename A::storage> x, std::span<typename A::storage> y,
                                  const call& c) {
  { A::convention() } -> std::convertible_to<rope_config>;
  A::apply(x, y, c);
};

// The adapter's name: A::name when given, else its dtype, with the compute type when it differs
// ("bfloat16_float32_compute").
template <class A>
std::string adapter_name() {
  if constexpr (requires { std::string_view(A::name); }) {
    return std::string(std::string_view(A::name));
  } else {
    using S = typename A::storage;
    std::string n(storage_traits<S>::dtype);
    if constexpr (requires { typename A::compute; }) {
      if constexpr (!std::is_same_v<typename A::compute, S>) {
        constexpr int d = compute_digits<typename A::compute>();
        n += d == 8 ? "_bfloat16" : d == 11 ? "_float16" : d == 24 ? "_float32" : d == 53 ? "_float64" : "_wide";
        n += "_compute";
      }
    }
    if constexpr (std::is_same_v<S, long double>) n.replace(0, 7, "long_double");  // "float64..." -> "long_double..."
    return n;
  }
}

template <class A>
kernel bind() {
  static_assert(requires { typename A::storage; },
                "a conformance adapter needs `using storage = <element type of x and y>;`");
  static_assert(kernel_adapter<A>,
                "a conformance adapter needs `static ropecheck::rope_config convention()` and "
                "`static void apply(std::span<const storage> x, std::span<storage> y, const "
                "ropecheck::conformance::call& c)`");
  using S = typename A::storage;
  using traits = storage_traits<S>;
  kernel k;
  k.name = adapter_name<A>();
  k.dtype = std::string(traits::dtype);
  if constexpr (requires { typename A::compute; }) k.compute_digits = compute_digits<typename A::compute>();
  else k.compute_digits = compute_digits<S>();
  k.convention = [] { return rope_config(A::convention()); };
  if constexpr (requires { { A::options() } -> std::convertible_to<options>; }) k.opts = A::options();
  k.apply = [](std::span<const long double> x, std::span<long double> y, const call& c) {
    std::vector<S> xs, ys(y.size());
    xs.reserve(x.size());
    for (const long double v : x) xs.push_back(traits::narrow(v));
    A::apply(std::span<const S>(xs), std::span<S>(ys), c);
    for (std::size_t j = 0; j < y.size(); ++j) y[j] = traits::widen(ys[j]);
  };
  if constexpr (requires(std::span<const S> x, std::span<S> y, const call& c) { A::apply_k(x, y, c); }) {
    k.apply_k = [](std::span<const long double> x, std::span<long double> y, const call& c) {
      std::vector<S> xs, ys(y.size());
      xs.reserve(x.size());
      for (const long double v : x) xs.push_back(traits::narrow(v));
      A::apply_k(std::span<const S>(xs), std::span<S>(ys), c);
      for (std::size_t j = 0; j < y.size(); ++j) y[j] = traits::widen(ys[j]);
    };
  }
  k.round = [](long double v) { return traits::widen(traits::narrow(v)); };
  return k;
}

// Conventions, for convention(): a Hugging Face config.json (every field ropecheck does not
// understand is an error naming it and the file, as `ropecheck report --config`), or a preset
// (`ropecheck report --preset`; the known names are listed in the error). Both throw
// std::invalid_argument, which the suite reports as the failure of every test of that kernel.
[[nodiscard]] rope_config hf_config(const std::string& path);
[[nodiscard]] rope_config preset(std::string_view name);

}  // namespace ropecheck::conformance
