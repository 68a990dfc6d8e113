// judge/src/readout.cpp — see ropecheck/judge/readout.hpp for the contract.
#include "ropecheck/judge/readout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/probe.hpp"
#include "ropecheck/judge/scores.hpp"
#include "ropecheck/judge/sentence.hpp"
#include "ropecheck/reference/reference.hpp"
#include "ropecheck/rope.hpp"

namespace ropecheck::judge {
namespace {

// The scores the diagnosis reads (m + n at most this): fp32 forms their angles to a few 1e-2 rad in band 0.
constexpr std::int64_t kFinePositions = std::int64_t{1} << 17;

// cos and sin of beta = phase pi / 2: exact.
constexpr double cos_q[4] = {1, 0, -1, 0}, sin_q[4] = {0, 1, 0, -1};

int key_phase_of(int g, int rep) {
  if (rep == 1) return (g / 2) % 4;  // heads 2p and 2p + 1 read key heads 2p and 2p + 1: one phase for both
  return rep % 2 == 0 ? g % 4 : 0;   // an odd group may split a head pair over two key heads: no phase to read
}

double attention_factor(const rope_config& c) {
  return static_cast<double>(reference::rope_reference(c).attention_factor().value());
}

void check_claim(const rope_config& c) {
  if (c.mrope != mrope_kind::none)
    throw std::invalid_argument("the attention form reads 1-D RoPE: an M-RoPE claim is judged through the x or qk forms");
}

// Where the scores of `p` are read from a failing kernel, the predicted scores of another convention: the
// largest |read - predicted| / its allowance (C times the read-out's and a side's terms at m + n).
struct reading {
  std::int64_t m, n;
  int head;  // query head
  int band;  // the band the head pair reads
  double s;  // the read score (log(w_j / w_0))
  std::size_t q_entry, k_entry;
};

double worst_against(const attention_probe& p, const std::vector<reading>& cells, const rope_config& other,
                     const judge::allowance& AL, double C) {
  const reference::rope_reference ref(other);
  const double af = static_cast<double>(ref.attention_factor().value());
  const auto D = static_cast<std::size_t>(p.head_dim);
  std::vector<reference::dd> rq(D), rk(D);
  double worst = 0;
  for (const reading& r : cells) {
    const int g = key_head_of(r.head, p.q_heads, p.k_heads);
    const double* q = p.q.data() + (r.q_entry * static_cast<std::size_t>(p.q_heads) + static_cast<std::size_t>(r.head)) * D;
    const double* k = p.k.data() + (r.k_entry * static_cast<std::size_t>(p.k_heads) + static_cast<std::size_t>(g)) * D;
    ref.rotate(r.m, std::span<const double>(q, D), rq);
    ref.rotate(r.n, std::span<const double>(k, D), rk);
    long double s = 0;
    for (std::size_t j = 0; j < D; ++j) s += rq[j].value() * rk[j].value();
    const double pred = p.softmax_scale * af * af * static_cast<double>(s);
    const double pa = static_cast<double>(r.m + r.n);
    double angle = 0;
    for (int b = 0; b < other.bands(); ++b)
      angle = std::max(angle, AL.angle_term(r.m + r.n, b, std::fabs(pa * static_cast<double>(ref.inv_freq(b).value()))));
    worst = std::max(worst, std::fabs(r.s - pred) / (C * 2 * (AL.fixed() + angle)));
  }
  return worst;
}

// Band b's frequency from the evidence (one head, the claim's pairs): the mean wrapped phase step between
// neighbouring keys of one query (|theta| < pi for the fast bands), refined over each query's longest span.
std::optional<double> fitted_frequency(const dump& d, const rope_config& sc, int b) {
  const auto [ia, ib] = rope_geometry::of(sc).pair_of(b);
  const auto H = static_cast<std::size_t>(d.head_dim);
  const auto phase = [&](std::size_t t) {
    const double xa = d.x[t * H + static_cast<std::size_t>(ia)], xb = d.x[t * H + static_cast<std::size_t>(ib)];
    const double ya = d.y[t * H + static_cast<std::size_t>(ia)], yb = d.y[t * H + static_cast<std::size_t>(ib)];
    return std::atan2(yb * xa - ya * xb, ya * xa + yb * xb);  // arg(y / x)
  };
  const auto wrap = [](double a) { return std::remainder(a, 2 * std::numbers::pi); };
  double sum = 0;
  std::size_t count = 0;
  for (std::size_t t = 0; t + 1 < d.positions.size(); ++t)
    if (d.positions[t] - d.positions[t + 1] == 1 && d.allowance_positions[t] + 1 == d.allowance_positions[t + 1])
      sum += wrap(phase(t) - phase(t + 1)), ++count;  // the same query, the next key: m - n one less
  if (count == 0) return std::nullopt;
  const double coarse = sum / static_cast<double>(count);
  double refined = 0, span = 0;
  for (std::size_t t = 0; t < d.positions.size();) {  // each query's keys: from its largest m - n to its smallest
    std::size_t e = t;
    while (e + 1 < d.positions.size() && d.positions[e] - d.positions[e + 1] == 1) ++e;
    const auto len = static_cast<double>(d.positions[t] - d.positions[e]);
    if (len > 0) {
      const double turn = phase(t) - phase(e);
      refined += turn + 2 * std::numbers::pi * std::round((coarse * len - turn) / (2 * std::numbers::pi)), span += len;
    }
    t = e + 1;
  }
  return span > 0 ? std::optional<double>(refined / span) : std::optional<double>(coarse);
}

// Base b's value rounded to `digits` significant digits.
double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * scale) / scale;
}

}  // namespace

