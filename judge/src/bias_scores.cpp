// judge/src/bias_scores.cpp — bias_evidence_of_scores (ropecheck/judge/bias.hpp): a score or weight dump of a family whose
// attention adds a bias read as bias rows. Without RoPE a score is scale <q_h, k_g> + bias(h, m, n) (+ the row's
// constant): the dump's inputs give the first term, so what is left of each kept score is the bias up to the row's
// constant, which judge_bias centres away.
//
// The read-out allowance of a key (error_model.hpp section 7's, as score_dump.cpp charges it): a logit stored in T is
// off by u_T |s|, the log of a weight stored in T by u_T + 3 u_32 (the fp32 softmax); the dot product the kernel
// formed in T from inputs exact in T by (D + 2) u_T scale sum |q_i k_i| (Higham's gamma_D for the products and the
// sum, one more rounding for the scale); the reference dot product here is formed in double from the same inputs.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "bias_internal.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/score_dump.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge {
namespace {
// At most this many query tokens a head are read (spread over the dump), as audit_scores reads them.
constexpr int kRowTokens = 256;
}  // namespace

bias_evidence bias_evidence_of_scores(const score_dump& d, double softmax_scale) {
  const auto D = static_cast<std::size_t>(d.head_dim);
  if (d.q_heads <= 0 || d.k_heads <= 0 || d.q_heads % d.k_heads != 0 || d.head_dim <= 0 || d.q_tokens <= 0 || d.k_tokens <= 0 ||
      d.q.size() != static_cast<std::size_t>(d.q_tokens * d.q_heads) * D ||
      d.k.size() != static_cast<std::size_t>(d.k_tokens * d.k_heads) * D ||
      d.values.size() != static_cast<std::size_t>(d.q_heads) * static_cast<std::size_t>(d.q_tokens) * static_cast<std::size_t>(d.k_tokens) ||
      d.q_positions.size() != static_cast<std::size_t>(d.q_tokens) || d.k_positions.size() != static_cast<std::size_t>(d.k_tokens))
    throw std::invalid_argument(fmt("audit --scores: sizes disagree (q %d x %d x %d, k %d x %d, scores %zu for %d heads x %d "
                                    "queries x %d keys)",
                                    d.q_tokens, d.q_heads, d.head_dim, d.k_tokens, d.k_heads, d.values.size(), d.q_heads,
                                    d.q_tokens, d.k_tokens));
  for (const double x : d.q)
    if (!std::isfinite(x)) throw std::invalid_argument("audit --scores: q holds NaN or infinity");
  for (const double x : d.k)
    if (!std::isfinite(x)) throw std::invalid_argument("audit --scores: k holds NaN or infinity");
  if (!(softmax_scale > 0) || !std::isfinite(softmax_scale))
    throw std::invalid_argument(fmt("audit --scores: softmax scale %g, need a finite value > 0", softmax_scale));
  const double uT = dtype_of(d.dtype).u(), u32 = 0x1p-24;
  bias_evidence e;
  e.heads = d.q_heads;
  e.dtype = d.dtype;
  const int step = std::max(1, d.q_tokens / kRowTokens);
  const int group = d.q_heads / d.k_heads;
  for (int h = 0; h < d.q_heads; ++h)
    for (int a = 0; a < d.q_tokens; a += step) {
      bias_row r;
      r.head = h;
      r.m = d.q_positions[static_cast<std::size_t>(a)];
      r.form = "scores";
      const double* q = d.q.data() + static_cast<std::size_t>(a * d.q_heads + h) * D;
      for (int b = 0; b < d.k_tokens; ++b) {
        const double x = d.values[(static_cast<std::size_t>(h) * static_cast<std::size_t>(d.q_tokens) + static_cast<std::size_t>(a)) *
                                      static_cast<std::size_t>(d.k_tokens) + static_cast<std::size_t>(b)];
        if (std::isnan(x) || (d.what == score_dump::kind::weights && std::isinf(x)))
          throw std::invalid_argument("audit --scores: NaN (or an infinite weight) in the scores");
        const bool kept = d.what == score_dump::kind::weights ? (x > 1e-30 && std::isfinite(x)) : (std::isfinite(x) && x > -1e30);
        if (!kept) continue;  // masked, or a weight that underflowed
        const double* k = d.k.data() + static_cast<std::size_t>(b * d.k_heads + h / group) * D;
        double dot = 0, magnitude = 0;
        for (std::size_t i = 0; i < D; ++i) {
          dot += q[i] * k[i];
          magnitude += std::fabs(q[i] * k[i]);
        }
        const double s = d.what == score_dump::kind::weights ? std::log(x) : x;
        const double readout = d.what == score_dump::kind::weights ? uT + 3 * u32 : uT * std::fabs(s);
        r.n.push_back(d.k_positions[static_cast<std::size_t>(b)]);
        r.s.push_back(s - softmax_scale * dot);
        r.allowance.push_back(readout + (static_cast<double>(D) + 2) * uT * softmax_scale * magnitude);
      }
      if (r.n.size() >= 2) e.rows.push_back(std::move(r));
    }
  if (e.rows.empty()) throw std::invalid_argument("audit --scores: no row keeps two keys or more (every score masked?)");
  return e;
}

}  // namespace ropecheck::judge
