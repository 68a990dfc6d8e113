// judge/src/bias_alibi.cpp — detail::judge_alibi (judge/src/bias_internal.hpp): the claim's ALiBi against rows read
// up to one constant each, the allowance of error_model's bias section (ropecheck/judge/bias_allowance.hpp, 8),
// and on a failure the first hypothesis (a per-head slope vector, or the claim's bias held in a 16-bit type) that
// explains every row within the same allowance.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "bias_internal.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/bias_allowance.hpp"
#include "ropecheck/judge/classes.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge::detail {
namespace {

// A convention's bias at (head, m, n), and its value as the claim says it is stored (8b).
using bias_fn = std::function<double(int, std::int64_t, std::int64_t)>;

struct fit_result {
  double worst = 0;
  int head = 0;
  std::int64_t m = 0, n = 0;
  std::int64_t cells = 0;
};

// The largest |(s_j - s_ref) - (b_j - b_ref)| / allowance over every key of every row (8: the read-out's shares of
// the row, the claim's stored bias and score rounded in T at j and at the reference key).
fit_result worst_against(const bias_evidence& e, const bias_fn& bias, const bias_fn& stored, double uT, double uS) {
  fit_result f;
  for (const bias_row& r : e.rows) {
    const std::size_t ref = ref_of(r);
    const double bref = bias(r.head, r.m, r.n[ref]);
    const double aref = bias_rounding_share(stored(r.head, r.m, r.n[ref]), e.score_constant, uT, uS);
    for (std::size_t j = 0; j < r.n.size(); ++j) {
      if (j == ref) continue;
      const double err = (r.s[j] - r.s[ref]) - (bias(r.head, r.m, r.n[j]) - bref);
      const double a = r.allowance[j] + aref + bias_rounding_share(stored(r.head, r.m, r.n[j]), e.score_constant, uT, uS);
      const double ratio = std::fabs(err) / a;
      ++f.cells;
      if (!(ratio <= f.worst)) f.worst = ratio, f.head = r.head, f.m = r.m, f.n = r.n[j];
    }
  }
  return f;
}

// Per head, the weighted least-squares slope of the score against the distance coordinate x (n for causal forms,
// -|m - n| for symmetric), each row centred, each row weighted by 1 / its largest allowance^2.
std::vector<double> fitted_slopes(const bias_evidence& e, alibi_distance d, const std::vector<double>& claimed, double uT) {
  std::vector<double> sxx(static_cast<std::size_t>(e.heads)), sxs(sxx.size());
  for (const bias_row& r : e.rows) {
    const auto k = static_cast<double>(r.n.size());
    std::vector<double> x(r.n.size());
    double mx = 0, ms = 0, amax = 0;
    for (std::size_t j = 0; j < r.n.size(); ++j) {
      x[j] = d == alibi_distance::symmetric ? -static_cast<double>(std::llabs(r.m - r.n[j])) : static_cast<double>(r.n[j] - r.m);
      mx += x[j] / k, ms += r.s[j] / k;
      const double slope = claimed.at(static_cast<std::size_t>(r.head));
      amax = std::max(amax, r.allowance[j] + bias_rounding_share(slope * static_cast<double>(r.n[j]), 0, uT));
    }
    const double w = 1 / (amax * amax);
    for (std::size_t j = 0; j < r.n.size(); ++j)
      sxx[static_cast<std::size_t>(r.head)] += w * (x[j] - mx) * (x[j] - mx),
          sxs[static_cast<std::size_t>(r.head)] += w * (x[j] - mx) * (r.s[j] - ms);
  }
  std::vector<double> out;
  for (std::size_t h = 0; h < sxx.size(); ++h) out.push_back(sxx[h] > 0 ? sxs[h] / sxx[h] : 0);
  return out;
}

std::string first_heads(const std::vector<double>& v) {
  std::string s;
  for (std::size_t h = 0; h < v.size() && h < 4; ++h) s += (h ? ", " : "") + fmt("%.6g", v[h]);
  return s + (v.size() > 4 ? ", ..." : "");
}

// A slope vector of the held heads as the claim applies it (bf16 when slopes_bf16, times bias_scale).
std::vector<double> as_applied(const alibi_claim& a, const std::vector<double>& global, int offset) {
  std::vector<double> out;
  for (int h = 0; h < a.held_heads(); ++h) {
    const auto g = static_cast<std::size_t>(offset + h);
    double s = g < global.size() ? global[g] : 0;
    if (a.slopes_bf16) s = round_to_bf16(s);
    out.push_back(s * a.bias_scale);
  }
  return out;
}

struct hypothesis {
  const char* bug_class;
  std::string what;
  std::vector<double> slopes;
  std::optional<alibi_distance> form{};  // the distance form the kernel used (none: the claim's)
};

// The slope rules a kernel may have used instead of the claim's (alibi_slopes_wrong), each named.
// rank_aligned_first: another rank's offsets (multiples of the held heads) are tried before (rank_offsets), not here.
std::vector<hypothesis> slope_rules(const alibi_claim& a, const std::vector<double>& fit, bool rank_aligned_first = true) {
  const int H = a.heads;
  std::vector<hypothesis> out;
  const auto add = [&](std::string what, const std::vector<double>& global, int offset = -1) {
    out.push_back({classes::alibi_slopes_wrong, std::move(what), as_applied(a, global, offset < 0 ? a.head_offset : offset)});
  };
  std::vector<double> uniform, off_by_one;
  for (int h = 1; h <= H; ++h) uniform.push_back(std::exp2(-8.0 * h / H));  // mlx's create_alibi_slope before PR 3071
  add(fmt("one geometric sequence 2^(-8h/%d) for every head (the closest-power-of-two interleave missing; mlx's "
          "create_alibi_slope before mlx PR 3071)", H), uniform);
  const std::vector<double> press = global_alibi_slopes(alibi_slope_rule::press, H);
  for (const double s : press) off_by_one.push_back(s * std::exp2(8.0 / (1 << static_cast<int>(std::floor(std::log2(H))))));
  add("the exponent off by one: head 0 has slope 1, each slope 2^(8/n) times the rule's (aprender PR 2143)", off_by_one);
  const std::vector<double> claimed_global = global_alibi_slopes(a.rule, H, a.bias_max);
  std::vector<double> desc = claimed_global, asc = claimed_global;
  std::sort(desc.begin(), desc.end(), std::greater<>());
  std::sort(asc.begin(), asc.end());
  add("the claim's slopes sorted in descending order (not interleaved)", desc);
  add("the claim's slopes sorted in ascending order", asc);
  // MPT's gen_slopes with another alibi_bias_max: fitted from the held heads (slope = s1^bias_max, s1 the
  // bias_max 1 slope), then its rounding to a half.
  const std::vector<double> unit = global_alibi_slopes(alibi_slope_rule::mpt, H, 1.0);
  double num = 0, den = 0;
  for (int h = 0; h < a.held_heads(); ++h) {
    const double f = fit[static_cast<std::size_t>(h)] / a.bias_scale;
    const double l1 = std::log2(unit[static_cast<std::size_t>(a.head_offset + h)]);
    if (f > 0) num += std::log2(f) * l1, den += l1 * l1;
  }
  if (den > 0) {
    const double bmax = num / den;
    for (const double b : {std::round(2 * bmax) / 2, bmax})
      if (b > 0 && (a.rule != alibi_slope_rule::mpt || std::fabs(b - a.bias_max) > 1e-9))
        add(fmt("MPT's gen_slopes with alibi_bias_max %.6g (fitted %.4g)%s%s", b, bmax,
                a.rule == alibi_slope_rule::press ? " where the claim's rule is the paper's (press)" : "",
                b == 8 && a.rule == alibi_slope_rule::mpt ? ", which are the paper's get_slopes (press): MPT's rule at "
                                                            "8 gives them for every head count" : ""),
            global_alibi_slopes(alibi_slope_rule::mpt, H, b));
  }
  // The paper's rule under an MPT claim is the hypothesis above at 8 (bias_claim_test: equal for H = 1..96).
  for (int off = 0; off + a.held_heads() <= H; ++off)
    if (off != a.head_offset && (off % a.held_heads() != 0 || !rank_aligned_first))
      add(fmt("the slopes of heads %d..%d (head offset %d, not the claim's %d: another rank's heads)", off,
              off + a.held_heads() - 1, off, a.head_offset), claimed_global, off);
  if (a.held_heads() != H)
    add(fmt("the slopes computed from the local head count %d, not the global %d (FlashInfer issue 1606: "
            "get_slopes(local_heads))", a.held_heads(), H), global_alibi_slopes(a.rule, a.held_heads(), a.bias_max), 0);
  return out;
}

// Another rank's heads: offsets that are multiples of the held heads. For a power-of-two H another offset is also
// the claim's slopes times 2^(8 shift / H) (one geometric sequence), so these come before a named scale.
std::vector<hypothesis> rank_offsets(const alibi_claim& a) {
  std::vector<hypothesis> out;
  const std::vector<double> g = global_alibi_slopes(a.rule, a.heads, a.bias_max);
  for (int off = 0; off + a.held_heads() <= a.heads; off += a.held_heads())
    if (off != a.head_offset)
      out.push_back({classes::alibi_slopes_wrong,
                     fmt("the slopes of heads %d..%d (head offset %d, not the claim's %d: rank %d's heads)", off,
                         off + a.held_heads() - 1, off, a.head_offset, off / a.held_heads()),
                     as_applied(a, g, off)});
  return out;
}

std::string scale_note(double c) {
  const int d = head_dim_scale_of(c);
  if (d > 0)
    return fmt(" = 1/sqrt(%d): a 1/sqrt(head_dim) the claim does not have (transformers' and vLLM's Falcon scale the "
               "bias with the scores; BLOOM does not)", d);
  if (d < 0)
    return fmt(" = sqrt(%d): the claim's 1/sqrt(head_dim) is missing (transformers' and vLLM's Falcon scale the bias "
               "with the scores)", -d);
  return "";
}

}  // namespace