double score_readout_allowance(const std::string& dtype, double C) {
  const dtype_info T = dtype_of(dtype);
  const double uT = T.u(), u32 = 0x1p-24;
  rope_config any;  // the fixed part does not depend on the convention
  any.head_dim = any.rotary_dim = 2;
  const double side = judge::allowance(any, dtype, reference_kind::exact, false).fixed();
  return side + 2 * std::sqrt(2.0) * uT + 2 * (uT + 3 * u32) / C;
}

std::vector<std::int64_t> two_per_octave(std::int64_t end) {
  std::vector<std::int64_t> out;
  for (int k = 1;; ++k) {
    const auto x = static_cast<std::int64_t>(std::floor(64.0 * std::exp2(k / 2.0)));
    if (x >= end) break;
    out.push_back(x);
  }
  return out;
}

std::vector<std::int64_t> attention_query_positions(const rope_config& c, std::int64_t max_position) {
  std::vector<std::int64_t> m{max_attention_keys - 1};
  for (const std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{4096}, std::int64_t{65504},
                                  std::int64_t{1} << 24})
    for (const std::int64_t d : {-1, 0, 1, 3}) m.push_back(edge + d);
  const std::int64_t end = std::max<std::int64_t>(2 * std::max<std::int64_t>(c.max_position_embeddings, 1), 1 << 17);
  for (const std::int64_t x : two_per_octave(end)) m.push_back(x);
  m.push_back(end);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  if (max_position > 0) std::erase_if(m, [&](std::int64_t x) { return x > max_position; });
  return m;
}

