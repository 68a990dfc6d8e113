// ropecheck/judge/scores.hpp — position as attention sees it: queries and keys judged together (the qk
// form of the probe, docs/scores.md). RoPE's identity is a statement about scores: (R_m q)^T (R_n k)
// depends on m - n only. A kernel that rotates q and k (a fused qk kernel, vLLM's rotary_emb(positions,
// query, key), transformers' apply_rotary_pos_emb(q, k, cos, sin)) can get each tensor plausibly right and
// the scores wrong: q and k crossed, k rotated by another rule or at other positions than q.
//
// Method: each side is judged alone, as a dump (judge::audit: queries {positions, q, q'} with Hq heads,
// keys {key positions, k, k'} with Hk heads), so every class the judge knows is named on the side that has
// it; then the sides are combined into the classes only the pair shows (qk_findings): q passing and k
// failing by its positions is key_positions_wrong, by any other rule key_convention_wrong; an output that is
// a rotation of the other tensor's inputs (crossed_outputs), or that changes when only the other tensor's
// inputs change (crossing_finding, the driving doors' probe), is qk_crossed. The relative-offset identity
// is measured at the score over query/key pairs with the claim's head mapping (score_identity).
// Covered by tests/judge/scores_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ropecheck/config.hpp"
#include "ropecheck/judge/judge.hpp"

namespace ropecheck::judge {

// The claim's grouping of query heads onto key heads: query head h reads key head h / (q_heads / k_heads)
// (transformers' repeat_kv in modeling_llama.py repeats each key head n_rep = q_heads / k_heads times,
// consecutively). Throws std::invalid_argument when k_heads does not divide q_heads.
[[nodiscard]] int key_head_of(int q_head, int q_heads, int k_heads);

// The relative-offset identity at the score. For a query token (position m) and a key token (position n),
// every query head h and its key head g: s = <q'_h, k'_g> over the rotated coordinates must equal
// s* = af^2 <q_h, R(n - m) k_g> (exactly, by the MPFR reference); the violation is |s - s*| / (af^2 |q_h| |k_g|).
// Its allowance follows from each side's (judge::allowance, error_model.hpp): coordinate j of q' is within
// A_q(i) af (|q_a| + |q_b|) of exact, i its band and (a, b) its pair, and |k*_j| <= af (|k_a| + |k_b|), so
//   |s - s*| <= sum_j |dq_j| |k*_j| + |q*_j| |dk_j| + |dq_j| |dk_j|
//            <= af^2 sum over pairs i of 2 (|q_a| + |q_b|) (|k_a| + |k_b|) (A_q(i) + A_k(i) + A_q(i) A_k(i))
// with A_q(i) = allowance at (m, band i), A_k(i) at (n, band i) (M-RoPE: the largest of the token's rows).
// A correct pair of sides is within it by construction: the ratio is <= 1 whenever both sides pass.
// Pairs: every query token (at most 512, spread) with the key of the smallest position, the key at its own
// position and the key just before it in position order.
struct score_identity {
  double violation = 0;    // the largest |s - s*| / (af^2 |q| |k|) (infinity for a non-finite score)
  double worst_ratio = 0;  // the largest |s - s*| / allowance (<= 1: within it)
  std::int64_t m = 0, n = 0;  // where the worst ratio is
  int q_head = 0;
  std::int64_t pairs = 0;  // (query, key, head) triples measured
};
[[nodiscard]] score_identity measure_score_identity(const dump& queries, const dump& keys, const rope_config& claimed);

// qk_crossed from the outputs alone: coordinates of one side's outputs that are the claimed rotation of the
// other side's inputs (query head h against key head key_head_of(h) or h mod Hk; key head g against the query
// heads reading it or g) at >= 90% of (token, head) cells, while fewer than 10% are their own input's rotation,
// counting the cells where the two predictions differ by more than the allowance (judge::allowance) of each.
// The queries and keys must be the same tokens (the same positions, one call's q and k). seq_len as audit's.
namespace detail {
// A coordinate is crossed when at least kCrossedOther of its cells are the other side's rotation and fewer
// than kCrossedOwn its own (random inputs k/128 make a chance match within the allowance rare: a whole
// coordinate matching is no accident, and a kernel right on its own inputs is never called crossed).
// Only cells whose two predictions differ by more than both allowances count, and a coordinate needs
// kCrossedCells of them to be decided.
inline constexpr double kCrossedOther = 0.9, kCrossedOwn = 0.1;
inline constexpr std::int64_t kCrossedCells = 16;
[[nodiscard]] constexpr bool coordinate_crossed(double other_fraction, double own_fraction) noexcept {
  return other_fraction >= kCrossedOther && own_fraction < kCrossedOwn;
}
}  // namespace detail
[[nodiscard]] std::optional<finding> crossed_outputs(const dump& queries, const dump& keys, const rope_config& claimed,
                                                     std::int64_t seq_len = 0);

// qk_crossed from the driving doors' probe: the same calls made with the other tensor's inputs replaced
// (q_out_other_k: q's outputs when k was other keys; k_out_other_q: k's outputs when q was other queries)
// must give bitwise the same outputs. Values widened exactly, [tokens][heads][head_dim]. Names how many values
// moved and the first (token, position, head, coordinate), for each side that depends on the other.
[[nodiscard]] std::optional<finding> crossing_finding(std::span<const double> q_out, std::span<const double> q_out_other_k,
                                                      std::span<const double> k_out, std::span<const double> k_out_other_q,
                                                      std::span<const std::int64_t> positions, int q_heads, int k_heads,
                                                      int head_dim);

// The qk form's findings, most important first: `crossed` (qk_crossed) when given; then, when the queries
// pass and the keys fail, key_positions_wrong (the keys' first finding a positions class: offset, constant,
// wrong tokens) or key_convention_wrong (any other rule: layout, base, scaling, rotary dim, heads, attention
// factor, direction, M-RoPE rows), with the keys' sentence as the evidence; then each side's own findings,
// their sentences prefixed "queries: " / "keys: " ("queries and keys: " for one finding both sides give).
[[nodiscard]] std::vector<finding> qk_findings(const verdict& queries, const verdict& keys,
                                               const std::optional<finding>& crossed = std::nullopt);

// The keys after a context shift or an eviction that renumbers positions: keys the kernel rotated at n and cached,
// then re-rotated by the kernel's shift to n + delta (llama.cpp's K-shift: llama_memory_seq_add(..., -n_discard)
// then ggml_rope_ext on the cached K with the per-cell shift, src/llama-kv-cache.cpp build_rope_shift; transformers'
// SinkCache re-rotates its keys the same way), judged as keys at n + delta (judge::audit of {n + delta, k, shifted}).
// Its findings: a positions class is key_positions_wrong (a shift that left the keys where they were is an offset
// of -delta), another rule key_convention_wrong, the rest the keys' own classes; every sentence says the shift.
[[nodiscard]] std::vector<finding> shift_findings(const verdict& shifted, std::int64_t delta);

struct qk_verdict {
  bool pass = false;  // both sides pass and nothing is crossed
  verdict queries, keys;
  score_identity score;
  std::vector<finding> findings;  // qk_findings
};

// The whole qk judgement of one set of calls: queries and keys (same tokens and positions, Hq and Hk heads,
// Hk dividing Hq), each audited, crossed_outputs tested, the score identity measured. Throws
// std::invalid_argument on inconsistent dumps (sizes, head_dim, heads, positions or dtypes that differ).
[[nodiscard]] qk_verdict audit_qk(const dump& queries, const dump& keys, const rope_config& claimed,
                                  const audit_options& opt = {});

}  // namespace ropecheck::judge
