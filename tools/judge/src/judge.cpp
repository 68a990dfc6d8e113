// tools/judge/src/judge.cpp — see ropecheck/judge/judge.hpp for the contract.
//
// Notation: p the claimed position of a token, theta_i the exact frequency of band i (reference),
// af the exact attention factor, T the dump dtype with unit roundoff u_T = 2^-digits(T) and
// eps_T = 2 u_T (one ulp at 1), z = x_a + i x_b the complex view of a rotated pair.
//
// 1. Judging (every element).
//    y* = rope_reference::rotate(p, x) per head (exact to ~2^-100). For a rotated pair the error
//    of each component is |y - y*| / (af (|x_a| + |x_b|)), the normalisation of
//    tools/judge/include/ropecheck/judge/error_model.hpp; a pass-through coordinate (>= rotary_dim) is measured relative to
//    |x_j|. The allowance per element follows the same error model for a careful implementation:
//      angle    k u_A |p theta_i|   angles formed in A = fp32 (fp64 for float64 dumps, and for
//               every dtype in strict mode); k = k_freq + k_pos + 1, k_freq the fp32 inv_freq bound
//               (pow 2u, reciprocal 1u, e ln(base) when d is not a power of two, a non-representable
//               base, and a conservative envelope of the scaling rules' extra steps/amplifiers), or
//               ggml's repeated-product bound i ((2/d) ln base + 3) + 2 when that is larger
//      cos/sin  3 u_T   libm cos/sin (< 1 ulp = 2u) and the multiply by af, or one rounding of a
//               cos/sin cache into T
//      rotation 2 u_T + 4 u_T^2   two products and a sum in T (conservative for fp32 compute)
//      store    u_T when T is a 16-bit type (compute in fp32, store once in T)
//    pass iff every element is within its allowance (and finite).
//
// 2. Diagnosis. For a pairing (layout, rotary dim) and each (token, band) the complex gain
//      g = sum_h conj(z_x) z_y / sum_h |z_x|^2       (least squares over the heads)
//    is af e^{i p theta} for a correct implementation: arg g is the implied angle, |g| the
//    implied attention factor, and the residual sum_h |z_y - g z_x|^2 / sum_h |z_y|^2 says
//    whether the pairs really rotate rigidly (the same rotation for every head). Tests, each
//    producing a finding with figures:
//      pairing      the (layout, rotary_dim in {claimed, head_dim}) whose median residual is
//                   lowest; a different one that is 10x better -> layout_swapped / rotary_dim_wrong
//                   (also: coordinates past the claimed rotary_dim changed -> rotary_dim_wrong)
//      magnitude    median |g| constant (MAD small) but != af -> attention_factor_wrong
//                   (missing when ~1, applied twice when ~af^2)
//      positions    per token, the position p' that best explains all bands' angles with the
//                   claimed theta (windings of the slowest band enumerated, refined band by band,
//                   slow to fast, every angle difference reduced to (-pi, pi]). When every token is
//                   explained (rms residual < 0.1 rad): all p' equal -> positions_constant;
//                   p' - p the same k -> positions_offset by k; p' = bf16(p) / fp16(p) at every
//                   token -> positions_low_precision
//      frequencies  otherwise, per band a line fit of the angles against p (unwrapped token by
//                   token in increasing p, each step reduced to (-pi, pi] around the current fit)
//                   gives theta'_i: theta'_i = bf16/fp16(fp32 theta_i) in >= 90% of bands ->
//                   inv_freq_low_precision; frequencies of the claimed base over head_dim ->
//                   rotary_dim_wrong; base^(-2i/d) with base from theta'_1/theta'_0 -> base_wrong
//      cos/sin      the relative cos/sin error |g / (|g|_med e^{i p theta}) - 1| at small positions
//                   (p < 64, where fp32 angles are exact to ~1e-5): above 16 u_T and 1e-4 -> a
//                   cos/sin error independent of p; implied cos and sin on the bf16/fp16 grid ->
//                   cos_sin_low_precision, else fast_sincos
//      drift        angle error vs the exact angle, as a multiple of u_f32 |p theta| and in tokens
//                   (|error| / theta_i): angle_drift_fp32 when the only excess is of that size
//                   (a warning on a pass, a failure for float64 dumps or in strict mode)
//    One head gives no rigidity test: the pairing is then judged by the spread of the pair magnitude
//    ratios. Line fits need positions dense enough to unwrap; otherwise bases are scanned against
//    the wrapped angles.
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/allowance.hpp"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <complex>
#include <exception>
#include <mutex>
#include <thread>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>

#include "ropecheck/angle.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"
#include "ropecheck/scalar.hpp"
#include "ropecheck/schedule.hpp"

namespace ropecheck::audit {
namespace {

using cplx = std::complex<double>;
constexpr double kPi = std::numbers::pi;
constexpr double kU32 = 0x1p-24;

// x reduced to (-pi, pi].
double wrap(double x) {
  double r = std::remainder(x, 2 * kPi);
  if (r <= -kPi) r += 2 * kPi;
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

std::string fmt(const char* f, auto... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}

// v rounded to a floating-point grid of `digits` significant bits (round to nearest even).
double round_to_digits(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  if (digits == 8) return static_cast<double>(static_cast<float>(scalar_traits<bfloat16>::narrow(v)));
  if (digits == 11) return static_cast<double>(static_cast<float>(scalar_traits<float16>::narrow(v)));
  if (digits == 24) return static_cast<double>(static_cast<float>(v));
  return v;
}
const char* grid_name(int digits) { return digits == 8 ? "bfloat16" : "float16"; }
// |v - grid(v)| in ulps of the grid at v.
double grid_distance(double v, int digits) {
  if (v == 0) return 0;
  const double ulp = std::ldexp(1.0, std::ilogb(v) - (digits - 1));
  return std::fabs(v - round_to_digits(v, digits)) / ulp;
}

struct cell {
  cplx g{0, 0};
  double resid = 0;  // relative squared residual of the rigid fit over heads
  bool ok = false;   // the pair has a non-negligible input
};

// Complex gain per (token, band) for a pairing; bands = rd / 2.
std::vector<cell> gains(const dump& d, layout lay, int rd) {
  const rope_geometry geo{d.head_dim, rd, lay};
  const int nb = rd / 2;
  std::vector<cell> out(static_cast<std::size_t>(d.tokens) * nb);
  const auto hd = static_cast<std::size_t>(d.head_dim);
  for (int t = 0; t < d.tokens; ++t)
    for (int i = 0; i < nb; ++i) {
      const auto [ia, ib] = geo.pair_of(i);
      cplx num{0, 0};
      double den = 0, ny = 0;
      auto z = [&](const std::vector<double>& v, int h) {
        const std::size_t o = (static_cast<std::size_t>(t) * d.heads + h) * hd;
        return cplx{v[o + ia], v[o + ib]};
      };
      for (int h = 0; h < d.heads; ++h) {
        const cplx zx = z(d.x, h), zy = z(d.y, h);
        num += std::conj(zx) * zy;
        den += std::norm(zx);
        ny += std::norm(zy);
      }
      cell& c = out[static_cast<std::size_t>(t) * nb + i];
      if (!(den > 0) || !std::isfinite(ny)) continue;
      c.g = num / den;
      double r = 0;
      for (int h = 0; h < d.heads; ++h) r += std::norm(z(d.y, h) - c.g * z(d.x, h));
      c.resid = ny > 0 ? r / ny : 0;
      c.ok = true;
    }
  return out;
}

std::vector<double> thetas(const reference::rope_reference& r) {
  std::vector<double> th(static_cast<std::size_t>(r.bands()));
  for (int i = 0; i < r.bands(); ++i) th[static_cast<std::size_t>(i)] = static_cast<double>(r.inv_freq(i).value());
  return th;
}

struct implied {
  double p = 0;
  double resid = std::numeric_limits<double>::infinity();  // weighted rms angle residual (rad)
};

// The position that best explains the angles a_i of one token with frequencies theta_i.
implied implied_position(const std::vector<double>& a, const std::vector<double>& w, const std::vector<double>& th,
                         double pmax) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(th.size()); ++i)
    if (th[static_cast<std::size_t>(i)] > 0 && w[static_cast<std::size_t>(i)] > 0) order.push_back(i);
  implied best;
  if (order.empty()) return best;
  std::sort(order.begin(), order.end(), [&](int l, int r) { return th[static_cast<std::size_t>(l)] < th[static_cast<std::size_t>(r)]; });
  const auto bs = static_cast<std::size_t>(order.front());
  const double period = 2 * kPi / th[bs];
  const long kmax = std::min<long>(static_cast<long>(std::ceil(pmax / period)) + 1, 20000);
  for (long k = -kmax; k <= kmax; ++k) {
    double p = (a[bs] + 2 * kPi * static_cast<double>(k)) / th[bs];
    if (std::fabs(p) > pmax + period) continue;
    for (int i : order) p += wrap(a[static_cast<std::size_t>(i)] - p * th[static_cast<std::size_t>(i)]) / th[static_cast<std::size_t>(i)];
    double s = 0, sw = 0;
    for (int i : order) {
      const double r = wrap(a[static_cast<std::size_t>(i)] - p * th[static_cast<std::size_t>(i)]);
      s += w[static_cast<std::size_t>(i)] * r * r;
      sw += w[static_cast<std::size_t>(i)];
    }
    const double rms = std::sqrt(s / sw);
    if (rms < best.resid) best = {p, rms};
  }
  return best;
}

struct line {
  double slope = 0, intercept = 0, rms = 0;
  bool ok = false;
};

// Angles of one band against position, unwrapped in increasing position around the running fit.
line fit_band(const std::vector<std::pair<double, double>>& pts_sorted, double slope0) {
  line L;
  L.slope = slope0;
  double n = 0, sp = 0, sf = 0, spp = 0, spf = 0;
  std::vector<std::pair<double, double>> unwrapped;
  for (const auto& [p, a] : pts_sorted) {
    const double pred = L.slope * p + L.intercept;
    const double phi = pred + wrap(a - pred);
    unwrapped.emplace_back(p, phi);
    n += 1, sp += p, sf += phi, spp += p * p, spf += p * phi;
    const double det = n * spp - sp * sp;
    if (n >= 2 && det > 0) {
      L.slope = (n * spf - sp * sf) / det;
      L.intercept = (sf - L.slope * sp) / n;
    } else {
      L.intercept = phi - L.slope * p;
    }
  }
  double s = 0;
  for (const auto& [p, phi] : unwrapped) s += (phi - L.slope * p - L.intercept) * (phi - L.slope * p - L.intercept);
  L.rms = unwrapped.empty() ? 0 : std::sqrt(s / static_cast<double>(unwrapped.size()));
  L.ok = n >= 2;
  return L;
}

void add(verdict& v, std::string cls, std::string sentence, double conf) {
  v.findings.push_back({std::move(cls), std::move(sentence), conf});
}

}  // namespace

