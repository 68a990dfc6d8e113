// judge/src/score_dump.cpp — see ropecheck/judge/score_dump.hpp for the contract.
#include "ropecheck/judge/score_dump.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/scores.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::judge {
namespace {

constexpr int kRowTokens = 256;  // query tokens judged at most (spread)

// The statistical half of the verdict (score_dump.hpp, detail::kNoiseRms): the root mean square over every score of its error beyond
// the angle share, in units of its rounding noise, at most this. A score sums D products: its worst case (every
// rounding at its bound, every sign aligned) is ~D / sqrt(D) times its typical error, and a 16-bit dtype's worst
// case admits a key one position off (tests/judge/score_dump_test.cpp: 0.41 of it). Rounding errors are modelled as
// independent, mean zero, |e| <= u, so of variance <= u^2 / 3 (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019:
// probabilistic rounding error analysis); an RMS over thousands of scores sits near 1 of that scale or below (a
// correct fp32 or bf16 kernel: 0.02..0.3), and 3 leaves the model's independence a factor of 3 to be wrong by.
using detail::kNoiseRms;

// One row: query head h of query token a; its kept keys and their centred read scores.
struct row {
  int h = 0, a = 0;
  std::vector<int> keys;
  std::vector<double> read;  // centred
  double allow = 0;          // twice the row's largest score allowance (the score and the mean)
  double angle = 0;          // twice the row's largest angle share of it (systematic: fp32 angles at m and at n)
  double sigma = 0;          // the row's largest rounding noise (standard deviation) of a score
};

// How a hypothesis moves the keys' positions: n -> key_position(n).
using key_map = std::function<std::int64_t(std::int64_t)>;

std::vector<double> centred(std::vector<double> v) {
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double& x : v) x -= mean;
  return v;
}

struct judged {
  double worst = 0;
  std::int64_t m = 0, n = 0;
  int head = 0;
  double rms = 0;        // the root mean square of the errors beyond their angle share, in units of their noise
  double scale_fit = 1;  // sum read.pred / sum pred^2 over every kept score
  [[nodiscard]] bool within() const { return worst <= 1 && detail::noise_within(rms); }
};

class predictor {
 public:
  predictor(const score_dump& d, double scale) : d_(d), scale_(scale) {}

  // Each row's centred predicted scores under `c` (rotate: false for no rotation), keys at kmap(n).
  judged compare(const std::vector<row>& rows, const rope_config& c, const key_map& kmap, bool rotate = true,
                 double factor = 1) const {
    const reference::rope_reference ref(c);
    const double af = rotate ? static_cast<double>(ref.attention_factor().value()) : 1.0;
    const auto D = static_cast<std::size_t>(d_.head_dim);
    std::vector<double> qr(static_cast<std::size_t>(d_.q_tokens * d_.q_heads) * D), kr(static_cast<std::size_t>(d_.k_tokens * d_.k_heads) * D);
    std::vector<char> q_done(static_cast<std::size_t>(d_.q_tokens * d_.q_heads)), k_done(static_cast<std::size_t>(d_.k_tokens * d_.k_heads));
    std::vector<reference::dd> tmp(D);
    const auto rot = [&](std::int64_t p, const double* x, double* out) {
      if (!rotate) return std::copy(x, x + D, out), void();
      ref.rotate(p, std::span<const double>(x, D), tmp);
      for (std::size_t j = 0; j < D; ++j) out[j] = static_cast<double>(tmp[j].value());
    };
    judged J;
    long double rp = 0, pp = 0, sq = 0;
    std::int64_t count = 0;
    for (const row& r : rows) {
      const int g = key_head_of(r.h, d_.q_heads, d_.k_heads);
      const auto qi = static_cast<std::size_t>(r.a * d_.q_heads + r.h);
      if (!q_done[qi]) rot(d_.q_positions[static_cast<std::size_t>(r.a)], d_.q.data() + qi * D, qr.data() + qi * D), q_done[qi] = 1;
      std::vector<double> pred;
      for (const int b : r.keys) {
        const auto ki = static_cast<std::size_t>(b * d_.k_heads + g);
        if (!k_done[ki]) rot(kmap(d_.k_positions[static_cast<std::size_t>(b)]), d_.k.data() + ki * D, kr.data() + ki * D), k_done[ki] = 1;
        long double s = 0;
        for (std::size_t j = 0; j < D; ++j) s += static_cast<long double>(qr[qi * D + j]) * kr[ki * D + j];
        pred.push_back(factor * scale_ * af * af * static_cast<double>(s));
      }
      pred = centred(std::move(pred));
      for (std::size_t i = 0; i < pred.size(); ++i) {
        rp += static_cast<long double>(r.read[i]) * pred[i];
        pp += static_cast<long double>(pred[i]) * pred[i];
        const double beyond = std::max(0.0, std::fabs(r.read[i] - pred[i]) - r.angle) / r.sigma;
        sq += static_cast<long double>(beyond) * beyond, ++count;
        const double e = std::fabs(r.read[i] - pred[i]) / r.allow;
        if (!(e <= J.worst)) {
          J.worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
          J.m = d_.q_positions[static_cast<std::size_t>(r.a)], J.n = d_.k_positions[static_cast<std::size_t>(r.keys[i])], J.head = r.h;
        }
      }
    }
    J.scale_fit = pp > 0 ? static_cast<double>(rp / pp) : 1.0;
    J.rms = count > 0 ? static_cast<double>(std::sqrt(sq / static_cast<long double>(count))) : 0.0;
    if (std::isnan(J.rms)) J.rms = std::numeric_limits<double>::infinity();
    return J;
  }

