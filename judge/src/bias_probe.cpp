// judge/src/bias_probe.cpp — make_bias_probe and bias_evidence_of_attention (ropecheck/judge/bias.hpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "bias_internal.hpp"
#include "ropecheck/judge/allowance.hpp"
#include "ropecheck/judge/bias_allowance.hpp"
#include "ropecheck/judge/sentence.hpp"

namespace ropecheck::judge {
namespace {

// ALiBi's query positions: the first full window's end, the 16-bit regimes' edges (bf16's integers end at 256,
// fp16's at 2048; 65536: BLOOM's slope x n in bf16 has spacing 256 there), two per octave from 64 to the end.
std::vector<std::int64_t> alibi_query_positions(int K, std::int64_t end) {
  std::vector<std::int64_t> m{K - 1};
  for (const std::int64_t edge : {std::int64_t{256}, std::int64_t{2048}, std::int64_t{65536}})
    for (const std::int64_t d : {-1, 0, 1}) m.push_back(edge + d);
  for (const std::int64_t x : two_per_octave(end)) m.push_back(x);
  m.push_back(end);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  std::erase_if(m, [&](std::int64_t x) { return x > end || x < K - 1; });
  return m;
}

}  // namespace

attention_probe make_bias_probe(const bias_claim& c, int kv_heads, int value_dim, int head_dim, double softmax_scale,
                                std::int64_t max_position) {
  validate(c);
  const int HQ = c.scheme == bias_scheme::alibi ? c.alibi.held_heads() : c.t5.heads;
  if (kv_heads < 1 || HQ % kv_heads != 0)
    throw std::invalid_argument(fmt("--kv-heads %d must divide the claim's %d held query heads", kv_heads, HQ));
  if (value_dim < min_attention_keys)
    throw std::invalid_argument(fmt("--value-dim %d: a call carries one key per value coordinate (v one-hot) and the "
                                    "bias is read over %d keys a call or more", value_dim, min_attention_keys));
  if (head_dim < 1) throw std::invalid_argument(fmt("head_dim %d: need at least 1 (q and k's width)", head_dim));
  const int K = std::min(value_dim, max_attention_keys);
  const std::int64_t end = max_position > 0 ? max_position : std::int64_t{1} << 20;
  if (end < K - 1)
    throw std::invalid_argument(fmt("--max-position %lld is below the bias probe's first query position %d",
                                    static_cast<long long>(end), K - 1));
  std::vector<detail::key_window> windows;
  if (c.scheme == bias_scheme::t5) {
    windows = detail::t5_windows(c.t5, K, max_position);
  } else {
    for (const std::int64_t m : alibi_query_positions(K, end)) {
      std::int64_t first = std::max<std::int64_t>(0, m - K + 1);
      if (c.alibi.distance == alibi_distance::symmetric) first = std::max<std::int64_t>(0, m - K / 2);
      windows.push_back({m, first, first + K - 1 > m && c.alibi.distance != alibi_distance::symmetric ? m : first + K - 1});
    }
  }
  attention_probe p;
  p.q_heads = HQ, p.k_heads = kv_heads, p.head_dim = head_dim, p.value_dim = value_dim;
  // The default scale is the family's: T5 scales nothing (transformers models/t5/modeling_t5.py T5Attention.forward:
  // `scores = torch.matmul(query_states, key_states.transpose(3, 2))`, no 1/sqrt(d)), so its kernels' q.k is A B
  // and the error model's score constant (8c) must be that; ALiBi's families scale by head_dim^-0.5.
  p.softmax_scale = softmax_scale > 0 ? softmax_scale
                    : c.scheme == bias_scheme::t5 ? 1.0
                                                  : 1 / std::sqrt(static_cast<double>(head_dim));
  // q = A e_0, k = B e_0 for every key: q.k is one constant per row (no positional signal); A, B powers of two
  // with scale A B in [1/2, 1] (exact in every dtype).
  const double e = std::floor(std::log2(1 / p.softmax_scale));
  p.q_amplitude = std::ldexp(1.0, static_cast<int>(std::floor(e / 2)));
  p.k_amplitude = std::ldexp(1.0, static_cast<int>(e - std::floor(e / 2)));
  p.key_phase.assign(static_cast<std::size_t>(kv_heads), 0);
  const auto D = static_cast<std::size_t>(head_dim), DV = static_cast<std::size_t>(value_dim);
  p.calls.push_back(0);
  p.key_calls.push_back(0);
  for (const detail::key_window& w : windows) {
    p.q_positions.push_back(w.m);
    p.first_band.push_back(0);
    const std::size_t qo = p.q.size();
    p.q.resize(qo + static_cast<std::size_t>(HQ) * D);
    for (int h = 0; h < HQ; ++h) p.q[qo + static_cast<std::size_t>(h) * D] = p.q_amplitude;
    for (std::int64_t n = w.first; n <= w.last; ++n) {
      p.k_positions.push_back(n);
      const std::size_t ko = p.k.size(), vo = p.v.size();
      p.k.resize(ko + static_cast<std::size_t>(kv_heads) * D);
      p.v.resize(vo + static_cast<std::size_t>(kv_heads) * DV);
      for (int g = 0; g < kv_heads; ++g) {
        p.k[ko + static_cast<std::size_t>(g) * D] = p.k_amplitude;
        p.v[vo + static_cast<std::size_t>(g) * DV + static_cast<std::size_t>(n - w.first)] = 1;
      }
    }
    p.calls.push_back(static_cast<std::int64_t>(p.q_positions.size()));
    p.key_calls.push_back(static_cast<std::int64_t>(p.k_positions.size()));
  }
  return p;
}

bias_evidence bias_evidence_of_attention(const attention_probe& p, const std::vector<double>& o, const std::string& dtype) {
  const dtype_info T = dtype_of(dtype);
  const double uT = T.u(), dmin = denorm_min_of_digits(T.digits);
  const auto HQ = static_cast<std::size_t>(p.q_heads), DV = static_cast<std::size_t>(p.value_dim);
  const std::size_t NQ = p.q_positions.size();
  if (o.size() != NQ * HQ * DV)
    throw std::invalid_argument(fmt("bias_evidence_of_attention: %zu outputs for %zu queries x %zu heads x %zu values",
                                    o.size(), NQ, HQ, DV));
  bias_evidence ev;
  ev.heads = p.q_heads, ev.dtype = dtype;
  ev.score_constant = p.softmax_scale * p.q_amplitude * p.k_amplitude;
  ev.non_finite = check_softmax_weights(p, o);
  for (int c = 0; c < p.calls_count(); ++c) {
    const auto k0 = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c)]);
    const std::size_t nk = static_cast<std::size_t>(p.key_calls[static_cast<std::size_t>(c) + 1]) - k0;
    for (auto e = static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c)]); e < static_cast<std::size_t>(p.calls[static_cast<std::size_t>(c) + 1]); ++e)
      for (std::size_t h = 0; h < HQ; ++h) {
        const double* row = o.data() + (e * HQ + h) * DV;
        if (!std::all_of(row, row + DV, [](double x) { return std::isfinite(x); })) continue;  // counted above
        std::size_t ref = 0;
        for (std::size_t j = 1; j < nk; ++j)
          if (row[j] > row[ref]) ref = j;
        bias_row r;
        r.head = static_cast<int>(h), r.m = p.q_positions[e], r.form = "attention";
        const double ref_share = bias_weight_share(row[ref], uT, dmin);
        for (std::size_t j = 0; j < nk; ++j) {
          if (row[j] == 0) continue;  // underflowed: no score to read
          r.n.push_back(p.k_positions[k0 + j]);
          r.s.push_back(std::log(row[j] / row[ref]));
          r.allowance.push_back(bias_weight_share(row[j], uT, dmin) + (j == ref ? 0 : ref_share));
        }
        if (r.n.size() < 2) {
          ++ev.dropped_rows;
          continue;
        }
        ev.rows.push_back(std::move(r));
      }
  }
  return ev;
}

}  // namespace ropecheck::judge
