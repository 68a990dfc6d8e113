// ropecheck/judge/readout.hpp — RoPE applied inside attention: only o = softmax(scale q'k'^T) v comes out
// (flash-attn's flash_attn_with_kvcache with rotary_cos/sin, FlashInfer's pos_encoding_mode, a fused decode
// kernel). The attention form of the probe designs q, k and v so the judge can read the scores back from o,
// and judges the implied relative angles with the passes every door uses (docs/scores.md).
//
// The design (make_attention_probe). One call a query position m: its queries all at m (each reading other
// bands), its keys at the contiguous positions m - K + 1 .. m (clipped at 0), as a KV cache holds them, every
// query attending to every key (a position-based causal mask masks nothing; a kernel that aligns a causal mask
// by index, as flash-attn's bottom-right one, is called one query at a time by its adapter). The first key of every call is all zeros: its score is
// 0 whatever the rotation, so log(w_j / w_0) is key j's score, and the per-row constant softmax removes cancels.
// v is one-hot per key (v_j = e_j in every head): a row of o is the softmax weights. Query heads 2p and 2p+1
// read band b = b0 + p in quadrature: q = A (1, 0) and A (0, 1) in band b's pair (the claim's layout), zero
// elsewhere; b0 steps by HQ / 2 over a call's queries until every band is read. Every key's pair
// of every band is B e^{-i beta_g} (beta_g a multiple of pi/2, per key head: a wrong head mapping turns the
// phase), so the claim says, with C = scale af^2 A B:
//   s_2p(m, n) = C cos((m - n) theta_b + beta),  s_2p+1(m, n) = -C sin((m - n) theta_b + beta)
// z = s_2p - i s_2p+1 = C e^{i ((m - n) theta_b + beta)} is a rotation by (m - n) theta_b of (C / af) e^{i beta}
// times af: the evidence is a dump of one head over the rotary dim, a token per (m, key), at position m - n,
// judged by judge::audit with the read-out's allowance (error_model.hpp section 7).
// Covered by tests/judge/readout_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

struct attention_probe {
  int q_heads = 0, k_heads = 0, head_dim = 0, value_dim = 0;
  double softmax_scale = 0;  // the claim's (head_dim^-0.5 unless the claim says otherwise)
  double q_amplitude = 0, k_amplitude = 0;  // A and B above (powers of two, exact in every dtype; C in [1/2, 1])
  std::vector<std::int64_t> calls;      // [C + 1]: call c's query entries calls[c] .. calls[c+1]-1 (all at one m)
  std::vector<std::int64_t> key_calls;  // [C + 1]: call c's key entries
  std::vector<std::int64_t> q_positions, k_positions;
  std::vector<int> first_band;          // per query entry: b0 (head pair p reads band b0 + p)
  std::vector<double> q, k, v;          // [NQ][HQ][D], [NK][HK][D], [NK][HK][DV]
  std::vector<int> key_phase;           // per key head g: beta_g / (pi / 2), 0..3
  [[nodiscard]] int calls_count() const { return static_cast<int>(calls.size()) - 1; }
};

// The most keys a call carries (the value dim bounds it: one one-hot column a key).
inline constexpr int max_attention_keys = 64;
// The fewest: m - n = 0..14 read in every band. Two keys (the zero key and m - n = 0) read nothing that depends on
// the frequencies: a base-10000 kernel passed a 500000 claim that way (tests/python/test_attention.py).
inline constexpr int min_attention_keys = 16;

// floor(64 2^(k/2)) for k = 1, 2, ... below `end`: two query positions per octave past 64 (the attention form's and
// the bias probe's sweep).
[[nodiscard]] std::vector<std::int64_t> two_per_octave(std::int64_t end);

// The query positions of the attention form: the largest key run's end (K - 1) and the probe's regimes (fp32's
// integer limit, bf16's and fp16's, the training lengths, two per octave to 2 max_position_embeddings), each at
// most max_position (0: no limit).
[[nodiscard]] std::vector<std::int64_t> attention_query_positions(const rope_config& c, std::int64_t max_position = 0);

// The probe for `c`, HQ query heads (even) and HK key heads (dividing HQ), value dim DV (>= 2). softmax_scale 0:
// head_dim^-0.5. Throws std::invalid_argument naming what does not fit.
[[nodiscard]] attention_probe make_attention_probe(const rope_config& c, int q_heads, int k_heads, int value_dim,
                                                   double softmax_scale = 0, std::int64_t max_position = 0);

struct attention_verdict {
  bool pass = false;
  verdict scores;                 // the judge's verdict on the score evidence (judge::audit)
  std::vector<finding> findings;  // most important first, in the score's words
  std::int64_t cells = 0;         // (query, key, band) scores read
  double scale_ratio = 1;         // the median |z| / C: the scores' scale against the claim's
};

// Judges the outputs o [NQ][HQ][DV] (widened exactly from `dtype`) of the probe's calls against `claimed`.
// Throws std::invalid_argument when a call's queries are not at one position, when o cannot be read as softmax
// weights of v (check_softmax_weights: o does not come from v) or its size is not the probe's.
[[nodiscard]] attention_verdict audit_attention(const attention_probe& p, const std::vector<double>& o, const std::string& dtype,
                                                const rope_config& claimed, const audit_options& opt = {});

// Checks that o [NQ][HQ][DV] can be read as softmax weights of the probe's one-hot v: in each row the columns past
// its call's keys are zero, no weight is negative, and a finite row sums to 1 within 1/8. Throws
// std::invalid_argument naming the entry otherwise; returns how many outputs are NaN or infinite (the kernel's
// failure, judged by the caller). Shared by audit_attention and the score-matrix bias's read-out (bias_probe.cpp).
[[nodiscard]] std::int64_t check_softmax_weights(const attention_probe& p, const std::vector<double>& o);

// The read-out's share of the allowance (error_model.hpp section 7) for outputs in `dtype` and designed score
// magnitude C, relative to C.
[[nodiscard]] double score_readout_allowance(const std::string& dtype, double C);

}  // namespace ropecheck::judge
