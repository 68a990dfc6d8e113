// ropecheck/judge/bias.hpp — the score-matrix schemes judged at the score (docs/bias.md): ALiBi's linear bias and
// T5's bucketed bias, read back from attention outputs (the attention form, with a probe designed for a bias
// claim) or from score / weight dumps (`audit --scores`), up to the per-row constant softmax removes.
//
// The evidence is one thing for every door: per (query head h, query position m) a row of keys n with their scores
// up to one constant (bias_row). The verdict compares each row, centred, with the claim's bias (bias_claim.hpp's
// rules), against an allowance from the error model (error_model.hpp, the bias section: the bias rounded in the
// kernel's dtype, the scores' rounding, the read-out), and on a failure names the first hypothesis that explains
// every row: bias_missing, bias_sign_wrong, bias_scaled, alibi_slopes_wrong (with the rule that fits),
// t5_buckets_wrong, key_positions_wrong, or a precision class. Covered by tests/judge/bias_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/bias_claim.hpp"
#include "ropecheck/judge/judge.hpp"
#include "ropecheck/judge/readout.hpp"

namespace ropecheck::judge {

// One row of evidence: query head `head` at position m, keys at positions n[j] with scores s[j] (each up to the
// row's one constant; a key whose weight underflowed is left out, not given as -inf).
struct bias_row {
  int head = 0;
  std::int64_t m = 0;
  std::vector<std::int64_t> n;
  std::vector<double> s;
  std::vector<double> allowance;  // per key: the read-out's and the scores' share (the bias's own is the judge's)
  std::string form;               // "attention", "scores" (and later "decode" / "prefill" where a door knows)
};

struct bias_evidence {
  int heads = 0;                 // query heads (the claim's held heads)
  std::string dtype;             // the kernel's (outputs' or dump's) dtype
  std::vector<bias_row> rows;
  double score_constant = 0;     // q.k x scale, the same for every key (the probe's design; 0 when unknown)
  std::int64_t dropped_rows = 0; // rows with fewer than 2 keys of nonzero weight (underflow), left out
  std::int64_t non_finite = 0;   // outputs that are NaN or infinite (the kernel's failure: judged non_finite)
};

struct bias_verdict {
  bool pass = false;
  double worst_ratio = 0;          // the largest |centred error| / allowance
  int worst_head = 0;
  std::int64_t worst_m = 0, worst_n = 0;
  std::int64_t cells = 0;          // scores judged
  std::vector<double> fitted_slopes;  // ALiBi: per head, the least-squares slope of score against n (T5: empty)
  std::vector<finding> findings;   // most important first
  std::string tolerance_reason;    // the allowance in words (error_model.hpp's bias section)
};

// The attention form's probe for a bias claim (the same attention_probe layout and Python driver as RoPE's): one
// call a (query position, key window); q and k carry no positional signal (every key's q.k is the same), v is
// one-hot per key, so log(w_j / w_ref) is key j's bias minus the reference key's. heads: the claim's held heads
// (query heads); kv_heads divides it. Key windows end at the query for causal claims (ALiBi relative and
// key_position, T5 decoders) and straddle it for bidirectional ones (T5 encoders, ALiBi symmetric); T5's windows
// cover every bucket up to past max_distance, consecutive windows of one query sharing a key. Throws
// std::invalid_argument naming what does not fit.
// head_dim: the kernel's q, k width (the config's; the design puts its signal-free q, k there). softmax_scale 0: the
// family's (T5 1, ALiBi head_dim^-0.5).
[[nodiscard]] attention_probe make_bias_probe(const bias_claim& c, int kv_heads, int value_dim, int head_dim, double softmax_scale,
                                              std::int64_t max_position = 0);

// The rows of the attention outputs o [NQ][HQ][DV] (widened exactly from `dtype`) of the bias probe's calls.
// Throws std::invalid_argument as audit_attention does (o not softmax weights of v, sizes).
[[nodiscard]] bias_evidence bias_evidence_of_attention(const attention_probe& p, const std::vector<double>& o,
                                                       const std::string& dtype);

struct score_dump;
// The rows of a score or weight dump (`audit --scores`; score_dump.hpp) of a family whose attention adds a bias and
// rotates nothing: each kept score minus softmax_scale <q_h, k_g> (the inputs' dot product, query head h reading key
// head h / (Hq / Hk)), with the read-out's allowance (judge/src/bias_scores.cpp says it). Throws std::invalid_argument
// on sizes that disagree, non-finite inputs or scale, or no row with two keys.
[[nodiscard]] bias_evidence bias_evidence_of_scores(const score_dump& d, double softmax_scale);

// The verdict of the evidence against the claim.
[[nodiscard]] bias_verdict judge_bias(const bias_evidence& e, const bias_claim& claimed, const audit_options& opt = {});

}  // namespace ropecheck::judge