attention_probe make_attention_probe(const rope_config& c, int q_heads, int k_heads, int value_dim, double softmax_scale,
                                     std::int64_t max_position) {
  check_claim(c);
  if (q_heads < 2 || q_heads % 2 != 0)
    throw std::invalid_argument(fmt("--heads %d: the attention form needs an even number of query heads (heads 2p and "
                                    "2p + 1 read one band in quadrature)", q_heads));
  if (k_heads < 1 || q_heads % k_heads != 0)
    throw std::invalid_argument(fmt("--kv-heads %d must divide --heads %d (query head h reads key head h / (heads / "
                                    "kv_heads))", k_heads, q_heads));
  if (value_dim < min_attention_keys)
    throw std::invalid_argument(fmt("--value-dim %d: a call carries one key per value coordinate (v one-hot), and the "
                                    "judge needs %d keys a call or more (the zero key and m - n = 0..%d: with fewer, a "
                                    "wrong base or layout reads as right at the few distances left); give value_dim = "
                                    "head_dim, or at least %d", value_dim, min_attention_keys, min_attention_keys - 2,
                                    min_attention_keys));
  if (max_position > 0 && max_position < max_attention_keys - 1)
    throw std::invalid_argument(fmt("--max-position %lld is below the attention form's first query position %d",
                                    static_cast<long long>(max_position), max_attention_keys - 1));
  attention_probe p;
  p.q_heads = q_heads, p.k_heads = k_heads, p.head_dim = c.head_dim, p.value_dim = value_dim;
  p.softmax_scale = softmax_scale > 0 ? softmax_scale : 1 / std::sqrt(static_cast<double>(c.head_dim));
  // A, B powers of two with C = scale af^2 A B in [1/2, 1]: weights of |s| <= sqrt(2) C stay far from
  // underflow in every dtype (at least e^-2.9 / 64 of a row), and the inputs are exact in every dtype.
  const double af = attention_factor(c);
  const double ab = 1 / (p.softmax_scale * af * af);
  const double e = std::floor(std::log2(ab) / 2);
  p.q_amplitude = std::ldexp(1.0, static_cast<int>(e));
  p.k_amplitude = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(ab) - e)));
  const int rep = q_heads / k_heads, K = std::min(value_dim, max_attention_keys);
  for (int g = 0; g < k_heads; ++g) p.key_phase.push_back(key_phase_of(g, rep));
  const rope_geometry geo = rope_geometry::of(c);
  const auto D = static_cast<std::size_t>(c.head_dim), DV = static_cast<std::size_t>(value_dim);
  p.calls.push_back(0);
  p.key_calls.push_back(0);
  for (const std::int64_t m : attention_query_positions(c, max_position)) {
    const std::int64_t first = std::max<std::int64_t>(0, m - K + 1);
    for (int b0 = 0; b0 < c.bands(); b0 += q_heads / 2) {  // the call's queries, all at m
      p.q_positions.push_back(m);
      p.first_band.push_back(b0);
      const std::size_t qo = p.q.size();
      p.q.resize(qo + static_cast<std::size_t>(q_heads) * D);
      for (int h = 0; 2 * h + 1 < q_heads && b0 + h < c.bands(); ++h) {
        const auto [ia, ib] = geo.pair_of(b0 + h);
        p.q[qo + static_cast<std::size_t>(2 * h) * D + static_cast<std::size_t>(ia)] = p.q_amplitude;
        p.q[qo + static_cast<std::size_t>(2 * h + 1) * D + static_cast<std::size_t>(ib)] = p.q_amplitude;
      }
    }
    for (std::int64_t n = first; n <= m; ++n) {  // the call's keys
        p.k_positions.push_back(n);
        const std::size_t ko = p.k.size(), vo = p.v.size();
        p.k.resize(ko + static_cast<std::size_t>(k_heads) * D);
        p.v.resize(vo + static_cast<std::size_t>(k_heads) * DV);
        for (int g = 0; g < k_heads; ++g) {
          p.v[vo + static_cast<std::size_t>(g) * DV + static_cast<std::size_t>(n - first)] = 1;
          if (n == first) continue;  // the zero key
          const int ph = p.key_phase[static_cast<std::size_t>(g)];
          for (int b = 0; b < c.bands(); ++b) {  // k's pair = B e^{-i beta}
            const auto [ia, ib] = geo.pair_of(b);
            p.k[ko + static_cast<std::size_t>(g) * D + static_cast<std::size_t>(ia)] = p.k_amplitude * cos_q[ph];
            p.k[ko + static_cast<std::size_t>(g) * D + static_cast<std::size_t>(ib)] = -p.k_amplitude * sin_q[ph];
          }
        }
    }
    p.calls.push_back(static_cast<std::int64_t>(p.q_positions.size()));
    p.key_calls.push_back(static_cast<std::int64_t>(p.k_positions.size()));
  }
  return p;
}