namespace {

// One worker's share of the judging; merged in token order (ties keep the earlier token), so the
// verdict does not depend on the number of threads.
struct judge_acc {
  distance ex, hf;        // ex.worst_ratio/hf.worst_ratio: against each reference's own allowance
  double sel_abs = 0;     // largest |error| against the chosen reference
  double sel_tol_at_max = 0;
  bool needed_angle_allowance = false;
  std::int64_t elements = 0;
  std::int64_t non_finite = 0, first_non_finite_pos = 0;
  bool seen_non_finite = false;
  void note(distance& D, double rel, double ratio, double abs, std::int64_t p, int band) {
    if (rel > D.max_ulps) D.max_ulps = rel, D.max_abs = abs, D.at_position = p, D.at_band = band;
    if (ratio > D.worst_ratio) D.worst_ratio = ratio, D.worst_position = p, D.worst_band = band;
  }
  void merge(const judge_acc& o) {
    auto m = [](distance& a, const distance& b) {
      if (b.max_ulps > a.max_ulps) a.max_ulps = b.max_ulps, a.max_abs = b.max_abs, a.at_position = b.at_position, a.at_band = b.at_band;
      if (b.worst_ratio > a.worst_ratio) a.worst_ratio = b.worst_ratio, a.worst_position = b.worst_position, a.worst_band = b.worst_band;
    };
    m(ex, o.ex);
    m(hf, o.hf);
    sel_abs = std::max(sel_abs, o.sel_abs);
    needed_angle_allowance = needed_angle_allowance || o.needed_angle_allowance;
    elements += o.elements;
    if (o.seen_non_finite && !seen_non_finite) first_non_finite_pos = o.first_non_finite_pos, seen_non_finite = true;
    non_finite += o.non_finite;
  }
};

// The tokens the diagnosis looks at: all of them up to `limit`; otherwise the 64 smallest positions
// (the unwrapping and the small-position cos/sin tests start there) and an even spread of the rest.
std::vector<int> diagnosis_subset(const dump& d, int limit) {
  std::vector<int> order(static_cast<std::size_t>(d.tokens));
  std::iota(order.begin(), order.end(), 0);
  if (d.tokens <= limit) return order;
  std::stable_sort(order.begin(), order.end(), [&](int l, int r) {
    return d.positions[static_cast<std::size_t>(l)] < d.positions[static_cast<std::size_t>(r)];
  });
  std::vector<int> pick(order.begin(), order.begin() + 64);
  const std::size_t rest = order.size() - 64, want = static_cast<std::size_t>(limit - 64);
  for (std::size_t k = 0; k < want; ++k) pick.push_back(order[64 + k * rest / want]);
  std::sort(pick.begin(), pick.end());
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  return pick;
}

dump take_tokens(const dump& d, const std::vector<int>& tokens) {
  dump s;
  s.dtype = d.dtype;
  s.heads = d.heads;
  s.head_dim = d.head_dim;
  s.tokens = static_cast<int>(tokens.size());
  const std::size_t row = static_cast<std::size_t>(d.heads) * static_cast<std::size_t>(d.head_dim);
  s.x.reserve(row * tokens.size());
  s.y.reserve(row * tokens.size());
  for (int t : tokens) {
    s.positions.push_back(d.positions[static_cast<std::size_t>(t)]);
    const auto o = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(t) * row);
    s.x.insert(s.x.end(), d.x.begin() + o, d.x.begin() + o + static_cast<std::ptrdiff_t>(row));
    s.y.insert(s.y.end(), d.y.begin() + o, d.y.begin() + o + static_cast<std::ptrdiff_t>(row));
  }
  return s;
}

}  // namespace

