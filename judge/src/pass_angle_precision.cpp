// judge/src/pass_angle_precision.cpp — angles formed in a 16-bit type (eager bf16 / fp16 RoPE:
// an engine doing RoPE entirely in the model dtype), on the chosen pairing.
//
// The model (F = bfloat16 or float16, fl_F its round to nearest even, subnormals included): the angle
// applied to band i at position p is
//   a = fl_F( fl_F(p) * fl_F(theta32_i) )
// with theta32_i the fp32 inv_freq, within k_freq(i) u_f32 of theta_i (error_model.hpp section 6,
// judge::k_freq). fl_F(p) and fl_F(fl32(p)) (an int64 converted through fp32 first) are both taken,
// and fl_F of both ends of theta32's interval: at most 2 x 2 candidate angles per cell, each exact
// (fl_F(p) fl_F(theta) has <= 22 significant bits: exact in double). That is what torch does for
// `position_ids.to(dtype) * inv_freq.to(dtype)` in bf16 (the product formed in fp32 and rounded once
// to bf16: pytorch c10/util/BFloat16-inl.h, operator* returns float(a) * float(b) as a BFloat16).
// A cell (token, band) fits when arg g is within delta of a candidate (mod 2 pi), with
//   delta = 2 max(fixed_T, fixed_F)   the cos/sin (3u) + rotation (2u) + store (u) allowance of the
//                                     dump dtype T or of F, relative to af (|x_a| + |x_b|) <= sqrt 2
//                                     af |z|: an angle error of up to 2 fixed hides in it (the floor
//                                     pass_drift uses)
// angle_low_precision is named for F when the candidates explain nearly all cells (99% of them, and
// of the cells the claimed exact angle leaves beyond fp32 drift, pass_drift.cpp), and
// the one-rounding inv_freq class does not explain as many (fewest assumptions first): inv_freq held
// in F, a = p fl_F(theta32_i) in fp32, within delta plus the fp32 angle allowance (allowance.hpp
// angle_term), is left to pass_frequencies (at positions that are powers of two both give the same
// angles). Positions held in F are settled by order: pass_positions runs first and names them.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "ropecheck/judge/classes.hpp"
#include "passes.hpp"