std::int64_t check_softmax_weights(const attention_probe& p, const std::vector<double>& o) {
  const auto HQ = static_cast<std::size_t>(p.q_heads), DV = static_cast<std::size_t>(p.value_dim);
  std::int64_t non_finite = 0;
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1] - p.key_calls[static_cast<std::size_t>(c)]);
    for (auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]); e < static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c) + 1]); ++e)
      for (std::size_t h = 0; h < HQ; ++h) {
        const double* row = o.data() + (e * HQ + h) * DV;
        double sum = 0;
        bool finite = true;
        for (std::size_t j = 0; j < DV; ++j) {
          if (!std::isfinite(row[j])) {
            finite = false, ++non_finite;
            continue;
          }
          if (j >= nk && row[j] != 0)
            throw std::invalid_argument(fmt("attention.o: query entry %zu head %zu has %g at value coordinate %zu, past its "
                                            "call's %zu keys: the outputs do not come from v (v is one-hot per key, so o "
                                            "= softmax(s) v is zero there)", e, h, row[j], j, nk));
          if (j < nk && row[j] < 0)
            throw std::invalid_argument(fmt("attention.o: query entry %zu head %zu has the negative weight %g at key %zu: "
                                            "not softmax weights of the one-hot v", e, h, row[j], j));
          if (j < nk) sum += row[j];
        }
        if (finite && std::fabs(sum - 1) > 0.125)
          throw std::invalid_argument(fmt("attention.o: query entry %zu head %zu sums to %g over its call's %zu keys, not 1: "
                                          "the outputs do not come from v as softmax weights (o = softmax(s) v with v "
                                          "one-hot per key)", e, h, sum, nk));
      }
  }
  return non_finite;
}

