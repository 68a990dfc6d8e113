// tools/certify/bound.cpp — the applied-angle bounds of bound.hpp (derivation in its header comment).
#include "bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <stdexcept>

#include "ropecheck/reference/reference.hpp"
#include "sweep/strategies.hpp"

namespace ropecheck::certify {

namespace {

// A binary floating-point format: significand bits, smallest normal exponent, largest finite value.
struct format {
  int digits = 24;
  int emin = -126;
  double max = std::numeric_limits<float>::max();
};
constexpr format f32{24, -126, 3.4028234663852886e38};
constexpr format f64{53, -1022, std::numeric_limits<double>::max()};
constexpr format bf16{8, -126, 3.3895313892515355e38};
constexpr format f16{11, -14, 65504.0};

[[nodiscard]] double unit(const format& f) { return std::ldexp(1.0, -f.digits); }
// Half the subnormal spacing: the absolute error of a rounding into the subnormal range.
[[nodiscard]] double eta(const format& f) { return std::ldexp(1.0, f.emin - f.digits); }

enum class eval_kind { libm, fast };

[[nodiscard]] constexpr format format_of(sweep::number_format f) {
  switch (f) {
    case sweep::number_format::f16: return f16;
    case sweep::number_format::bf16: return bf16;
    case sweep::number_format::f32: return f32;
    case sweep::number_format::f64: return f64;
  }
  return f32;
}

// How one implementation forms and evaluates its pair: its row of the strategies table
// (sweep::arithmetic) in the formats the bound computes with.
struct arithmetic {
  format position;                 // the dtype the position is held in
  format angle;                    // the dtype the product p theta~ rounds in
  bool ggml_chain = false;         // theta formed by the repeated fp32 products of ggml_angle
  eval_kind eval = eval_kind::libm;
  format libm = f32;               // the dtype cos/sin are evaluated in (glibc, < 1 ulp)
  std::optional<format> rounded;   // the 16-bit types' rounding of cos_of's float result
  format af_product = f32;         // the dtype of the multiply by af
  std::optional<format> cast;      // HF's cast to the model dtype, or the cache
};

// The arithmetic the strategies table gives `name` (nullopt: not an implementation of the table).
[[nodiscard]] std::optional<arithmetic> arithmetic_of(std::string_view name) {
  std::optional<arithmetic> out;
  sweep::for_each_strategy([&]<class Compute, class Storage>(const char* nm, const char*, const char*, bool, auto,
                                                             const sweep::arithmetic& a) {
    if (out || name != nm) return;
    const auto opt = [](const std::optional<sweep::number_format>& f) {
      return f ? std::optional<format>(format_of(*f)) : std::nullopt;
    };
    out = arithmetic{format_of(a.position), format_of(a.angle), a.ggml_chain,
                     a.fast_sincos ? eval_kind::fast : eval_kind::libm, format_of(a.libm), opt(a.rounded),
                     format_of(a.af_product), opt(a.cast)};
  });
  return out;
}

// Rounding steps of ggml_angle after its chain, per scaling rule (angle.hpp's finish_angle).
[[nodiscard]] int ggml_finishing_roundings(scaling_kind k) {
  switch (k) {
    case scaling_kind::linear: return 1;                            // freq_scale * theta
    case scaling_kind::yarn: return 4;                              // freq_scale * theta, the mix's two products and sum
    case scaling_kind::llama3: case scaling_kind::longrope: return 1;  // theta / freq_factor (freq_scale = 1: exact)
    default: return 0;                                              // none, ntk, dynamic: the chain alone
  }
}

// What each strategy's own constants denote (trace(N, b).inv_freq_used) and its attention factor
// (cos_raw at position 0: cos 0 = 1 exactly, times af in the strategy's own type).
struct strategy_constants {
  std::vector<long double> inv_freq_used;
  double attention_factor = 1;
  bool found = false;
};

[[nodiscard]] strategy_constants constants_of(std::string_view name, const rope_config& cfg, std::int64_t seq_len,
                                              std::int64_t n) {
  strategy_constants out;
  sweep::for_each_strategy([&]<class Compute, class Storage>(const char* nm, const char*, const char*, bool, auto make,
                                                             const sweep::arithmetic&) {
    if (out.found || name != nm) return;
    out.found = true;
    const auto s = make(cfg, seq_len);
    for (int b = 0; b < s.bands(); ++b) out.inv_freq_used.push_back(s.template trace<long double>(n, b).inv_freq_used);
    out.attention_factor = static_cast<double>(s.template trace<long double>(0, 0).cos_raw);
  });
  return out;
}

// The relative error bound E of each component after sin/cos and every rounding after them, and the
// absolute errors of roundings into the subnormal range (section S of bound.hpp).
struct component_errors {
  double relative = 0;
  double absolute = 0;
};

[[nodiscard]] component_errors libm_errors(const arithmetic& a, double af) {
  double prod = 1 + 2 * unit(a.libm);  // < 1 ulp <= 2 u relative
  double abs = 0;
  const auto round_into = [&](const format& f) {
    prod *= 1 + unit(f);
    abs += eta(f);
  };
  if (a.rounded) round_into(*a.rounded);
  if (af != 1) round_into(a.af_product);
  if (a.cast) round_into(*a.cast);
  return {prod - 1, abs};
}

// fast_sin / fast_cos (angle.hpp): the turn of the pair they return for formed angles in [0, x],
// x the largest (bound.hpp, fast_sincos). +inf where the reduction no longer lands near [-pi, pi].
[[nodiscard]] double fast_sincos_turn(double x, double af) {
  constexpr double pi = std::numbers::pi;
  constexpr double P = 0.225;  // fast_sin's correction step
  const double inf = std::numeric_limits<double>::infinity();
  const double u = unit(f32);
  const float two_pi_f = 2.0f * std::numbers::pi_v<float>;
  const double two_pi_err = std::fabs(static_cast<double>(two_pi_f) - 2 * pi);
  const double inv_err = std::fabs(static_cast<double>(1.0f / two_pi_f) - 1 / (2 * pi));
  const double half_pi_err = std::fabs(static_cast<double>(std::numbers::pi_v<float> / 2.0f) - pi / 2);
  const double af_rel = af != 1 ? u : 0;
  const auto hu = [](double v) { return half_ulp_below(v, 24, -126); };
  // The reduction of an argument up to v: r = v - fl(fl(2 pi) k), k = nearbyint(fl(v fl(1/2pi))),
  // exact subtraction (Sterbenz). shift: r against v - 2 pi k; excess: how far |r| may pass pi.
  struct reduction { double shift, excess; };
  const auto reduce = [&](double v) {
    const double k = std::floor(v / (2 * pi) + 0.5) + 1;
    const double shift = k * two_pi_err + hu(v + pi);
    const double wrong_k = 2 * pi * (hu(v / (2 * pi) * (1 + 2 * u)) + v * inv_err);
    return reduction{shift, wrong_k + shift};
  };
  const reduction rs = reduce(x);
  const double cos_arg = x + pi / 2 + half_pi_err + hu(x + pi / 2);  // fl(x + fl(pi / 2)) <= this
  const reduction rc = reduce(cos_arg);
  const double shift_cos = half_pi_err + hu(x + pi / 2) + rc.shift;
  // |fast - sin| <= 1.1e-3 on [-pi, pi]; up to 0.1 beyond pi, fast' is in [-1.13, -0.987] and
  // sin' = -cos(eps) in [-1, -0.995], so the error grows by at most 0.15 (|r| - pi). Past that the
  // parabola grows like r^2: no bound (from 2^28 the pair is (0, 0)).
  constexpr double max_excess = 0.1;
  if (rs.excess > max_excess || rc.excess > max_excess) return inf;
  const double es_abs = 1.1e-3 + 0.15 * rs.excess + 12 * u, ec_abs = 1.1e-3 + 0.15 * rc.excess + 12 * u;
  // Argument shifts a (cos), b (sin) turn the unit pair by b cos^2 x + a sin^2 x <= max(|a|, |b|),
  // to first order (+ a^2 + b^2 for the next); the parabola's component errors by asin(|e|).
  const double e = std::hypot(es_abs, ec_abs);
  double turn = std::max(rs.shift, shift_cos) + rs.shift * rs.shift + shift_cos * shift_cos +
                (e < 1 ? std::asin(e) : inf) + std::asin(af_rel);
  if (x <= 0.5) {
    // Small angles (no reduction for sin: k = 0): the parabola's Taylor bounds, relative.
    const double k0 = 1 - (1 - P) * 4 / pi;
    const double q = std::max(P * 16 / (pi * pi), (1 - P) * 4 / (pi * pi));
    const double c2 = std::fabs(0.5 - (1 + P) * 4 / (pi * pi));
    const double c4 = P * 16 / (pi * pi * pi * pi) + 1.0 / 24;
    const double half_pi_shift = half_pi_err + hu(x + pi / 2);
    const double es = (k0 + q * x + x * x / 6) / (1 - x * x / 6) + 12 * u + af_rel;
    const double ec = (c2 * x * x + c4 * x * x * x * x + half_pi_shift * (x + half_pi_shift)) / std::cos(x) + 12 * u + af_rel;
    const double tx = std::tan(x);
    const double up = std::atan((1 + es) / (1 - ec) * tx) - x, down = x - std::atan((1 - es) / (1 + ec) * tx);
    turn = std::min(turn, std::max(up, down));
  }
  return turn;
}

// Significand bits v needs (v > 0 finite): the smallest m with v = integer * 2^k, integer < 2^m.
[[nodiscard]] int significant_bits(long double v) {
  int e = 0;
  long double m = std::frexp(v, &e);  // m in [0.5, 1)
  int bits = 0;
  while (m != 0 && bits < 80) {
    m = m * 2;
    m -= std::floor(m);
    ++bits;
  }
  return bits;
}

// p~ theta~ for integers p~ <= n~ is exact in `digits` bits when their significands fit together.
[[nodiscard]] bool product_is_exact(double n_used, long double theta_used, int digits) {
  if (!(theta_used > 0) || n_used < 1) return true;
  const int n_bits = std::ilogb(n_used) + 1;
  return n_bits + significant_bits(theta_used) <= digits;
}

// ggml's chain theta_scale^j alone, before its finishing steps: the frequencies of the same config
// without scaling for the rules whose chain uses the config's base (linear, YaRN, Llama-3, LongRoPE);
// for none and the NTK rules (the runtime passes the scaled base) the chain is all there is.
[[nodiscard]] std::vector<long double> ggml_chain_values(const rope_config& cfg, std::int64_t seq_len, std::int64_t n) {
  rope_config plain = cfg;
  const bool finished = cfg.scaling == scaling_kind::linear || cfg.scaling == scaling_kind::yarn ||
                        cfg.scaling == scaling_kind::llama3 || cfg.scaling == scaling_kind::longrope;
  if (finished) plain = with_scaling(plain, scaling_kind::none);
  const ggml_angle g(plain, seq_len);
  std::vector<long double> out;
  for (int b = 0; b < g.bands(); ++b) out.push_back(g.trace(n, b).inv_freq_used);
  return out;
}

// The chain's roundings in band b, propagated to the angle: step j rounds a value <= n~ chain_j
// (1 + u)^j by half an ulp of its binade, then is scaled by theta~_b / chain_j; each finishing step
// rounds within u of a value whose propagated size is at most the largest angle (bound.hpp, R).
[[nodiscard]] double ggml_chain_rounding(const std::vector<long double>& chain, int b, int finishing, double n_used,
                                         long double theta_used) {
  const double u = unit(f32);
  double sum = 0;
  for (int j = 1; j <= b; ++j) {
    const long double cj = chain[static_cast<std::size_t>(j)];
    const double v = static_cast<double>(n_used * cj) * std::pow(1 + u, j);
    sum += half_ulp_below(v, 24, -126) * static_cast<double>(theta_used / cj);
  }
  const double largest_angle = static_cast<double>(n_used * theta_used);
  sum += finishing * u * largest_angle;
  return sum * std::pow(1 + 2 * u, b + finishing + 1);  // the propagation's own roundings
}

}  // namespace

double half_ulp_below(double x, int digits, int emin) {
  if (!(x > 0)) return 0;
  if (!std::isfinite(x)) return std::numeric_limits<double>::infinity();
  const int e = std::max(std::ilogb(x), emin);  // the binade of x, or the subnormal range
  return std::ldexp(1.0, e - digits);
}

double position_rounding_tokens(std::int64_t n, int digits, int emin) {
  const double v = static_cast<double>(n);
  if (v <= std::ldexp(1.0, digits)) return 0;  // every integer up to 2^digits is exact
  // Top binade [2^e, n]: its grid starts at 2^e, so p is at most n - 2^e from it; the binade below is
  // full, its integers within a quarter of the top binade's ulp (when that ulp is >= 4).
  const int e = std::ilogb(v);
  const double top = std::min(half_ulp_below(v, digits, emin), v - std::ldexp(1.0, e));
  const double below = e - 1 >= digits ? std::ldexp(1.0, e - digits - 1) : 0;
  return std::max(top, below);
}

double relative_rounding_turn(double e, double x) {
  if (e >= 1) return std::numbers::pi;
  const double rho = (1 + e) / (1 - e);
  if (x >= std::numbers::pi / 4 || std::tan(x) >= 1 / std::sqrt(rho)) return std::asin(e);
  const double t = std::tan(x);
  return std::max(std::atan(rho * t) - x, x - std::atan(t / rho));
}

std::vector<bound_terms> applied_angle_terms(std::string_view implementation, const rope_config& cfg,
                                             std::int64_t seq_len, std::int64_t max_position) {
  const auto arith = arithmetic_of(implementation);
  if (!arith) throw std::invalid_argument("unknown implementation '" + std::string(implementation) + "'");
  const strategy_constants k = constants_of(implementation, cfg, seq_len, max_position);
  if (!k.found) throw std::invalid_argument("unknown implementation '" + std::string(implementation) + "'");
  const reference::rope_reference ref(cfg, seq_len);
  const double n = static_cast<double>(max_position);
  const format& pf = arith->position;
  const bool overflow = n >= pf.max + half_ulp_below(pf.max, pf.digits, pf.emin);  // rounds to inf
  const double pos_tokens = position_rounding_tokens(max_position, pf.digits, pf.emin);
  const component_errors ce = libm_errors(*arith, k.attention_factor);
  const std::vector<long double> chain = arith->ggml_chain ? ggml_chain_values(cfg, seq_len, max_position) : std::vector<long double>{};
  std::vector<bound_terms> out;
  for (int b = 0; b < ref.bands(); ++b) {
    bound_terms t;
    const long double used = k.inv_freq_used[static_cast<std::size_t>(b)];
    const auto theta = ref.inv_freq(b);
    t.frequency = static_cast<double>(std::fabs(static_cast<long double>(max_position) *
                                                ((used - static_cast<long double>(theta.hi)) - static_cast<long double>(theta.lo))));
    if (overflow) {
      t.position = t.total = std::numeric_limits<double>::infinity();
      out.push_back(t);
      continue;
    }
    t.position = pos_tokens * static_cast<double>(used);
    const double largest_angle = static_cast<double>((static_cast<long double>(n) + pos_tokens) * used);
    const double n_used = n + pos_tokens;
    const bool power_of_two = significant_bits(used) == 1;
    if (arith->ggml_chain && b == 0 && (used == 1 || (power_of_two && cfg.scaling != scaling_kind::yarn))) {
      t.product = 0;  // no chain product, and every finishing operation multiplies or divides by a power of two
    } else if (!arith->ggml_chain && product_is_exact(n_used, used, arith->angle.digits)) {
      t.product = 0;  // e.g. band 0's theta~ = 1: p * 1 is exact
    } else if (arith->ggml_chain) {
      t.product = ggml_chain_rounding(chain, b, ggml_finishing_roundings(cfg.scaling), n_used, used);
    } else {
      t.product = half_ulp_below(largest_angle, arith->angle.digits, arith->angle.emin);
    }
    const double formed_max = largest_angle + t.product;  // every angle formed is in [0, formed_max]
    t.largest_angle = formed_max;
    if (arith->eval == eval_kind::fast) {
      t.sin_cos = fast_sincos_turn(formed_max, k.attention_factor);
    } else {
      const double sub = ce.absolute > 0 ? std::sqrt(2.0) * ce.absolute / (k.attention_factor * (1 - ce.relative)) : 0;
      t.sin_cos = relative_rounding_turn(ce.relative, formed_max) + (sub < 1 ? std::asin(sub) : std::numbers::pi);
    }
    const double sum = t.frequency + t.position + t.product + t.sin_cos;
    t.total = std::isinf(sum) ? sum : std::min(std::numbers::pi, sum);
    out.push_back(t);
  }
  return out;
}

namespace {

// The a-priori reasons a finite, unsaturated bound may be more than twice the worst case (bound.hpp).
// A term of at least 3/4 of the bound that the sweep realises keeps it within 2x; these are the
// cases where the dominant term is one the arithmetic does not realise in full.
[[nodiscard]] std::string why_not_within_2x(const arithmetic& a, const bound_terms& t, int band) {
  const double others_s = t.frequency + t.position + t.product;
  if (a.ggml_chain && band > 0 && t.product >= t.frequency + t.position + t.sin_cos)
    return "ggml chain: its " + std::to_string(band) + "+ fp32 roundings are each charged u times the largest angle; "
           "their signs vary (a random walk) and each is u only at the top of its binade";
  if (a.eval == eval_kind::fast) {
    if (t.largest_angle < std::numbers::pi / 2)
      return "fast_sin: 1.1e-3 is its worst over [-pi, pi]; this band's angles stay below " +
             std::to_string(t.largest_angle) + " rad, where the parabola errs less (0.0132 x near 0)";
    return "fast_sincos reduction: fl(x + pi/2) and fl(2 pi k) each round by up to half an ulp of the largest "
           "angle, charged in full and together";
  }
  if (t.sin_cos >= others_s) {
    if (!a.cast && !a.rounded)
      return "libm: glibc's cos/sin are charged 1 ulp (2u relative) each; they round almost correctly, and a "
             "rounding is u relative only at the bottom of a binade: the sweep meets about half";
    if (t.largest_angle < std::numbers::pi / 4)
      return "slow band: the rounding turns the pair by up to 2 E x only at the largest angles x, formed by the last "
             "positions alone, whose sines are not all rounded by the full u";
  }
  const double largest = std::max({t.frequency, t.position, t.product, t.sin_cos});
  if (largest < 0.5 * (others_s + t.sin_cos))
    return "unaligned: no term is half the bound, and the frequency term's worst (p = N) and the roundings' "
           "worst fall on different positions";
  return "";
}

}  // namespace

std::vector<band_bound> applied_angle_bounds(std::string_view implementation, const rope_config& cfg,
                                             std::int64_t seq_len, std::int64_t max_position) {
  const auto arith = arithmetic_of(implementation);  // found: applied_angle_terms throws otherwise
  const auto terms = applied_angle_terms(implementation, cfg, seq_len, max_position);
  std::vector<band_bound> out;
  for (std::size_t b = 0; b < terms.size(); ++b) {
    const bound_terms& t = terms[b];
    band_bound bb;
    bb.angle_rad = t.total;
    if (std::isinf(t.position)) {
      bb.why = "overflow: position " + std::to_string(max_position) + " rounds to inf in the position's dtype";
    } else if (std::isinf(t.total)) {
      bb.why = "fast_sin's reduction: past this angle fl(x / 2 pi) and fl(2 pi k) no longer bring it within 0.1 of "
               "[-pi, pi], the parabola is evaluated outside its range (from 2^28 both reductions give 0: the pair (0, 0))";
    } else if (t.total >= std::numbers::pi) {
      bb.why = "saturated: the error terms reach pi and the error is reduced to (-pi, pi]; a sweep need not meet pi";
    } else {
      bb.why = why_not_within_2x(*arith, t, static_cast<int>(b));
    }
    out.push_back(std::move(bb));
  }
  return out;
}

}  // namespace ropecheck::certify