namespace ropecheck::judge::detail {

// Nearly all: the rigid fit of g over heads is noisier than delta for a pair whose inputs are small
// in every head; 1 cell in 100 may miss (a chance fit is <= 4 (2 delta) / (2 pi), < 7% for bf16).
bool nearly_all(int n, int of) { return static_cast<double>(n) >= 0.99 * static_cast<double>(of); }

bool past_half_token(double angle_error, double theta) { return std::fabs(angle_error) > 0.5 * theta; }

std::vector<double> angles16(std::int64_t p, double theta, double kf, int digits) {
  const double pd = static_cast<double>(p);
  const std::array<double, 2> pp{round_to_digits(pd, digits), round_to_digits(round_to_digits(pd, 24), digits)};
  const std::array<double, 2> tt{round_to_digits(theta * (1 - kf * kU32), digits),
                                 round_to_digits(theta * (1 + kf * kU32), digits)};
  std::vector<double> out;
  for (double x : pp)
    for (double t : tt)
      if (const double a = round_to_digits(x * t, digits); std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

angle16_fit fit_angle16(double phi, std::int64_t p, double theta, double kf, int digits, double delta) {
  angle16_fit f;
  for (double a : angles16(p, theta, kf, digits))
    if (const double r = std::fabs(wrap(phi - a)); r < f.residual) f.residual = r, f.angle = a;
  f.fits = f.residual <= delta;
  return f;
}

namespace {

struct format16 {
  int digits;
  const char* dtype;
};
constexpr std::array<format16, 2> kFormats{{{8, "bfloat16"}, {11, "float16"}}};

struct tally {
  int cells = 0, fit = 0, off = 0, off_fit = 0, inv_fit = 0;
  int tokens_all = 0, bands_all = 0;
  double worst_resid = 0;               // largest residual of a fitting cell (rad, <= delta)
  double worst_err = 0, worst_rel = 0;  // largest |a - p theta| explained (rad), and over u_F |p theta|
  std::int64_t worst_pos = 0;
  int worst_band = 0;
  std::int64_t half_token_pos = std::numeric_limits<std::int64_t>::max();
  int half_token_band = 0;
  double half_token_tokens = 0;
};

tally count(const context& c, const explanation& e, int digits, double delta) {
  const dump& d = c.d;
  const int ub = e.bands();
  const double uF = std::ldexp(1.0, -digits);
  const judge::allowance fp32(e.cfg, "float32", reference_kind::exact, false);
  tally s;
  std::vector<char> band_all(static_cast<std::size_t>(ub), 1);
  std::vector<double> kf(static_cast<std::size_t>(ub));  // fp32 inv_freq bound per band, u_f32
  for (int i = 0; i < ub; ++i) kf[static_cast<std::size_t>(i)] = judge::k_freq(e.cfg, i, true);
  for (int t = 0; t < d.tokens; ++t) {
    const std::int64_t p = d.positions[static_cast<std::size_t>(t)];
    const double pd = static_cast<double>(p);
    bool token_all = true;
    for (int i = 0; i < ub; ++i) {
      const cell& cl = e.at(t, i);
      if (!cl.ok) continue;
      const double th = e.th[static_cast<std::size_t>(i)];
      const double phi = std::arg(cl.g), exact = pd * th;
      ++s.cells;
      const bool off = std::fabs(e.R.angle_error(p, i, phi)) > fp32_drift_bound(c, std::fabs(exact));
      s.off += off ? 1 : 0;
      const angle16_fit fit = fit_angle16(phi, p, th, kf[static_cast<std::size_t>(i)], digits, delta);
      // The one-rounding rival, within delta plus fp32's own angle allowance.
      const double inv16 = pd * round_to_digits(round_to_digits(th, 24), digits);
      s.inv_fit += std::fabs(wrap(phi - inv16)) <= delta + fp32.angle_term(p, i, std::fabs(inv16)) ? 1 : 0;
      if (!fit.fits) {
        token_all = false;
        band_all[static_cast<std::size_t>(i)] = 0;
        continue;
      }
      ++s.fit;
      s.worst_resid = std::max(s.worst_resid, fit.residual);
      s.off_fit += off ? 1 : 0;
      const double err = std::fabs(fit.angle - exact);
      if (err > s.worst_err)
        s.worst_err = err, s.worst_pos = p, s.worst_band = i, s.worst_rel = exact != 0 ? err / (uF * std::fabs(exact)) : 0;
      if (past_half_token(err, th) && std::llabs(p) < std::llabs(s.half_token_pos))
        s.half_token_pos = p, s.half_token_band = i, s.half_token_tokens = err / th;
    }
    s.tokens_all += token_all ? 1 : 0;
  }
  s.bands_all = static_cast<int>(std::count(band_all.begin(), band_all.end(), 1));
  return s;
}

}  // namespace

bool pass_angle_precision(const context& c, const explanation& e) {
  const judge::allowance& AL = c.AL;
  for (const format16& F : kFormats) {
    const judge::allowance AF(e.cfg, F.dtype, reference_kind::exact, false);
    const double delta = 2 * std::max(AL.fixed(), AF.fixed());
    const tally s = count(c, e, F.digits, delta);
    if (s.off == 0 || !nearly_all(s.fit, s.cells) || !nearly_all(s.off_fit, s.off)) continue;
    // Fewest assumptions: one rounding (inv_freq in F) that explains as much is left to its pass.
    if (nearly_all(s.inv_fit, s.cells)) continue;
    const std::string half =
        s.half_token_pos == std::numeric_limits<std::int64_t>::max()
            ? std::string("no position is off by more than half a token")
            : fmt("the first position off by more than half a token is %lld (band %d, %.3g tokens)",
                  static_cast<long long>(s.half_token_pos), s.half_token_band, s.half_token_tokens);
    // In three parts: fmt's buffer holds 512 characters.
    std::string sentence =
        fmt("angles are formed in %s (position, inv_freq and their product each rounded to %s, as an engine doing "
            "RoPE entirely in the model dtype does): %d of %d (token, band) cells match %s(%s(p) %s(theta_i)) within "
            "the cos/sin and rotation rounding (residual up to %.3g of %.3g rad), %d of the %d cells the claimed "
            "angle misses by more than fp32 drift",
            F.dtype, F.dtype, s.fit, s.cells, F.dtype, F.dtype, F.dtype, s.worst_resid, delta, s.off_fit, s.off);
    sentence += fmt("; every band fits at %d of %d tokens, %d of %d bands at every token; the largest angle error it "
                    "explains is %.3g rad (%.3g u_%s |p theta|) at position %lld band %d; ",
                    s.tokens_all, c.d.tokens, s.bands_all, e.bands(), s.worst_err, s.worst_rel, F.dtype,
                    static_cast<long long>(s.worst_pos), s.worst_band);
    add(c.v, classes::angle_low_precision, sentence + half, 0.87);
    return true;
  }
  return false;
}

}  // namespace ropecheck::judge::detail