bias_verdict judge_alibi(const bias_evidence& e, const alibi_claim& a, const audit_options& /*opt*/) {
  bias_verdict v;
  const double uT = dtype_of(e.dtype).u();
  // 8b: HF Falcon forms slope x n in bf16 (slopes_bf16) whatever T is, then its SDPA path divides in T:
  // (1 + u_bf16)^2 (1 + u_T) - 1.
  const double uS = a.slopes_bf16 ? (1 + 0x1p-8) * (1 + 0x1p-8) * (1 + uT) - 1 : uT;
  if (e.heads != a.held_heads())
    throw std::invalid_argument(fmt("the evidence has %d query heads, the claim holds %d", e.heads, a.held_heads()));
  if (e.non_finite > 0) {
    v.findings.push_back({classes::non_finite, fmt("%lld outputs are NaN or infinite: no score can be read there",
                                                   static_cast<long long>(e.non_finite)), 1.0});
    return v;
  }
  const std::vector<double> claimed = claimed_slopes(a);
  const alibi_distance d = a.distance;
  const auto bias_of = [d](const std::vector<double>& s, std::optional<alibi_distance> form = {}) {
    return bias_fn([&s, f = form.value_or(d)](int h, std::int64_t m, std::int64_t n) {
      return alibi_bias_value(s[static_cast<std::size_t>(h)], f, m, n);
    });
  };
  // 8b's stored bias: a causal claim's kernel may hold either slope x n (BLOOM, Falcon) or -slope (m - n) (the
  // per-row constant apart they are one attention, rule 1), so the larger of the two; symmetric's is its own.
  const auto stored_of = [d](const std::vector<double>& s) {
    return bias_fn([&s, d](int h, std::int64_t m, std::int64_t n) {
      const double slope = s[static_cast<std::size_t>(h)];
      if (d == alibi_distance::symmetric) return alibi_bias_value(slope, d, m, n);
      return std::fmax(std::fabs(alibi_bias_value(slope, alibi_distance::key_position, m, n)),
                       std::fabs(alibi_bias_value(slope, alibi_distance::relative, m, n)));
    });
  };
  const fit_result f = worst_against(e, bias_of(claimed), stored_of(claimed), uT, uS);
  v.worst_ratio = f.worst, v.worst_head = f.head, v.worst_m = f.m, v.worst_n = f.n, v.cells = f.cells;
  v.fitted_slopes = fitted_slopes(e, d, claimed, uT);
  v.tolerance_reason = "error_model bias section (bias_allowance.hpp 8): the read-out's weights rounded in " + e.dtype +
                       " and the fp32 softmax, the claim's bias (" + std::string(to_string(d)) +
                       " form) and the score rounded once in " + e.dtype;
  v.pass = f.cells > 0 && f.worst <= 1;
  if (v.pass || f.cells == 0) return v;
  const std::string evidence = fmt("fitted slopes %s vs claimed %s; the claim's worst residual %.3g of its allowance "
                                   "(head %d, m %lld, n %lld)", first_heads(v.fitted_slopes).c_str(),
                                   first_heads(claimed).c_str(), f.worst, f.head, static_cast<long long>(f.m),
                                   static_cast<long long>(f.n));
  // A hypothesis's kernel stores its own slopes' bias (8b at its slopes).
  const auto explains = [&](const hypothesis& h) {
    return worst_against(e, bias_of(h.slopes, h.form), stored_of(h.slopes), uT, uS);
  };
  // The hypotheses, in order; the first that explains every row is named.
  std::vector<hypothesis> hyps;
  hyps.push_back({classes::bias_missing, "no bias: every head's slope 0", std::vector<double>(claimed.size(), 0.0)});
  std::vector<double> neg;
  for (const double s : claimed) neg.push_back(-s);
  hyps.push_back({classes::bias_sign_wrong, "the claim's bias negated (a bias growing with distance)", neg});
  // A causal kernel's -slope (m - n) under a symmetric (non-causal) claim: keys after the query get a bias that
  // grows with their distance (flash-attention csrc/flash_attn/src/alibi.h: its causal and non-causal forms, crossed).
  if (d == alibi_distance::symmetric)
    hyps.push_back({classes::bias_sign_wrong, "the causal form -slope (m - n) where the claim is symmetric: keys after the "
                    "query get a bias growing with distance", claimed, alibi_distance::relative});
  double num = 0, den = 0;
  for (std::size_t h = 0; h < claimed.size(); ++h) num += v.fitted_slopes[h] * claimed[h], den += claimed[h] * claimed[h];
  const double c = den > 0 ? num / den : 1;
  // A factor 1/sqrt(head_dim) or sqrt(head_dim) (Falcon's scale added or missing) is named before the slope
  // rules; another factor after them (for a power-of-two H, the exponent off by one is the factor 2^(8/H): the
  // rule is the likelier statement).
  std::vector<hypothesis> scaled_hyp;
  if (std::fabs(c - 1) > 1e-6 && c > 0) {
    std::vector<double> scaled;
    for (const double s : claimed) scaled.push_back(s * c);
    scaled_hyp.push_back({classes::bias_scaled, fmt("the claim's bias times %.6g%s", c, scale_note(c).c_str()), scaled});
  }
  const bool named_scale = !scaled_hyp.empty() && !scale_note(c).empty();
  if (a.held_heads() != a.heads)
    for (hypothesis& h : rank_offsets(a)) hyps.push_back(std::move(h));
  if (named_scale) hyps.push_back(scaled_hyp[0]);
  for (hypothesis& h : slope_rules(a, v.fitted_slopes)) hyps.push_back(std::move(h));
  if (!named_scale && !scaled_hyp.empty()) hyps.push_back(scaled_hyp[0]);
  for (const hypothesis& h : hyps) {
    if (const fit_result r = explains(h); r.worst <= 1) {
      v.findings.push_back({h.bug_class, fmt("%s: every one of %lld scores within its allowance (worst %.3g of it); %s",
                                             h.what.c_str(), static_cast<long long>(r.cells), r.worst, evidence.c_str()),
                            0.95});
      return v;
    }
  }
  // The claim's bias held in a 16-bit type before it meets the scores (bias_low_precision).
  for (const auto& [name, digits] : {std::pair{"bf16", 8}, std::pair{"fp16", 11}})
    for (const alibi_distance form : {alibi_distance::key_position, alibi_distance::relative}) {
      const auto rounded = [&, digits = digits, form](int h, std::int64_t m, std::int64_t n) {
        return round_to_digits(alibi_bias_value(claimed[static_cast<std::size_t>(h)], form, m, n), digits);
      };
      if (const fit_result r = worst_against(e, rounded, stored_of(claimed), uT, uS); r.worst <= 1) {
        v.findings.push_back({classes::bias_low_precision,
                              fmt("the claim's bias in the %s form rounded to %s before it meets the %s scores: every one "
                                  "of %lld scores within its allowance (worst %.3g of it); %s",
                                  std::string(to_string(form)).c_str(), name, e.dtype.c_str(),
                                  static_cast<long long>(r.cells), r.worst, evidence.c_str()),
                              0.9});
        return v;
      }
    }
  v.findings.push_back({classes::unexplained, "no hypothesis explains every row: " + evidence, 0.5});
  return v;
}

}  // namespace ropecheck::judge::detail