 private:
  const score_dump& d_;
  double scale_;
};

double round_to(double v, int digits) {
  const double s = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * s) / s;
}

}  // namespace

score_dump_verdict audit_scores(const score_dump& d, const rope_config& claimed, const audit_options& opt) {
  const auto D = static_cast<std::size_t>(d.head_dim);
  if (d.q_heads <= 0 || d.k_heads <= 0 || d.q_heads % d.k_heads != 0 || d.head_dim != claimed.head_dim || d.q_tokens <= 0 ||
      d.k_tokens <= 0 || d.q.size() != static_cast<std::size_t>(d.q_tokens * d.q_heads) * D ||
      d.k.size() != static_cast<std::size_t>(d.k_tokens * d.k_heads) * D ||
      d.values.size() != static_cast<std::size_t>(d.q_heads) * static_cast<std::size_t>(d.q_tokens) * static_cast<std::size_t>(d.k_tokens) ||
      d.q_positions.size() != static_cast<std::size_t>(d.q_tokens) || d.k_positions.size() != static_cast<std::size_t>(d.k_tokens))
    throw std::invalid_argument(fmt("audit --scores: sizes disagree (q %d x %d x %d, k %d x %d, scores %zu for %d heads x %d "
                                    "queries x %d keys, head_dim %d against the claim's %d)",
                                    d.q_tokens, d.q_heads, d.head_dim, d.k_tokens, d.k_heads, d.values.size(), d.q_heads,
                                    d.q_tokens, d.k_tokens, d.head_dim, claimed.head_dim));
  for (const double x : d.q)
    if (!std::isfinite(x)) throw std::invalid_argument("audit --scores: q holds NaN or infinity");
  for (const double x : d.k)
    if (!std::isfinite(x)) throw std::invalid_argument("audit --scores: k holds NaN or infinity");
  const double scale = d.softmax_scale > 0 ? d.softmax_scale : 1 / std::sqrt(static_cast<double>(claimed.head_dim));
  const dtype_info T = dtype_of(d.dtype);
  const double uT = T.u(), u32 = 0x1p-24;
  const reference::rope_reference ref(claimed);
  const double af = static_cast<double>(ref.attention_factor().value());
  const judge::allowance AL(claimed, d.dtype, reference_kind::exact, opt.strict);
  const rope_geometry geo = rope_geometry::of(claimed);
  score_dump_verdict v;
  v.allowance_reason = fmt("each score's allowance is both sides' (%s: angles at m and at n, cos/sin, rotation, store; "
                           "ropecheck/judge/scores.hpp) plus its read-out (%s), twice after centring each row; and the "
                           "errors beyond the angles' share, in units of their rounding noise, at most 3 RMS",
                           d.dtype.c_str(), d.what == score_dump::kind::weights
                                                ? "log of a weight stored in the dtype: u + 3 u_f32"
                                                : "a logit stored in the dtype: u |s|");
  // The rows: kept keys (finite logits above -1e30, weights above 1e-30), the read scores centred.
  std::vector<row> rows;
  const int step = std::max(1, d.q_tokens / kRowTokens);
  std::vector<double> aq(static_cast<std::size_t>(claimed.bands())), ak(aq.size()), gq(aq.size()), gk(aq.size());
  // Each band's whole allowance at p (out), and its angle share (angle).
  const auto band_allowances = [&](std::int64_t p, std::vector<double>& out, std::vector<double>& angle) {
    for (int i = 0; i < claimed.bands(); ++i) {
      const double a = std::fabs(static_cast<double>(ref.angle(p, i).value()));
      out[static_cast<std::size_t>(i)] = AL.pair(p, i, a);
      angle[static_cast<std::size_t>(i)] = AL.angle_term(p, i, a);
    }
  };
  // The rounding noise of one side's element: the fixed part's roundings (six of u_T for a 16-bit T: cos/sin three,
  // rotation two, the store one; error_model.hpp sections 1-2), each of variance u_T^2 / 3.
  const double element_sigma = std::sqrt(6.0 / 3.0) * uT;
  bool non_finite = false;
  for (int h = 0; h < d.q_heads; ++h)
    for (int a = 0; a < d.q_tokens; a += step) {
      row r{h, a, {}, {}, 0};
      const std::int64_t m = d.q_positions[static_cast<std::size_t>(a)];
      band_allowances(m, aq, gq);
      const int g = key_head_of(h, d.q_heads, d.k_heads);
      const double* q = d.q.data() + static_cast<std::size_t>(a * d.q_heads + h) * D;
      for (int b = 0; b < d.k_tokens; ++b) {
        const double x = d.values[(static_cast<std::size_t>(h) * static_cast<std::size_t>(d.q_tokens) + static_cast<std::size_t>(a)) *
                                      static_cast<std::size_t>(d.k_tokens) + static_cast<std::size_t>(b)];
        if (std::isnan(x) || (d.what == score_dump::kind::weights && std::isinf(x))) non_finite = true;
        const bool kept = d.what == score_dump::kind::weights ? (x > 1e-30 && std::isfinite(x)) : (std::isfinite(x) && x > -1e30);
        if (!kept) continue;
        const double s = d.what == score_dump::kind::weights ? std::log(x) : x;
        r.keys.push_back(b);
        r.read.push_back(s);
        band_allowances(d.k_positions[static_cast<std::size_t>(b)], ak, gk);
        const double* k = d.k.data() + static_cast<std::size_t>(b * d.k_heads + g) * D;
        long double bound = 0, angle = 0, var = 0;
        for (int i = 0; i < claimed.bands(); ++i) {
          const auto [ia, ib] = geo.pair_of(i);
          const auto I = static_cast<std::size_t>(i);
          const long double w = 2.0L * (std::fabs(q[ia]) + std::fabs(q[ib])) * (std::fabs(k[ia]) + std::fabs(k[ib]));
          bound += w * (aq[I] + ak[I] + aq[I] * ak[I]);
          angle += w * (gq[I] + gk[I]);
          var += w * w / 2 * 2 * element_sigma * element_sigma;  // two coordinates of the pair, each of two sides
        }
        const double readout = d.what == score_dump::kind::weights ? uT + 3 * u32 : uT * std::fabs(s);
        const double f = scale * af * af;
        r.allow = std::max(r.allow, f * static_cast<double>(bound) + readout);
        r.angle = std::max(r.angle, f * static_cast<double>(angle));
        r.sigma = std::max(r.sigma, std::sqrt(f * f * static_cast<double>(var) + readout * readout / 3));
      }
      if (r.keys.size() < 2) continue;  // nothing to compare within the row
      r.allow *= 2, r.angle *= 2;  // the score and its row's mean
      r.read = centred(std::move(r.read));
      v.scores += static_cast<std::int64_t>(r.keys.size());
      rows.push_back(std::move(r));
    }
  if (non_finite) {
    v.findings.push_back({classes::non_finite, "NaN (or an infinite weight) in the scores", 1.0});
    return v;
  }
  if (rows.empty()) throw std::invalid_argument("audit --scores: no row keeps two keys or more (every score masked?)");
  v.rows = static_cast<std::int64_t>(rows.size());
  const predictor P(d, scale);
  const key_map same = [](std::int64_t n) { return n; };
  const judged J = P.compare(rows, claimed, same);
  v.worst_ratio = J.worst, v.worst_m = J.m, v.worst_n = J.n, v.worst_head = J.head;
  v.noise_rms = J.rms;
  v.pass = J.within();
  if (v.pass) return v;
  // The diagnosis: other conventions' scores, the first that explains every score named.
  const auto explains = [&](const judged& j) { return j.within(); };
  for (const std::int64_t shift : {-1, 1, -2, 2}) {
    const judged K = P.compare(rows, claimed, [shift](std::int64_t n) { return n + shift; });
    if (explains(K)) {
      v.findings.push_back({classes::key_positions_wrong,
                            fmt("the keys act at their positions %+lld: every score of %lld is within its allowance of the "
                                "claim's scores with keys at n %+lld (worst %.3g of it), against %.3g at n",
                                static_cast<long long>(shift), static_cast<long long>(v.scores), static_cast<long long>(shift),
                                K.worst, J.worst),
                            0.95});
      return v;
    }
  }
  if (const judged Z = P.compare(rows, claimed, [](std::int64_t) { return std::int64_t{0}; }); explains(Z)) {
    v.findings.push_back({classes::key_positions_wrong,
                          fmt("every key acts at position 0: the scores are the claim's with keys rotated at 0 (worst %.3g of "
                              "the allowance), against %.3g at their positions", Z.worst, J.worst),
                          0.95});
    return v;
  }
  if (const judged N = P.compare(rows, claimed, same, false); explains(N)) {
    v.findings.push_back({classes::key_positions_wrong,
                          fmt("the scores do not depend on position: they are q . k unrotated (worst %.3g of the allowance), "
                              "as if every score acted at m - n = 0 (no RoPE applied)", N.worst),
                          0.95});
    return v;
  }
  rope_config other = claimed;
  other.pair_layout = claimed.pair_layout == layout::half_split ? layout::interleaved : layout::half_split;
  if (const judged L = P.compare(rows, other, same); explains(L)) {
    v.findings.push_back({classes::layout_swapped,
                          fmt("the scores are the %s layout's (worst %.3g of the allowance), not the claimed %s's",
                              std::string(to_string(other.pair_layout)).c_str(), L.worst,
                              std::string(to_string(claimed.pair_layout)).c_str()),
                          0.95});
    return v;
  }
  if (std::fabs(J.scale_fit - 1) > 1e-3) {
    if (const judged S = P.compare(rows, claimed, same, true, J.scale_fit); explains(S)) {
      v.findings.push_back({classes::score_scale_wrong,
                            fmt("the scores are %.4g times the claim's (softmax scale %.4g x attention factor^2 %.4g): with "
                                "that factor every score is within its allowance (worst %.3g of it)",
                                J.scale_fit, scale, af * af, S.worst),
                            0.9});
      return v;
    }
  }
  // Another base: a log-spaced scan, refined, read as its roundest value the scores cannot tell from it.
  std::vector<row> few(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(rows.size(), 32)));
  double best = claimed.base, best_err = std::numeric_limits<double>::infinity();
  const auto try_base = [&](double b) {
    if (!(b > 1)) return;
    rope_config c = claimed;
    c.base = b;
    const double e = P.compare(few, c, same).rms;
    if (e < best_err) best_err = e, best = b;
  };
  for (int i = 0; i <= 60; ++i) try_base(std::pow(10.0, 2 + i / 10.0));
  for (double span = 0.1; span > 1e-5; span /= 4) {
    const double centre = best;
    for (int i = -4; i <= 4; ++i) try_base(centre * std::pow(10.0, span * i / 4));
  }
  for (const double cand : {round_to(best, 1), round_to(best, 2), round_to(best, 3), best}) {
    if (std::fabs(cand - claimed.base) <= 1e-9 * claimed.base) continue;
    rope_config c = claimed;
    c.base = cand;
    if (const judged B = P.compare(rows, c, same); explains(B)) {
      v.findings.push_back({classes::base_wrong,
                            fmt("base is %g not %g: every score of %lld is within its allowance of base %g's (worst %.3g of it; "
                                "the scan's best fit %.6g)",
                                cand, claimed.base, static_cast<long long>(v.scores), cand, B.worst, best),
                            0.95});
      return v;
    }
  }
  v.findings.push_back({classes::unexplained,
                        fmt("the scores are not the claim's (worst %.3g of the allowance, at m %lld, n %lld, query head %d; errors "
                            "%.3g times their rounding noise, RMS) and no tested convention explains them: keys at n +- 1, +- 2 or 0, no rotation, the other layout, "
                            "one scale factor (%.4g fitted), another base (%.6g fitted)",
                            J.worst, static_cast<long long>(J.m), static_cast<long long>(J.n), J.head, J.rms, J.scale_fit, best),
                        0.3});
  return v;
}

}  // namespace ropecheck::judge
