// ropecheck/judge/score_dump.hpp — attention scores or weights as data (`ropecheck audit --scores`): what eager
// attention gives with output_attentions (transformers' eager_attention_forward returns the weights [bs, Hq, Tq,
// Tk] after the fp32 softmax, cast to the query's dtype), or a user's hook on the logits, together with the
// inputs q and k before RoPE and their positions. Judged up to the per-row constant softmax removes.
//
// Method. For every row (query head h, query token at m) the claim predicts each key's score exactly:
// s*(m, n) = scale af^2 <q_h, R(n - m) k_g> (MPFR reference, g = h / (Hq / Hk)). Rows are compared centred
// (each row minus its mean over the keys it holds: masked keys, -inf logits or zero weights, are left out), so a
// constant per row (a causal mask's, BLOOM's slope x key position, the softmax's normaliser) is the same attention.
// The allowance of a score is scores.hpp's (both sides' allowances at m and at n) plus the read-out: a logit
// stored in T is off by u_T |s|, the log of a weight stored in T by u_T + 3 u_32 (the fp32 softmax); a centred
// score carries its row's largest allowance twice (the score and the mean). That worst case sums D products at
// their bounds with aligned signs; a 16-bit dtype's admits a key one position off. So the verdict has a
// statistical half too: the errors beyond their angle share (systematic, kept worst-case), in units of their
// rounding noise (each rounding of variance u^2 / 3, independent), at most 3 RMS (score_dump.cpp kNoiseRms says
// why). Pass iff both hold. On a failure the diagnosis predicts
// the scores of other conventions and names the first that explains every score: the other layout
// (layout_swapped), keys at n + d for |d| <= 2 or all at 0, or no rotation at all (key_positions_wrong), another
// base fitted by its scores (base_wrong), the claim's scores times one factor (score_scale_wrong).
// Covered by tests/judge/score_dump_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

struct score_dump {
  enum class kind { logits, weights } what = kind::weights;
  int q_heads = 0, k_heads = 0, head_dim = 0, q_tokens = 0, k_tokens = 0;
  std::vector<std::int64_t> q_positions, k_positions;
  std::vector<double> q, k;       // [Tq][Hq][D], [Tk][Hk][D]: the inputs before RoPE
  std::vector<double> values;     // [Hq][Tq][Tk]: logits or weights, widened exactly
  std::string dtype;              // values' dtype
  double softmax_scale = 0;       // 0: the claim's head_dim^-0.5
};

struct score_dump_verdict {
  bool pass = false;
  double worst_ratio = 0;                 // the largest |centred error| / allowance
  double noise_rms = 0;                   // RMS of the errors beyond their angle share / their rounding noise
  std::int64_t worst_m = 0, worst_n = 0;
  int worst_head = 0;
  std::int64_t scores = 0, rows = 0;      // judged (rows at most 256 query tokens, spread, times Hq)
  std::vector<finding> findings;
  std::string allowance_reason;
};

namespace detail {
// The statistical half's bound (score_dump.cpp says why 3).
inline constexpr double kNoiseRms = 3;
[[nodiscard]] constexpr bool noise_within(double rms) noexcept { return rms <= kNoiseRms; }
}  // namespace detail

// Throws std::invalid_argument on inconsistent sizes (values not Hq x Tq x Tk, heads not dividing, head_dim not
// the claim's), non-finite inputs, or a row with fewer than two keys left.
[[nodiscard]] score_dump_verdict audit_scores(const score_dump& d, const rope_config& claimed, const audit_options& opt = {});

}  // namespace ropecheck::judge