verdict audit(const dump& full, const rope_config& claimed_in, const audit_options& opt) {
  const auto n_full = static_cast<std::size_t>(full.tokens) * static_cast<std::size_t>(full.heads) *
                      static_cast<std::size_t>(full.head_dim);
  if (full.tokens <= 0 || full.heads <= 0 || full.head_dim <= 0 || full.x.size() != n_full || full.y.size() != n_full ||
      full.positions.size() != static_cast<std::size_t>(full.tokens))
    throw std::invalid_argument("audit: dump sizes disagree (tokens x heads x head_dim, positions)");
  if (full.head_dim != claimed_in.head_dim)
    throw std::invalid_argument(fmt("audit: dump head_dim %d but the config says %d", full.head_dim, claimed_in.head_dim));
  // The allowance for exact angles (the flat override is applied below, where both references need it).
  const judge::allowance AL(claimed_in, full.dtype, reference_kind::exact, opt.strict);
  const judge::dtype_info T = AL.dtype();
  if (opt.tolerance_ulps && !(*opt.tolerance_ulps > 0 && std::isfinite(*opt.tolerance_ulps)))
    throw std::invalid_argument("audit: the tolerance override must be a positive number of ulps");

  std::int64_t pmin = full.positions.front(), pmaxv = full.positions.front();
  for (auto p : full.positions) pmin = std::min(pmin, p), pmaxv = std::max(pmaxv, p);
  // Dynamic NTK and LongRoPE read the sequence length; HF derives it from the position ids.
  const std::int64_t seq_len = opt.seq_len > 0 ? opt.seq_len : std::max<std::int64_t>(pmaxv + 1, 1);
  const rope_config& claimed = claimed_in;

  const reference::rope_reference ref(claimed, seq_len);
  const rope_geometry geo = rope_geometry::of(claimed);
  const int nb = claimed.bands();
  const double af = static_cast<double>(ref.attention_factor().value());
  const long double af_l = ref.attention_factor().value();
  const std::vector<double> theta = thetas(ref);
  const double uT = T.u(), epsT = T.eps();
  const bool fp32_angles = AL.fp32_angles();
  const double tol_fixed = AL.fixed();  // cos/sin 3u + rotation 2u + 4u^2 (+ a 16-bit store u)
  const std::optional<double> flat = opt.tolerance_ulps ? std::optional<double>(*opt.tolerance_ulps * epsT) : std::nullopt;

  // HF's convention: its fp32 inv_freq (dynamic NTK/LongRoPE at this sequence length).
  std::vector<float> hf_inv;
  {
    const auto s = hf_frequencies_fp32(claimed, seq_len);
    hf_inv = s.inv_freq;
    if (static_cast<int>(hf_inv.size()) != nb) throw std::invalid_argument("audit: HF schedule has the wrong band count");
  }
  std::string hf_source = "emulated (torch's fp32 steps with glibc powf)";
  if (opt.hf_inv_freq && static_cast<int>(opt.hf_inv_freq->size()) == nb) {
    int differ = 0;
    bool close = true;
    for (int i = 0; i < nb; ++i) {
      const float a = (*opt.hf_inv_freq)[static_cast<std::size_t>(i)], b = hf_inv[static_cast<std::size_t>(i)];
      if (a != b) ++differ;
      close = close && std::isfinite(a) && std::fabs(static_cast<double>(a) - b) <= 2 * std::ldexp(1.0, std::ilogb(b) - 23);
    }
    if (close) {
      hf_inv = *opt.hf_inv_freq;
      hf_source = fmt("the dump's own fp32 inv_freq (within 2 ulps of the emulation; differs in %d of %d bands)", differ, nb);
    } else {
      hf_source = "emulated (the dump's inv_freq is more than 2 ulps from it in some band: not HF's)";
    }
  }
  const bool wide = T.digits >= 53;  // float64 dumps: reference arithmetic in long double
  const bool use_ggml = opt.reference == reference_kind::ggml;
  std::optional<ggml_angle> ggml;
  if (use_ggml) ggml.emplace(claimed, seq_len);
  const bool fw_sel = opt.reference != reference_kind::exact;  // judged against a framework's convention

  // ---- 1. judge (every element; the reference once per (token, band), shared by all heads) ------
  const auto hd = static_cast<std::size_t>(full.head_dim);
  const auto row = static_cast<std::size_t>(full.heads) * hd;
  std::vector<token_error> per_token(static_cast<std::size_t>(full.tokens));
  auto judge_tokens = [&](int t0, int t1, judge_acc& A, std::atomic<std::int64_t>* done) {
    std::vector<reference::dd> angles(static_cast<std::size_t>(nb));
    std::vector<reference::cos_sin_dd> cs(static_cast<std::size_t>(nb));
    std::vector<long double> hc(static_cast<std::size_t>(nb)), hs(static_cast<std::size_t>(nb));
    std::vector<double> tol_ex(static_cast<std::size_t>(nb)), ang(static_cast<std::size_t>(nb));
    std::vector<float> fw_angles(static_cast<std::size_t>(nb));
    for (int t = t0; t < t1; ++t) {
      const std::int64_t p = full.positions[static_cast<std::size_t>(t)];
      ref.all_bands(p, angles, cs);
      const float pf = static_cast<float>(p);
      if (use_ggml) ggml->fill_angles(p, fw_angles);
      for (int i = 0; i < nb; ++i) {
        const auto b = static_cast<std::size_t>(i);
        ang[b] = AL.angle_term(p, i, std::fabs(angles[b].hi));
        tol_ex[b] = ang[b] + tol_fixed;
        // HF: the fp32 product of fp32 operands, then cos/sin of that exact number. x87 sincosl
        // (error ~2^-63, far below an ulp of any audited dtype; reference::cos_sin_of_angle, MPFR,
        // agrees and is tested to, but costs ~3 us a value: 6 s for a 1 GiB dump).
        const float a32 = use_ggml ? fw_angles[b] : pf * hf_inv[b];
        hc[b] = std::cos(static_cast<long double>(a32)), hs[b] = std::sin(static_cast<long double>(a32));
      }
      const std::size_t base_o = static_cast<std::size_t>(t) * row;
      double tok_ulps = 0, tok_ratio = 0;  // this token's largest error and error/allowance
      for (int h = 0; h < full.heads; ++h) {
        const std::size_t o = base_o + static_cast<std::size_t>(h) * hd;
        for (int i = 0; i < nb; ++i) {
          const auto b = static_cast<std::size_t>(i);
          const auto [ia, ib] = geo.pair_of(i);
          const double xa = full.x[o + ia], xb = full.x[o + ib], ya = full.y[o + ia], yb = full.y[o + ib];
          double ea, eb, ha, hb;  // errors against the exact and the HF reference
          if (!wide) {
            const double c = cs[b].cos.hi, s = cs[b].sin.hi;
            ea = std::fabs(ya - af * (xa * c - xb * s));
            eb = std::fabs(yb - af * (xa * s + xb * c));
            const double c2 = static_cast<double>(hc[b]), s2 = static_cast<double>(hs[b]);
            ha = std::fabs(ya - af * (xa * c2 - xb * s2));
            hb = std::fabs(yb - af * (xa * s2 + xb * c2));
          } else {
            const long double c = cs[b].cos.value(), s = cs[b].sin.value();
            const long double la = xa, lb = xb;
            ea = static_cast<double>(std::fabs(ya - af_l * (la * c - lb * s)));
            eb = static_cast<double>(std::fabs(yb - af_l * (la * s + lb * c)));
            ha = static_cast<double>(std::fabs(ya - af_l * (la * hc[b] - lb * hs[b])));
            hb = static_cast<double>(std::fabs(yb - af_l * (la * hs[b] + lb * hc[b])));
          }
          if (!std::isfinite(ya) || !std::isfinite(yb)) {
            if (!A.seen_non_finite) A.seen_non_finite = true, A.first_non_finite_pos = p;
            ++A.non_finite;
            ea = eb = ha = hb = std::numeric_limits<double>::infinity();
          }
          const double scale = af * (std::fabs(xa) + std::fabs(xb));
          const double e_ex = std::max(ea, eb), e_hf = std::max(ha, hb);
          const double r_ex = scale > 0 ? e_ex / scale : (e_ex == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          const double r_hf = scale > 0 ? e_hf / scale : (e_hf == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          const double t_ex = flat ? *flat : tol_ex[b], t_hf = flat ? *flat : tol_fixed;
          A.note(A.ex, r_ex / epsT, r_ex / t_ex, e_ex, p, i);
          A.note(A.hf, r_hf / epsT, r_hf / t_hf, e_hf, p, i);
          const bool hf_sel = fw_sel;
          A.sel_abs = std::max(A.sel_abs, hf_sel ? e_hf : e_ex);
          if (!flat && !hf_sel && r_ex > tol_fixed) A.needed_angle_allowance = true;
          tok_ulps = std::max(tok_ulps, (hf_sel ? r_hf : r_ex) / epsT);
          tok_ratio = std::max(tok_ratio, hf_sel ? r_hf / t_hf : r_ex / t_ex);
        }
        for (std::size_t j = static_cast<std::size_t>(claimed.rotary_dim); j < hd; ++j) {
          const double x = full.x[o + j], y = full.y[o + j];
          const double e = std::isfinite(y) ? std::fabs(y - x) : std::numeric_limits<double>::infinity();
          if (!std::isfinite(y)) {
            if (!A.seen_non_finite) A.seen_non_finite = true, A.first_non_finite_pos = p;
            ++A.non_finite;
          }
          const double scale = std::fabs(x);
          const double r = scale > 0 ? e / scale : (e == 0 ? 0.0 : std::numeric_limits<double>::infinity());
          A.note(A.ex, r / epsT, r / uT, e, p, -1);
          A.note(A.hf, r / epsT, r / uT, e, p, -1);
          A.sel_abs = std::max(A.sel_abs, e);
          tok_ulps = std::max(tok_ulps, r / epsT);
          tok_ratio = std::max(tok_ratio, r / uT);
        }
      }
      A.elements += static_cast<std::int64_t>(row);
      per_token[static_cast<std::size_t>(t)] = {p, tok_ulps, tok_ratio};  // each worker owns its tokens
      if (done) {
        const auto k = done->fetch_add(1, std::memory_order_relaxed) + 1;
        if (opt.progress && t0 == 0 && (k % 256 == 0 || k == full.tokens)) opt.progress(k, full.tokens);
      }
    }
  };

  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int workers = std::clamp(opt.threads > 0 ? opt.threads : static_cast<int>(hw), 1,
                                 std::max(1, full.tokens / 64));
  std::vector<judge_acc> accs(static_cast<std::size_t>(workers));
  std::atomic<std::int64_t> done{0};
  {
    std::vector<std::thread> pool;
    std::exception_ptr failure;
    std::mutex failure_mutex;
    for (int w = 0; w < workers; ++w) {
      const int t0 = static_cast<int>(static_cast<std::int64_t>(full.tokens) * w / workers);
      const int t1 = static_cast<int>(static_cast<std::int64_t>(full.tokens) * (w + 1) / workers);
      auto job = [&, t0, t1, w] {
        try {
          judge_tokens(t0, t1, accs[static_cast<std::size_t>(w)], &done);
        } catch (...) {
          const std::lock_guard lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
      };
      if (w + 1 == workers) job();
      else pool.emplace_back(job);
    }
    for (auto& th : pool) th.join();
    if (failure) std::rethrow_exception(failure);
  }
  judge_acc J;
  for (const auto& a : accs) J.merge(a);
  if (opt.progress) opt.progress(full.tokens, full.tokens);

  verdict v;
  v.reference = opt.reference;
  v.framework = use_ggml ? "ggml" : "hf";
  v.hf_inv_freq_source = use_ggml ? "ggml's fp32 chain theta_scale^i (powf(base, -2/d))" : hf_source;
  v.from_exact = J.ex;
  v.from_framework = J.hf;
  v.elements = J.elements;
  const distance& D = fw_sel ? J.hf : J.ex;
  v.worst_ratio = D.worst_ratio;
  v.pass = D.worst_ratio <= 1.0 && J.non_finite == 0;
  v.max_error_ulps = D.max_ulps;
  v.max_error_abs = J.sel_abs;
  // The allowance at the element with the largest error (same unit as max_error_ulps).
  {
    double tol_at = flat ? *flat : tol_fixed;
    if (!flat && D.at_band >= 0 && opt.reference == reference_kind::exact) {
      tol_at += AL.angle_term(D.at_position, D.at_band,
                              std::fabs(static_cast<double>(ref.angle(D.at_position, D.at_band).value())));
    }
    if (D.at_band < 0) tol_at = uT;
    v.tolerance = tol_at / epsT;
  }
  const std::string where = D.worst_band >= 0 ? fmt("band %d", D.worst_band) : std::string("a pass-through coordinate");
  if (flat) {
    v.tolerance_reason = fmt("%s dump against the %s reference: flat allowance %.4g ulps of %s (given with "
                             "--tolerance-ulps, replacing the derived one) relative to af(|x_a|+|x_b|); the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             full.dtype.c_str(), use_ggml ? "ggml fp32-angle" : fw_sel ? "HF fp32-angle" : "exact",
                             *opt.tolerance_ulps, full.dtype.c_str(), D.worst_ratio,
                             static_cast<long long>(D.worst_position), where.c_str());
  } else if (fw_sel) {
    v.tolerance_reason = fmt("%s dump against %s convention computed exactly (%s, exact cos/sin): per element allowance = cos/sin rounding 3u + rotation "
                             "arithmetic 2u%s = %.3g ulps of %s, relative to af(|x_a|+|x_b|); the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             full.dtype.c_str(), use_ggml ? "ggml's" : "HF's",
                             use_ggml ? "fp32 chain of products p theta_scale^i" : "fp32 inv_freq, fp32 product p*inv_freq",
                             T.narrow16 ? " + store u" : "", tol_fixed / epsT, full.dtype.c_str(),
                             D.worst_ratio, static_cast<long long>(D.worst_position), where.c_str());
  } else {
    v.tolerance_reason = fmt("%s dump against exact mathematics: per element allowance = %s angle formation "
                             "(k u |p theta|, k = %.3g..%.3g) + cos/sin rounding 3u + rotation arithmetic 2u%s, "
                             "relative to af(|x_a|+|x_b|) (pass-through: u |x_j|), in ulps of %s; the largest "
                             "error/allowance is %.3g, at position %lld %s",
                             full.dtype.c_str(), fp32_angles ? "fp32" : "fp64", AL.k_min() + 1, AL.k_max() + 2,
                             T.narrow16 ? " + store u" : "", full.dtype.c_str(), D.worst_ratio,
                             static_cast<long long>(D.worst_position), where.c_str());
  }
  if (J.non_finite > 0)
    add(v, "non_finite",
        fmt("the output holds %lld NaN or infinite values (first at position %lld) where the input is finite",
            static_cast<long long>(J.non_finite), static_cast<long long>(J.first_non_finite_pos)),
        0.99);
  const bool needed_angle_allowance = J.needed_angle_allowance;

  // The diagnosis works on a spread subset of a large dump (its fits need hundreds of tokens, not
  // millions); d is that subset from here on.
  const std::vector<int> subset = diagnosis_subset(full, opt.diagnosis_tokens);
  const dump sub = static_cast<int>(subset.size()) < full.tokens ? take_tokens(full, subset) : dump{};
  const dump& d = static_cast<int>(subset.size()) < full.tokens ? sub : full;
  v.tokens_diagnosed = d.tokens;
  v.per_position = std::move(per_token);

  // Relative-offset identity of the implied scores: <y_m, y_n> must equal
  // af^2 <x_m, R(n - m) x_n> per head. Pairs: every token of the diagnosis subset with the token of
  // the smallest position and with its predecessor in position order; at most 4 heads.
  {
    std::vector<int> by_pos(static_cast<std::size_t>(d.tokens));
    std::iota(by_pos.begin(), by_pos.end(), 0);
    std::stable_sort(by_pos.begin(), by_pos.end(), [&](int l, int r) {
      return d.positions[static_cast<std::size_t>(l)] < d.positions[static_cast<std::size_t>(r)];
    });
    const int hs = std::min(d.heads, 4);
    std::vector<reference::dd> rx(hd);
    auto check_pair = [&](int m, int n) {
      const std::int64_t pm = d.positions[static_cast<std::size_t>(m)], pn = d.positions[static_cast<std::size_t>(n)];
      for (int h = 0; h < hs; ++h) {
        const std::size_t om = (static_cast<std::size_t>(m) * d.heads + h) * hd;
        const std::size_t on = (static_cast<std::size_t>(n) * d.heads + h) * hd;
        ref.rotate(pn - pm, std::span<const double>(d.x.data() + on, hd), rx);  // af R(n - m) x_n
        long double got = 0, want = 0, nm = 0, nn = 0;
        for (std::size_t j = 0; j < static_cast<std::size_t>(claimed.rotary_dim); ++j) {
          got += static_cast<long double>(d.y[om + j]) * d.y[on + j];
          want += static_cast<long double>(d.x[om + j]) * rx[j].value() * af_l;
          nm += static_cast<long double>(d.x[om + j]) * d.x[om + j];
          nn += static_cast<long double>(d.x[on + j]) * d.x[on + j];
        }
        const long double scale = af_l * af_l * std::sqrt(nm * nn);
        const double viol = scale > 0 ? static_cast<double>(std::fabs(got - want) / scale) : 0.0;
        if (!(viol <= v.score_violation)) {  // NaN propagates as the worst
          v.score_violation = std::isnan(viol) ? std::numeric_limits<double>::infinity() : viol;
          v.score_violation_m = pm, v.score_violation_n = pn;
        }
      }
    };
    for (std::size_t k = 1; k < by_pos.size(); ++k) {
      check_pair(by_pos[0], by_pos[k]);
      if (k >= 2) check_pair(by_pos[k - 1], by_pos[k]);
    }
  }
  const auto n = static_cast<std::size_t>(d.tokens) * row;

  // ---- 2. diagnosis ---------------------------------------------------------------------------
  const double pabs = static_cast<double>(std::max(std::llabs(pmin), std::llabs(pmaxv)));

  // Angle errors against the claimed frequencies (claimed pairing), for the drift figures.
  struct drift_stats {
    double max_err = 0, max_tokens = 0, max_k = 0, small_p_max = 0;
    std::int64_t at_pos = 0;
    int at_band = 0;
  };
  auto drift_of = [&](const std::vector<cell>& cells) {
    drift_stats s;
    for (int t = 0; t < d.tokens; ++t) {
      const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
      for (int i = 0; i < nb; ++i) {
        const cell& c = cells[static_cast<std::size_t>(t) * nb + i];
        if (!c.ok) continue;
        const double e = std::fabs(ref.angle_error(p, i, std::arg(c.g)));
        const double phi = std::fabs(static_cast<double>(ref.angle(p, i).value()));
        if (std::llabs(p) < 64) s.small_p_max = std::max(s.small_p_max, e);
        if (e > s.max_err) {
          s.max_err = e, s.at_pos = p, s.at_band = i;
          s.max_tokens = e / theta[static_cast<std::size_t>(i)];
          s.max_k = phi > 0 ? e / (kU32 * phi) : 0;
        }
      }
    }
    return s;
  };

  const std::vector<cell> claimed_cells = gains(d, claimed.pair_layout, claimed.rotary_dim);
  if (v.pass) {
    if (needed_angle_allowance && fp32_angles) {
      const drift_stats s = drift_of(claimed_cells);
      add(v, "angle_drift_fp32",
          fmt("warning: angle error grows with position, %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, "
              "%.3g tokens of position error; %.3g rad at positions < 64): fp32 angle formation, within its allowance",
              s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max),
          0.4);
    }
    return v;
  }

  // 2-. Judged against HF's convention but within the exact allowance: correct mathematics that
  //     does not reproduce HF's fp32 angles.
  if (fw_sel && v.from_exact.worst_ratio <= 1.0 && J.non_finite == 0) {
    add(v, use_ggml ? "not_ggml_convention" : "not_hf_convention",
        fmt("the output follows exact angles (%.3g ulps from exact mathematics, within that allowance) rather than "
            "%s fp32 angles (%.3g ulps from them, largest at position %lld band %d): correct mathematics, but not "
            "%s convention",
            v.from_exact.max_ulps, use_ggml ? "ggml's" : "HF's", v.from_framework.max_ulps,
            static_cast<long long>(v.from_framework.at_position), v.from_framework.at_band,
            use_ggml ? "ggml's" : "HF's"),
        0.9);
    std::stable_sort(v.findings.begin(), v.findings.end(),
                     [](const finding& l, const finding& r) { return l.confidence > r.confidence; });
    return v;
  }

  // 2a. Pairing: which (layout, rotary dim) rotates rigidly across heads.
  struct pairing {
    layout lay;
    int rd;
    std::vector<cell> cells;
    double score = std::numeric_limits<double>::infinity();  // median relative rms residual, p != 0
  };
  std::vector<pairing> cands;
  const layout other = claimed.pair_layout == layout::interleaved ? layout::half_split : layout::interleaved;
  for (int rd : {claimed.rotary_dim, d.head_dim}) {
    if (rd == d.head_dim && rd == claimed.rotary_dim && !cands.empty()) break;
    for (layout l : {claimed.pair_layout, other})
      cands.push_back({l, rd, l == claimed.pair_layout && rd == claimed.rotary_dim ? claimed_cells : gains(d, l, rd)});
  }
  // Score: with >= 2 heads, the median rigid-fit residual (one rotation for every head); with one
  // head every pairing fits exactly, so the score is how far the pair magnitude ratios |g| spread
  // around their median (a rotation keeps them equal: af for every pair; a wrong pairing mixes
  // coordinates of different pairs and spreads them), as a median relative deviation.
  for (auto& c : cands) {
    std::vector<double> r, mags;
    const int b = c.rd / 2;
    for (int t = 0; t < d.tokens; ++t)
      if (d.positions[static_cast<std::size_t>(t)] != 0)
        for (int i = 0; i < b; ++i)
          if (const cell& e = c.cells[static_cast<std::size_t>(t) * b + i]; e.ok) {
            r.push_back(std::sqrt(e.resid));
            mags.push_back(std::abs(e.g));
          }
    if (d.heads >= 2) {
      if (!r.empty()) c.score = median(r);
    } else if (!mags.empty()) {
      const double m = median(mags);
      std::vector<double> dev;
      for (double x : mags) dev.push_back(std::fabs(x - m));
      c.score = m > 0 ? median(dev) / m : std::numeric_limits<double>::infinity();
    }
  }
  std::size_t best = 0;
  for (std::size_t k = 1; k < cands.size(); ++k)
    if (cands[k].score < cands[best].score / 10 && cands[0].score > 0.03) best = k;
  const pairing& P = cands[best];
  if (best != 0) {
    const std::string claimed_pairs = claimed.pair_layout == layout::interleaved ? "(2i, 2i+1)" : "(i, i+r/2)";
    const std::string found_pairs = P.lay == layout::interleaved ? "(2i, 2i+1)" : "(i, i+r/2)";
    if (P.lay != claimed.pair_layout)
      add(v, "layout_swapped",
          fmt("pairs are %s (%s), not the claimed %s (%s): %s %.2g, against %.2g for the claimed pairing",
              std::string(to_string(P.lay)).c_str(), found_pairs.c_str(),
              std::string(to_string(claimed.pair_layout)).c_str(), claimed_pairs.c_str(),
              d.heads >= 2 ? "the same rotation explains every head with median residual"
                           : "every pair keeps its length ratio (one head), median relative spread",
              P.score, cands[0].score),
          0.95);
    if (P.rd != claimed.rotary_dim)
      add(v, "rotary_dim_wrong",
          fmt("all %d coordinates are rotated (pairs over rotary dim %d, median residual %.2g), not the claimed rotary "
              "dim %d (residual %.2g)",
              P.rd, P.rd, P.score, claimed.rotary_dim, cands[0].score),
          0.93);
  } else if (claimed.rotary_dim < d.head_dim) {
    // Pass-through coordinates must be copied.
    std::size_t changed = 0, total = 0;
    for (std::size_t o = 0; o < n; o += hd)
      for (std::size_t j = static_cast<std::size_t>(claimed.rotary_dim); j < hd; ++j, ++total)
        if (std::fabs(d.y[o + j] - d.x[o + j]) > uT * std::fabs(d.x[o + j])) ++changed;
    if (changed > total / 10)
      add(v, "rotary_dim_wrong",
          fmt("coordinates %d..%d should pass through unchanged but %zu of %zu values changed", claimed.rotary_dim,
              d.head_dim - 1, changed, total),
          0.9);
  }

  // Frequencies of the pairing in use.
  rope_config used_cfg = claimed;
  used_cfg.rotary_dim = P.rd;
  const int ub = P.rd / 2;
  std::optional<reference::rope_reference> ref_used;
  if (P.rd != claimed.rotary_dim) ref_used.emplace(used_cfg);
  const reference::rope_reference& R = ref_used ? *ref_used : ref;
  const std::vector<double> th = thetas(R);
  auto at = [&](int t, int i) -> const cell& { return P.cells[static_cast<std::size_t>(t) * ub + i]; };

  // 2b. Magnitude: the implied attention factor.
  std::vector<double> mags;
  for (int t = 0; t < d.tokens; ++t)
    for (int i = 0; i < ub; ++i)
      if (at(t, i).ok) mags.push_back(std::abs(at(t, i).g));
  const double m_med = mags.empty() ? af : median(mags);
  std::vector<double> dev;
  for (double m : mags) dev.push_back(std::fabs(m - m_med));
  const double m_mad = dev.empty() ? 0 : median(dev);
  if (std::fabs(m_med / af - 1) > std::max(5e-3, 8 * uT) && m_mad < std::fabs(m_med - af) / 4) {
    std::string what;
    if (std::fabs(m_med - 1) <= std::max(3 * m_mad, 2e-3)) what = "the factor is missing";
    else if (std::fabs(m_med - af * af) <= std::max(3 * m_mad, 2e-3 * af * af)) what = "the factor is applied twice";
    else what = fmt("outputs are scaled by %.6g instead", m_med);
    add(v, "attention_factor_wrong",
        fmt("output/input pair magnitude ratio is %.6g (median of %zu pairs, MAD %.2g) but the claimed attention "
            "factor is %.6g (squared %.6g): %s",
            m_med, mags.size(), m_mad, af, af * af, what.c_str()),
        0.9);
  }

  // 2c. Implied positions with the claimed frequencies.
  std::vector<implied> imp(static_cast<std::size_t>(d.tokens));
  double worst_fit = 0;
  {
    std::vector<double> a(static_cast<std::size_t>(ub)), w(static_cast<std::size_t>(ub));
    for (int t = 0; t < d.tokens; ++t) {
      for (int i = 0; i < ub; ++i) {
        a[static_cast<std::size_t>(i)] = std::arg(at(t, i).g);
        w[static_cast<std::size_t>(i)] = at(t, i).ok ? 1.0 : 0.0;
      }
      imp[static_cast<std::size_t>(t)] = implied_position(a, w, th, 2 * pabs + 1000);
      worst_fit = std::max(worst_fit, imp[static_cast<std::size_t>(t)].resid);
    }
  }
  const bool positions_explain = worst_fit < 0.1;
  bool position_class = false;
  // Every frequency scaled by one ratio r is indistinguishable from every position scaled by r:
  // implied positions r p, not integers. That is a linear (position-interpolation) factor.
  if (positions_explain) {
    std::vector<double> ratios;
    for (int t = 0; t < d.tokens; ++t)
      if (const auto p = d.positions[static_cast<std::size_t>(t)]; std::llabs(p) >= 8)
        ratios.push_back(imp[static_cast<std::size_t>(t)].p / static_cast<double>(p));
    const double r = median(ratios);
    bool uniform = ratios.size() >= 4 && std::isfinite(r) && std::fabs(r - 1) > 1e-4;
    int off_integer = 0;
    for (int t = 0; t < d.tokens && uniform; ++t) {
      const double p = static_cast<double>(d.positions[static_cast<std::size_t>(t)]);
      const double q = imp[static_cast<std::size_t>(t)].p;
      uniform = std::fabs(q - r * p) < 0.05 + 1e-6 * std::fabs(p);
      if (std::fabs(q - std::round(q)) > 0.1) ++off_integer;
    }
    if (uniform && off_integer * 4 >= d.tokens) {
      position_class = true;
      std::string what;
      if (claimed.scaling == scaling_kind::linear)
        what = fmt("linear scaling with factor %.6g, not the claimed %g", claimed.factor / r, claimed.factor);
      else if (claimed.scaling == scaling_kind::none)
        what = fmt("linear scaling (position interpolation) with factor %.6g, though the claim has no scaling", 1 / r);
      else
        what = fmt("the claimed %s schedule times %.6g in every band", std::string(to_string(claimed.scaling)).c_str(), r);
      add(v, "scaling_wrong",
          fmt("every frequency is %.6g times the claimed one (implied positions are %.6g p, not integers, at %d of %d "
              "tokens): %s",
              r, r, off_integer, d.tokens, what.c_str()),
          0.96);
    }
  }
  if (positions_explain && !position_class) {
    double lo = imp[0].p, hi = imp[0].p;
    std::vector<double> dp;
    for (int t = 0; t < d.tokens; ++t) {
      lo = std::min(lo, imp[static_cast<std::size_t>(t)].p), hi = std::max(hi, imp[static_cast<std::size_t>(t)].p);
      dp.push_back(imp[static_cast<std::size_t>(t)].p - static_cast<double>(d.positions[static_cast<std::size_t>(t)]));
    }
    const double k = median(dp);
    double kdev = 0;
    for (double x : dp) kdev = std::max(kdev, std::fabs(x - k));
    if (pmaxv - pmin >= 1 && hi - lo < 0.5) {
      position_class = true;
      add(v, "positions_constant",
          fmt("every token is rotated as position %.0f (implied positions span %.2g tokens) although the claimed "
              "positions run %lld..%lld (angle fit residual <= %.2g rad)",
              std::round(median([&] { std::vector<double> q; for (auto& m : imp) q.push_back(m.p); return q; }())), hi - lo,
              static_cast<long long>(pmin), static_cast<long long>(pmaxv), worst_fit),
          0.95);
    } else if (std::fabs(k) >= 0.5 && kdev < 0.5) {
      position_class = true;
      add(v, "positions_offset",
          fmt("positions are offset by %+lld: implied minus claimed position is %.4g at all %d tokens (max deviation "
              "%.2g tokens, angle fit residual <= %.2g rad)",
              static_cast<long long>(std::llround(k)), k, d.tokens, kdev, worst_fit),
          0.95);
    } else {
      int shifted = 0, first_t = -1, big_t = -1;
      for (int t = 0; t < d.tokens; ++t)
        if (std::fabs(dp[static_cast<std::size_t>(t)]) >= 0.5) {
          ++shifted;
          if (first_t < 0 || d.positions[static_cast<std::size_t>(t)] < d.positions[static_cast<std::size_t>(first_t)]) first_t = t;
          if (big_t < 0 || std::fabs(dp[static_cast<std::size_t>(t)]) > std::fabs(dp[static_cast<std::size_t>(big_t)])) big_t = t;
        }
      if (shifted > 0)
        for (int digits : {8, 11}) {
          bool all = true;
          for (int t = 0; t < d.tokens && all; ++t) {
            const double p = static_cast<double>(d.positions[static_cast<std::size_t>(t)]);
            all = std::fabs(imp[static_cast<std::size_t>(t)].p - round_to_digits(p, digits)) < 0.5;
          }
          if (!all) continue;
          position_class = true;
          const double pb = static_cast<double>(d.positions[static_cast<std::size_t>(big_t)]);
          add(v, "positions_low_precision",
              fmt("positions are held in %s (%d significant bits): %d of %d tokens act at %s(p), e.g. %lld -> %.0f "
                  "(%+.0f tokens); the first shifted position is %lld -> %.0f",
                  grid_name(digits), digits, shifted, d.tokens, grid_name(digits), static_cast<long long>(pb),
                  imp[static_cast<std::size_t>(big_t)].p, imp[static_cast<std::size_t>(big_t)].p - pb,
                  static_cast<long long>(d.positions[static_cast<std::size_t>(first_t)]),
                  imp[static_cast<std::size_t>(first_t)].p),
              0.9);
          break;
        }
      if (shifted > 0 && !position_class) {
        // Some tokens act at other positions, by no common offset or grid: a KV cache writing a
        // few tokens at the wrong index, decode restarting at 0. Name the tokens.
        position_class = true;
        int at_zero = 0;
        std::string examples;
        int shown = 0;
        for (int t = 0; t < d.tokens; ++t) {
          if (std::fabs(dp[static_cast<std::size_t>(t)]) < 0.5) continue;
          if (std::fabs(imp[static_cast<std::size_t>(t)].p) < 0.5) ++at_zero;
          if (shown < 4) {
            examples += fmt("%s%lld -> %.0f", shown ? ", " : "", static_cast<long long>(d.positions[static_cast<std::size_t>(t)]),
                            imp[static_cast<std::size_t>(t)].p);
            ++shown;
          }
        }
        // The wrong tokens' common offset, and whether they are exactly the tokens from some position
        // on (a KV cache whose decode steps are off while the prefill is right).
        std::optional<long long> common;
        bool same = true;
        std::int64_t first_wrong = std::numeric_limits<std::int64_t>::max(), last_right = std::numeric_limits<std::int64_t>::min();
        for (int t = 0; t < d.tokens; ++t) {
          const auto tt = static_cast<std::size_t>(t);
          if (std::fabs(dp[tt]) < 0.5) {
            last_right = std::max(last_right, d.positions[tt]);
            continue;
          }
          first_wrong = std::min(first_wrong, d.positions[tt]);
          const long long k = std::llround(dp[tt]);
          if (!common) common = k;
          else if (*common != k) same = false;
        }
        std::string pattern;
        if (at_zero == shifted) pattern = ": every wrong one at position 0, as when decoding restarts at 0";
        else if (same && common && last_right < first_wrong)
          pattern = fmt(": every token from position %lld on is offset by %+lld and every one before is right, as "
                        "when a KV cache's decode positions are off by %+lld after the prefill",
                        static_cast<long long>(first_wrong), *common, *common);
        else if (same && common)
          pattern = fmt(": all of them by %+lld", *common);
        add(v, "positions_wrong",
            fmt("%d of %d tokens are rotated at other positions than claimed (claimed -> acting: %s%s)%s; the others "
                "are right (angle fit residual <= %.2g rad)",
                shifted, d.tokens, examples.c_str(), shifted > shown ? ", ..." : "", pattern.c_str(), worst_fit),
            0.9);
      }
    }
  }

  // 2d. Frequencies: per-band line fits when positions alone do not explain the angles.
  bool freq_class = false;
  if (!positions_explain) {
    std::vector<int> order(static_cast<std::size_t>(d.tokens));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int l, int r) { return d.positions[static_cast<std::size_t>(l)] < d.positions[static_cast<std::size_t>(r)]; });
    int distinct_positions = 0;
    for (std::size_t k = 0; k < order.size(); ++k)
      if (k == 0 || d.positions[static_cast<std::size_t>(order[k])] != d.positions[static_cast<std::size_t>(order[k - 1])])
        ++distinct_positions;
    const bool few_positions = distinct_positions < 3;

    // Hypotheses judged without unwrapping (sparse or few positions): the wrapped residual
    // |wrap(arg g - p theta_hyp)| over up to 512 tokens and every band, its median.
    std::vector<int> sample;
    for (int k = 0; k < d.tokens; k += std::max(1, d.tokens / 512)) sample.push_back(k);
    auto wrapped_residual = [&](const std::vector<double>& hyp) {
      std::vector<double> r;
      r.reserve(sample.size() * static_cast<std::size_t>(ub));
      for (int t : sample) {
        const double p = static_cast<double>(d.positions[static_cast<std::size_t>(t)]);
        for (int i = 0; i < ub && i < static_cast<int>(hyp.size()); ++i)
          if (at(t, i).ok) r.push_back(std::fabs(wrap(std::arg(at(t, i).g) - p * hyp[static_cast<std::size_t>(i)])));
      }
      return r.empty() ? std::numeric_limits<double>::infinity() : median(r);
    };
    // Scan bases 10^2..10^9 (the claimed scaling kept), refine the best, accept it when its residual
    // is small and no base more than 1% away comes within 3x of it.
    auto scan_base = [&]() -> bool {
      if (ub < 4 || sample.empty()) return false;
      auto thetas_for = [&](double b) {
        rope_config hc = used_cfg;
        hc.base = b;
        try {
          return compute_frequencies<double>(hc, seq_len).inv_freq;
        } catch (const std::exception&) {
          return std::vector<double>{};
        }
      };
      std::vector<std::pair<double, double>> grid;  // (base, residual)
      for (int k = 0; k <= 2100; ++k) {
        const double b = std::pow(10.0, 2.0 + 7.0 * k / 2100.0);
        grid.emplace_back(b, wrapped_residual(thetas_for(b)));
      }
      auto best = std::min_element(grid.begin(), grid.end(), [](auto& l, auto& r) { return l.second < r.second; });
      double b0 = best->first, r0 = best->second;
      for (double step = 1e-3; step >= 1e-7; step /= 10)  // local refinement in log(base)
        for (bool moved = true; moved;) {
          moved = false;
          for (double f : {1 + step, 1 / (1 + step)}) {
            const double rr = wrapped_residual(thetas_for(b0 * f));
            if (rr < r0) b0 *= f, r0 = rr, moved = true;
          }
        }
      double rival = std::numeric_limits<double>::infinity();
      for (const auto& [b, rr] : grid)
        if (std::fabs(std::log(b / b0)) > 0.01) rival = std::min(rival, rr);
      if (!(r0 < 0.05 && rival > 3 * r0 + 0.02)) return false;
      double shown = b0;
      const double mag = std::pow(10.0, std::floor(std::log10(b0)) - 2);
      if (wrapped_residual(thetas_for(std::round(b0 / mag) * mag)) <= r0 + 0.01) shown = std::round(b0 / mag) * mag;
      if (std::fabs(shown / claimed.base - 1) < 1e-6) return false;
      if (claimed.scaling == scaling_kind::dynamic_ntk && b0 > claimed.base * (1 + 1e-4)) {
        const double dd_ = static_cast<double>(P.rd), s_ = claimed.factor;
        const double L = static_cast<double>(claimed.max_position_embeddings);
        add(v, "dynamic_ntk_not_reset",
            fmt("dynamic NTK was not reset: scanning bases against the wrapped angles finds base %.6g (median "
                "residual %.2g rad, no base 1%% away within %.2g), the dynamic base of a sequence of ~%.0f tokens, "
                "but this sequence is %lld tokens long",
                b0, r0, rival, L * (std::pow(b0 / claimed.base, (dd_ - 2) / dd_) + s_ - 1) / s_,
                static_cast<long long>(seq_len)),
            0.85);
        return true;
      }
      add(v, "base_wrong",
          fmt("base is %.10g not %.10g: scanning bases 1e2..1e9 against the wrapped angles of %zu tokens x %d "
              "bands, base %.6g leaves a median residual of %.2g rad and no base 1%% or more away comes within "
              "%.2g rad",
              shown, claimed.base, sample.size(), ub, b0, r0, rival),
          0.85);
      return true;
    };
    // Discrete hypotheses against the wrapped angles (no unwrapping needed): theta over head_dim,
    // inv_freq on the bf16/fp16 grid, scaling missing / of another type / with another factor.
    // Accepted when the best leaves < 0.05 rad and the claim leaves 3x that plus 0.02 rad.
    auto scan_hypotheses = [&]() -> bool {
      if (sample.empty() || ub < 2) return false;
      struct hyp {
        std::string cls, what;
        std::vector<double> th;
      };
      std::vector<hyp> hs;
      auto frequencies_of = [&](rope_config hc) -> std::vector<double> {
        try {
          validate(hc);
          auto t = compute_frequencies<double>(hc, seq_len).inv_freq;
          t.resize(static_cast<std::size_t>(ub));
          return t;
        } catch (const std::exception&) {
          return {};
        }
      };
      if (claimed.rotary_dim < d.head_dim && P.rd == claimed.rotary_dim) {
        rope_config hc = used_cfg;
        hc.rotary_dim = d.head_dim;
        hs.push_back({"rotary_dim_wrong",
                      fmt("frequencies follow base^(-2i/%d) (head_dim) instead of base^(-2i/%d) (rotary_dim)",
                          d.head_dim, claimed.rotary_dim),
                      frequencies_of(hc)});
      }
      for (int digits : {8, 11}) {
        std::vector<double> g(th.size());
        for (std::size_t i = 0; i < th.size(); ++i) g[i] = round_to_digits(round_to_digits(th[i], 24), digits);
        hs.push_back({"inv_freq_low_precision", fmt("inv_freq is held in %s", grid_name(digits)), g});
      }
      if (claimed.scaling != scaling_kind::none) {
        rope_config hc = used_cfg;
        hc.scaling = scaling_kind::none;
        hs.push_back({"scaling_wrong", fmt("no scaling is applied although the claim has %s scaling with factor %g",
                                           std::string(to_string(claimed.scaling)).c_str(), claimed.factor),
                      frequencies_of(hc)});
        for (double f : {1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0, 20.0, 32.0, 40.0, 64.0}) {
          if (f == claimed.factor) continue;
          hc = used_cfg;
          hc.factor = f;
          hs.push_back({"scaling_wrong", fmt("%s scaling with factor %g, not the claimed %g",
                                             std::string(to_string(claimed.scaling)).c_str(), f, claimed.factor),
                        frequencies_of(hc)});
        }
      }
      const double r_claim = wrapped_residual(th);
      const hyp* best = nullptr;
      double r_best = std::numeric_limits<double>::infinity();
      for (const auto& h : hs)
        if (!h.th.empty())
          if (const double r = wrapped_residual(h.th); r < r_best) r_best = r, best = &h;
      if (!best || !(r_best < 0.05 && r_claim > 3 * r_best + 0.02)) return false;
      add(v, best->cls,
          fmt("%s: against the wrapped angles of %zu tokens x %d bands that leaves a median residual of %.2g rad, "
              "the claim %.2g rad",
              best->what.c_str(), sample.size(), ub, r_best, r_claim),
          0.85);
      return true;
    };

    std::vector<double> fit(static_cast<std::size_t>(ub)), rel(static_cast<std::size_t>(ub)), noise(static_cast<std::size_t>(ub));
    double max_rel_f = 0, max_line_rms = 0;
    const double p_span = std::max(1.0, static_cast<double>(pmaxv - pmin));
    int max_rel_band = 0;
    for (int i = 0; i < ub; ++i) {
      std::vector<std::pair<double, double>> pts;
      for (int t : order)
        if (at(t, i).ok) pts.emplace_back(static_cast<double>(d.positions[static_cast<std::size_t>(t)]), std::arg(at(t, i).g));
      const line L = fit_band(pts, th[static_cast<std::size_t>(i)]);
      fit[static_cast<std::size_t>(i)] = L.slope;
      rel[static_cast<std::size_t>(i)] = L.slope / th[static_cast<std::size_t>(i)] - 1;
      max_line_rms = std::max(max_line_rms, L.rms);
      // Relative uncertainty of the fitted slope: the angle noise (the line's rms residual: the
      // outputs' own rounding, large in bf16) over the angle range the band covers.
      noise[static_cast<std::size_t>(i)] = 3 * L.rms / (p_span * th[static_cast<std::size_t>(i)]);
      if (std::fabs(rel[static_cast<std::size_t>(i)]) > max_rel_f) max_rel_f = std::fabs(rel[static_cast<std::size_t>(i)]), max_rel_band = i;
    }
    // Low-precision inv_freq: theta'_i = grid(fp32 theta_i).
    if (!few_positions && max_rel_f > 1e-5 && max_rel_f < 0.05)
      for (int digits : {8, 11}) {
        // A band is informative when its grid offset stands out of its fit noise; the class needs
        // 90% of the informative bands (at least 4, or all when fewer exist) to sit on the grid
        // and every band to agree within its noise.
        int match = 0, informative = 0, consistent = 0;
        double grid_max = 0;
        for (int i = 0; i < ub; ++i) {
          const auto b = static_cast<std::size_t>(i);
          const double t32 = round_to_digits(th[b], 24);
          const double rg = round_to_digits(t32, digits) / th[b] - 1;
          grid_max = std::max(grid_max, std::fabs(rg));
          const double slack = 2e-6 + 0.02 * std::fabs(rg) + noise[b];
          const bool on = std::fabs(rel[b] - rg) <= slack;
          if (on) ++consistent;
          if (std::fabs(rg) > 1e-5 && std::fabs(rg) > 2 * noise[b]) {
            ++informative;
            if (on) ++match;
          }
        }
        if (informative >= std::min(4, ub) && match * 10 >= informative * 9 && consistent * 10 >= ub * 9) {
          freq_class = true;
          add(v, "inv_freq_low_precision",
              fmt("inv_freq is held in %s: fitted frequencies equal %s(fp32 theta_i) in %d of %d bands whose grid "
                  "offset exceeds the fit's noise (%d of %d bands agree within it; relative frequency error up to "
                  "%.3g, band %d; at position %lld that is %.3g tokens)",
                  grid_name(digits), grid_name(digits), match, informative, consistent, ub, max_rel_f, max_rel_band,
                  static_cast<long long>(pmaxv), max_rel_f * static_cast<double>(pmaxv)),
              0.88);
          break;
        }
      }
    if (!freq_class && !few_positions && max_rel_f > 1e-3 && ub >= 2 && fit[0] > 0 && fit[1] > 0) {
      // Largest relative disagreement of a hypothesis with the fitted frequencies, over the bands
      // whose fit is precise enough to judge (slope noise < 5e-4: in bf16 dumps the slowest bands
      // turn too little to be fitted to 1e-3); needs a quarter of the bands (at least 2).
      auto mismatch = [&](const std::vector<double>& hyp) {
        double m = 0;
        int used = 0;
        for (int i = 0; i < ub && i < static_cast<int>(hyp.size()); ++i) {
          if (noise[static_cast<std::size_t>(i)] >= 5e-4) continue;
          ++used;
          m = std::max(m, std::fabs(fit[static_cast<std::size_t>(i)] / hyp[static_cast<std::size_t>(i)] - 1));
        }
        return used >= std::max(2, ub / 4) ? m : std::numeric_limits<double>::infinity();
      };
      // Theta over head_dim (partial rotary): the claimed base, exponent 2i/head_dim.
      double mis_hd = std::numeric_limits<double>::infinity();
      if (claimed.rotary_dim < d.head_dim && P.rd == claimed.rotary_dim) {
        rope_config hdc = claimed;
        hdc.rotary_dim = d.head_dim;
        mis_hd = mismatch(thetas(reference::rope_reference(hdc)));
      }
      const double ratio = fit[1] / fit[0];
      const double b_est = std::pow(ratio, -static_cast<double>(P.rd) / 2);
      double mis_b = std::numeric_limits<double>::infinity();
      double b_show = b_est;
      if (std::isfinite(b_est) && b_est > 1) {
        const double mag = std::pow(10.0, std::floor(std::log10(b_est)) - 2);
        if (std::fabs(std::round(b_est / mag) * mag / b_est - 1) < 1e-4) b_show = std::round(b_est / mag) * mag;
        rope_config bc = used_cfg;
        bc.base = b_show;
        mis_b = mismatch(thetas(reference::rope_reference(bc)));
      }
      // Scaling: missing, of another type, or with another factor (the claimed base kept).
      double mis_s = std::numeric_limits<double>::infinity();
      std::string scaling_found;
      {
        auto consider = [&](rope_config hc, const std::string& label) {
          try {
            validate(hc);
            const double m = mismatch(thetas(reference::rope_reference(hc, seq_len)));
            if (m < mis_s) mis_s = m, scaling_found = label;
          } catch (const std::exception&) {
            // a hypothesis the rules cannot evaluate (e.g. llama3 without an original length)
          }
        };
        if (claimed.scaling != scaling_kind::none) {
          rope_config none = used_cfg;
          none.scaling = scaling_kind::none;
          consider(none, "no scaling at all (plain base^(-2i/d))");
        }
        for (scaling_kind k : {scaling_kind::linear, scaling_kind::ntk, scaling_kind::yarn, scaling_kind::llama3}) {
          if (k == claimed.scaling) continue;
          rope_config hc = used_cfg;
          hc.scaling = k;
          if (hc.factor <= 1) continue;
          if (hc.original_max_position_embeddings <= 0)
            hc.original_max_position_embeddings = static_cast<std::int64_t>(
                std::llround(static_cast<double>(hc.max_position_embeddings) / hc.factor));
          consider(hc, fmt("%s scaling with factor %g", std::string(to_string(k)).c_str(), hc.factor));
        }
        if (claimed.scaling != scaling_kind::none)
          for (double f : {1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 16.0, 20.0, 32.0, 40.0, 64.0}) {
            if (f == claimed.factor) continue;
            rope_config hc = used_cfg;
            hc.factor = f;
            consider(hc, fmt("%s scaling with factor %g", std::string(to_string(claimed.scaling)).c_str(), f));
          }
      }
      if (mis_s < 1e-3 && mis_s < mis_b) {
        freq_class = true;
        add(v, "scaling_wrong",
            fmt("the frequencies follow %s, not the claimed %s scaling with factor %g: all %d bands agree to %.2g "
                "(the claimed schedule is off by up to %.3g relative, band %d)",
                scaling_found.c_str(), std::string(to_string(claimed.scaling)).c_str(), claimed.factor, ub, mis_s,
                max_rel_f, max_rel_band),
            0.96);
      } else if (mis_hd < 1e-3) {
        freq_class = true;
        add(v, "rotary_dim_wrong",
            fmt("frequencies follow base^(-2i/%d) (head_dim) instead of base^(-2i/%d) (rotary_dim): all %d bands agree "
                "to %.2g, the claimed schedule is off by up to %.3g relative (band %d)",
                d.head_dim, claimed.rotary_dim, ub, mis_hd, max_rel_f, max_rel_band),
            0.93);
      } else if (mis_b < 1e-3 && claimed.scaling == scaling_kind::dynamic_ntk && b_est > claimed.base * (1 + 1e-4)) {
        // Dynamic NTK raises the base with the sequence length and must fall back when a shorter
        // sequence follows; frequencies of a larger base than this sequence's are a stale update.
        freq_class = true;
        const double dd_ = static_cast<double>(P.rd);
        const double s_ = claimed.factor;
        const double L = static_cast<double>(claimed.max_position_embeddings);
        const double implied_len = L * (std::pow(b_est / claimed.base, (dd_ - 2) / dd_) + s_ - 1) / s_;
        const double expected_base = detail::ntk_base_in<double>(claimed, seq_len);
        add(v, "dynamic_ntk_not_reset",
            fmt("dynamic NTK was not reset: the frequencies follow base %.6g (fitted, all %d bands agree to %.2g), "
                "the dynamic base of a sequence of ~%.0f tokens, but this sequence is %lld tokens long and needs "
                "base %.6g (max_position_embeddings %lld, factor %g)",
                b_est, ub, mis_b, implied_len, static_cast<long long>(seq_len), expected_base,
                static_cast<long long>(claimed.max_position_embeddings), claimed.factor),
            0.95);
      } else if (mis_b < 1e-3) {
        freq_class = true;
        add(v, "base_wrong",
            fmt("base is %.10g not %.10g: fitted theta_1/theta_0 = %.6g gives base %.6g, and with it all %d bands "
                "agree to %.2g (the claimed base is off by up to %.3g relative in band %d)",
                b_show, claimed.base, ratio, b_est, ub, mis_b, max_rel_f, max_rel_band),
            0.95);
      } else if (!scan_hypotheses() && !scan_base()) {
        freq_class = true;
        add(v, "base_wrong",
            fmt("frequencies differ from the claimed schedule by up to %.3g relative (band %d); the best single base "
                "%.6g still leaves %.2g (line-fit residual %.2g rad)",
                max_rel_f, max_rel_band, b_est, mis_b, max_line_rms),
            0.4);
      } else {
        freq_class = true;
      }
    }
    if (!freq_class && few_positions) {
      if (!scan_hypotheses() && !scan_base())
        add(v, "unexplained",
            fmt("only %d distinct positions: too few to fit frequencies, and no single base explains the angles; "
                "dump positions 0..63 and some large ones for a diagnosis",
                distinct_positions),
            0.2);
      freq_class = true;
    }
    if (!freq_class && max_rel_f <= 1e-3) {
      const drift_stats s = drift_of(P.cells);
      const bool drift_like = s.max_k <= 64 && s.small_p_max < 1e-4;
      add(v, "angle_drift_fp32",
          fmt("angle error grows linearly with position: relative frequency error up to %.3g (%.3g u_f32, band %d); "
              "%.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), %.3g rad at positions < 64",
              max_rel_f, max_rel_f / kU32, max_rel_band, s.max_err, static_cast<long long>(s.at_pos), s.at_band,
              s.max_k, s.max_tokens, s.small_p_max),
          drift_like ? 0.7 : 0.3);
      freq_class = drift_like;
    }
  }

  // 2e. cos/sin error independent of position (small positions, where fp32 angles are exact).
  if (positions_explain && !position_class) {
    std::vector<double> e_small;
    double e_all = 0;
    std::int64_t e_all_pos = 0;
    int on_grid[2] = {0, 0}, grid_total = 0;
    for (int t = 0; t < d.tokens; ++t) {
      const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
      for (int i = 0; i < ub; ++i) {
        const cell& c = at(t, i);
        if (!c.ok) continue;
        const auto cs = R.cos_sin(p, i);
        const cplx ex{static_cast<double>(cs.cos.value()), static_cast<double>(cs.sin.value())};
        const double e = std::abs(c.g / (m_med * ex) - 1.0);
        if (std::llabs(p) < 64) e_small.push_back(e);
        if (e > e_all) e_all = e, e_all_pos = p;
        if (std::fabs(c.g.real()) > 1e-3 && std::fabs(c.g.imag()) > 1e-3) {
          ++grid_total;
          int k = 0;
          for (int digits : {8, 11}) {
            if (T.digits > digits + 4 && grid_distance(c.g.real(), digits) < 0.05 && grid_distance(c.g.imag(), digits) < 0.05)
              ++on_grid[k];
            ++k;
          }
        }
      }
    }
    const double es_max = e_small.empty() ? 0 : *std::max_element(e_small.begin(), e_small.end());
    const double es_med = e_small.empty() ? 0 : median(e_small);
    if (es_max > std::max(1e-4, 16 * uT)) {
      int g = -1;
      for (int k = 0; k < 2; ++k)
        if (grid_total > 0 && on_grid[k] * 10 >= grid_total * 7) {
          g = k;
          break;
        }
      if (g >= 0) {
        const int digits = g == 0 ? 8 : 11;
        add(v, "cos_sin_low_precision",
            fmt("cos/sin are stored in %s: %d of %d implied (cos, sin) pairs lie on the %s grid (within 5%% of an "
                "ulp); relative cos/sin error up to %.3g (2^-%d = %.3g) already at positions < 64, %.3g at position %lld",
                grid_name(digits), on_grid[g], grid_total, grid_name(digits), es_max, digits + 1,
                std::ldexp(1.0, -(digits + 1)), e_all, static_cast<long long>(e_all_pos)),
            0.85);
      } else {
        add(v, "fast_sincos",
            fmt("cos/sin are off by up to %.3g (median %.3g) already at positions < 64, where fp32 angles are good to "
                "1e-5, and not on a bf16/fp16 grid: a fixed absolute error like a fast-math sin/cos (largest %.3g, at "
                "position %lld)",
                es_max, es_med, e_all, static_cast<long long>(e_all_pos)),
            0.8);
      }
    } else if (v.findings.empty()) {
      const drift_stats s = drift_of(P.cells);
      add(v, "angle_drift_fp32",
          fmt("angle error grows with position: %.3g rad at position %lld band %d (%.3g u_f32 |p theta|, %.3g tokens), "
              "%.3g rad at positions < 64: angles formed in fp32%s",
              s.max_err, static_cast<long long>(s.at_pos), s.at_band, s.max_k, s.max_tokens, s.small_p_max,
              fp32_angles ? "" : ", beyond the exact-angle allowance"),
          s.max_k <= 64 ? 0.7 : 0.3);
    }
  }

  std::stable_sort(v.findings.begin(), v.findings.end(),
                   [](const finding& l, const finding& r) { return l.confidence > r.confidence; });
  return v;
}

}  // namespace ropecheck::audit