attention_verdict audit_attention(const attention_probe& p, const std::vector<double>& o, const std::string& dtype,
                                  const rope_config& claimed, const audit_options& opt) {
  check_claim(claimed);
  const auto HQ = static_cast<std::size_t>(p.q_heads), DV = static_cast<std::size_t>(p.value_dim);
  const std::size_t NQ = p.q_positions.size();
  if (o.size() != NQ * HQ * DV || p.head_dim != claimed.head_dim)
    throw std::invalid_argument(fmt("audit_attention: %zu outputs for %zu queries x %zu heads x %zu values (head_dim %d, "
                                    "the claim's %d)", o.size(), NQ, HQ, DV, p.head_dim, claimed.head_dim));
  attention_verdict out;
  const double af = attention_factor(claimed);
  const double C = p.softmax_scale * af * af * p.q_amplitude * p.k_amplitude;
  // The rows: softmax weights of the call's keys (non-finite values are the kernel's failure, judged).
  const bool finite = check_softmax_weights(p, o) == 0;
  if (!finite) {
    out.findings.push_back({classes::non_finite, "NaN or infinity in the attention outputs: no score can be read", 1.0});
    return out;
  }
  // The evidence: one token per (m, key), the bands gathered from the calls at m.
  rope_config sc = claimed;
  sc.head_dim = claimed.rotary_dim;
  sc.outputs = output_order::in_place;  // the scores do not depend on where the outputs are written
  const rope_geometry geo = rope_geometry::of(sc);
  dump d;
  d.heads = 1, d.head_dim = sc.head_dim, d.dtype = dtype;
  std::vector<reading> cells;
  std::vector<double> ratios;
  std::int64_t seq_len = 0;
  for (int c = 0; c < p.calls_count(); ++c) {  // one m a call: its queries read every band against its keys
    const auto e0 = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]);
    const auto e1 = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c) + 1]);
    const std::int64_t m = p.q_positions[e0];
    seq_len = std::max(seq_len, m + 1);
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const std::size_t nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]) - k0;
    for (std::size_t j = 1; j < nk; ++j) {
      const std::int64_t n = p.k_positions[k0 + j];
      d.positions.push_back(m - n);
      d.allowance_positions.push_back(m + n);
      const std::size_t base = d.x.size();
      d.x.resize(base + static_cast<std::size_t>(d.head_dim));
      d.y.resize(base + static_cast<std::size_t>(d.head_dim));
      for (std::size_t e = e0; e < e1; ++e) {
        if (p.q_positions[e] != m) throw std::invalid_argument("audit_attention: a call's queries must share one position");
        const std::size_t ke = k0;
        for (int h = 0; 2 * h + 1 < p.q_heads && p.first_band[e] + h < claimed.bands(); ++h) {
          const int b = p.first_band[e] + h;
          const double* even = o.data() + (e * HQ + static_cast<std::size_t>(2 * h)) * DV;
          const double* odd = o.data() + (e * HQ + static_cast<std::size_t>(2 * h + 1)) * DV;
          const double se = std::log(even[j] / even[0]), so = std::log(odd[j] / odd[0]);
          const int ph = p.key_phase[static_cast<std::size_t>(key_head_of(2 * h, p.q_heads, p.k_heads))];
          const auto [ia, ib] = geo.pair_of(b);
          d.x[base + static_cast<std::size_t>(ia)] = C / af * cos_q[ph];
          d.x[base + static_cast<std::size_t>(ib)] = C / af * sin_q[ph];
          d.y[base + static_cast<std::size_t>(ia)] = se;
          d.y[base + static_cast<std::size_t>(ib)] = -so;
          ratios.push_back(std::hypot(se, so) / C);
          cells.push_back({m, n, 2 * h, b, se, e, ke + j});
          cells.push_back({m, n, 2 * h + 1, b, so, e, ke + j});
        }
      }
    }
  }
  d.tokens = static_cast<int>(d.positions.size());
  out.cells = static_cast<std::int64_t>(ratios.size());
  if (d.tokens == 0) throw std::invalid_argument("audit_attention: the probe has no key besides the zero keys");
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
  out.scale_ratio = ratios[ratios.size() / 2];
  audit_options o2 = opt;
  o2.extra_allowance = opt.extra_allowance + score_readout_allowance(dtype, C);
  if (o2.seq_len <= 0) o2.seq_len = seq_len;  // the frequencies of the queries' lengths, not of m - n
  o2.other_layers.clear();
  out.scores = audit(d, sc, o2);
  out.pass = out.scores.pass;
  // The diagnosis on the scores whose angles fp32 still forms finely (m + n <= 2^17: band 0's allowance a few
  // 1e-2 rad): past that the allowance admits radians, and the fits would average the noise it admits. When those
  // scores pass, the failure lies at large positions only: the whole evidence's findings stand.
  if (!out.pass) {
    dump fine;
    fine.heads = 1, fine.head_dim = d.head_dim, fine.dtype = d.dtype;
    const auto H = static_cast<std::size_t>(d.head_dim);
    for (std::size_t t = 0; t < d.positions.size(); ++t) {
      if (d.allowance_positions[t] > kFinePositions) continue;
      fine.positions.push_back(d.positions[t]);
      fine.allowance_positions.push_back(d.allowance_positions[t]);
      fine.x.insert(fine.x.end(), d.x.begin() + static_cast<std::ptrdiff_t>(t * H), d.x.begin() + static_cast<std::ptrdiff_t>((t + 1) * H));
      fine.y.insert(fine.y.end(), d.y.begin() + static_cast<std::ptrdiff_t>(t * H), d.y.begin() + static_cast<std::ptrdiff_t>((t + 1) * H));
    }
    fine.tokens = static_cast<int>(fine.positions.size());
    if (fine.tokens >= 64) {
      verdict v = audit(fine, sc, o2);
      if (!v.pass) out.scores.findings = std::move(v.findings);
    }
  }
  if (out.pass) {
    for (finding f : out.scores.findings) out.findings.push_back({f.bug_class, "at the score (m - n): " + f.sentence, f.confidence});
    return out;
  }
  // Another base, predicted score by score: the base bands 0 and 1 fit, read as its roundest value the scores
  // cannot tell from it (1, 2, 3 significant digits, then the fit itself). The fits of the passes ask every
  // band to agree to 1e-3, which 16-bit scores over m - n <= 62 cannot give in the slowest bands.
  std::vector<reading> some;  // a spread subset of the scores for the predictions (every one up to 20000)
  for (std::size_t i = 0; i < cells.size(); i += std::max<std::size_t>(1, cells.size() / 20000)) some.push_back(cells[i]);
  if (const auto th0 = fitted_frequency(d, sc, 0), th1 = fitted_frequency(d, sc, 1);
      th0 && th1 && *th0 > 0 && *th1 > 0 && *th1 < *th0 && claimed.scaling == scaling_kind::none) {
    const double fit = std::pow(*th1 / *th0, -claimed.rotary_dim / 2.0);  // theta_1 / theta_0 = base^(-2 / d)
    for (const double cand : {round_to(fit, 1), round_to(fit, 2), round_to(fit, 3), fit}) {
      if (!(cand > 1) || std::fabs(cand - claimed.base) <= 1e-9 * claimed.base) continue;
      rope_config other = claimed;
      other.base = cand;
      const judge::allowance AL(other, dtype, reference_kind::exact, opt.strict, std::nullopt, o2.extra_allowance);
      if (const double r = worst_against(p, some, other, AL, C); r <= 1) {
        out.findings.push_back({classes::base_wrong,
                                fmt("base is %g not %g: bands 0 and 1 of the scores fit base %.6g (theta_1 / theta_0 = "
                                    "%.6g), and each of %zu read scores is within its allowance of base %g's (worst %.3g "
                                    "of it)", cand, claimed.base, fit, *th1 / *th0, some.size(), cand, r),
                                0.95});
        break;
      }
    }
  }
  // The other layout, predicted score by score (the evidence above is read in the claim's pairs).
  rope_config other = claimed;
  other.pair_layout = claimed.pair_layout == layout::half_split ? layout::interleaved : layout::half_split;
  const judge::allowance AL(other, dtype, reference_kind::exact, opt.strict, std::nullopt, o2.extra_allowance);
  const double layout_ratio = worst_against(p, some, other, AL, C);
  if (layout_ratio <= 1)
    out.findings.push_back({classes::layout_swapped,
                            fmt("the scores are the %s layout's: every one of %zu read scores within its allowance of "
                                "the scores that layout gives (worst %.3g of the allowance), not the claimed %s's",
                                std::string(to_string(other.pair_layout)).c_str(), some.size(), layout_ratio,
                                std::string(to_string(claimed.pair_layout)).c_str()),
                            0.95});
  for (const finding& f : out.scores.findings) {
    if (f.bug_class == classes::attention_factor_wrong)
      out.findings.push_back({classes::score_scale_wrong,
                              fmt("the scores are %.4g times the claim's (softmax scale %.4g x attention factor^2 %.4g; a "
                                  "softmax scale, or a temperature on the logits, other than the claim's): %s",
                                  out.scale_ratio, p.softmax_scale, af * af, f.sentence.c_str()),
                              f.confidence});
    else if (f.bug_class == classes::positions_offset || f.bug_class == classes::positions_constant ||
             f.bug_class == classes::positions_wrong)
      out.findings.push_back({classes::key_positions_wrong,
                              "the scores act at other distances than m - n (positions below are m - n): " + f.sentence,
                              f.confidence});
    else
      out.findings.push_back({f.bug_class, "at the score (m - n): " + f.sentence, f.confidence});
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const finding& a, const finding& b) { return a.confidence > b.confidence; });
  return out;
}

}  // namespace ropecheck::judge
