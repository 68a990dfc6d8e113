// ropecheck/bias_claim.hpp — what a score-matrix scheme claims: ALiBi's linear bias and T5's bucketed bias
// (the second of the seeds' three placements of position, docs/bias.md). A bias claim is plain data that
// every door carries (config -> claim -> probe -> judge), as rope_config is for RoPE; the rules that turn it
// into the bias of one head at (query m, key n) are here, once, each citing the code it follows.
//
// Light header: no JSON, no MPFR. Covered by tests/core/bias_claim_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/positional.hpp"

namespace ropecheck {

enum class bias_scheme : std::uint8_t {
  alibi,  // -slope_h (m - n) added to the score of query m and key n (Press et al. 2021)
  t5,     // a learned value per (bucket of n - m, head) (Raffel et al. 2020; HF T5Attention.compute_bias)
};

[[nodiscard]] constexpr std::string_view to_string(bias_scheme s) noexcept { return s == bias_scheme::alibi ? "alibi" : "t5"; }

// How a family forms its H slopes (always for the global head count; a rank takes its slice).
enum class alibi_slope_rule : std::uint8_t {
  // The paper's get_slopes (ofirpress/attention_with_linear_biases), HF BLOOM's build_alibi_tensor
  // (models/bloom/modeling_bloom.py) and Falcon's (models/falcon/modeling_falcon.py, the same function):
  // n = 2^floor(log2 H); 2^(-8h/n) for h = 1..n, then 2^(-8(2k-1)/(2n)) for k = 1..H-n. positional.hpp's
  // alibi_slopes<T> is this rule.
  press,
  // MPT's gen_slopes (HF models/mpt/modeling_mpt.py build_mpt_alibi_tensor; mosaicml llm-foundry):
  // P = 2^ceil(log2 H); s_k = 2^(-k bias_max / P) for k = 1..P; when P != H the slopes are
  // concat(s[1::2], s[::2])[:H] (0-based strides). Equal to `press` when bias_max is 8.
  mpt,
};

[[nodiscard]] constexpr std::string_view to_string(alibi_slope_rule r) noexcept { return r == alibi_slope_rule::press ? "press" : "mpt"; }

// What the distance is measured as. The three differ by a per-row constant or by the keys after the query:
enum class alibi_distance : std::uint8_t {
  relative,      // -slope (m - n): the paper's causal form (keys n > m are masked)
  key_position,  // +slope n: BLOOM's and Falcon's (HF build_alibi_tensor: slopes * cumsum(mask)); equals
                 // -slope (m - n) + slope m, a per-row constant softmax removes: the same attention
  symmetric,     // -slope |m - n|: an encoder's, and flash-attn's non-causal alibi (|i + sk - sq - j|)
};

[[nodiscard]] constexpr std::string_view to_string(alibi_distance d) noexcept {
  switch (d) {
    case alibi_distance::relative: return "relative";
    case alibi_distance::key_position: return "key_position";
    case alibi_distance::symmetric: return "symmetric";
  }
  return "?";
}

struct alibi_claim {
  alibi_slope_rule rule = alibi_slope_rule::press;
  double bias_max = 8;      // MPT's alibi_bias_max (the rule `mpt` only)
  int heads = 0;            // the model's global head count (the slopes' H)
  int head_offset = 0;      // the first global head this kernel holds (a tensor-parallel rank: rank x local heads)
  int local_heads = 0;      // the heads this kernel holds (0: heads - head_offset)
  double bias_scale = 1;    // the bias is multiplied by this before it meets the scores (HF and vLLM Falcon:
                            // 1/sqrt(head_dim), applied with the scores' softmax scale; BLOOM, MPT: 1)
  bool slopes_bf16 = false; // the slopes are rounded to bf16 before use (HF Falcon build_alibi_tensor:
                            // slopes[..., None].bfloat16() * arange_tensor); vLLM's Falcon keeps them fp32
  alibi_distance distance = alibi_distance::relative;
  [[nodiscard]] int held_heads() const noexcept { return local_heads > 0 ? local_heads : heads - head_offset; }
  friend bool operator==(const alibi_claim&, const alibi_claim&) = default;
};

struct t5_claim {
  int num_buckets = 32;      // relative_attention_num_buckets
  int max_distance = 128;    // relative_attention_max_distance
  bool bidirectional = true; // the encoder's (not is_decoder); a decoder's self-attention is causal
  int heads = 0;
  // The learned values, when the user gives them (--t5-table; Python claim={"t5_table": ...}): [num_buckets][heads]
  // row-major, as transformers' relative_attention_bias (nn.Embedding(num_buckets, n_heads)).weight holds them
  // (models/t5/modeling_t5.py T5Attention.__init__). Empty: the judge checks which offsets share a bucket only.
  std::vector<double> table;
  friend bool operator==(const t5_claim&, const t5_claim&) = default;
};

// The claim a door judges a score-matrix scheme against.
struct bias_claim {
  bias_scheme scheme = bias_scheme::alibi;
  alibi_claim alibi;  // scheme alibi
  t5_claim t5;        // scheme t5
  friend bool operator==(const bias_claim&, const bias_claim&) = default;
};

// Throws std::invalid_argument naming the field: heads < 1, a head offset outside [0, heads), local heads past
// the global count, a bias_max not > 0, a bias_scale not finite and > 0, num_buckets < 2 (T5's rule halves
// the buckets and halves again: fewer than 4 leave no exact bucket; HF's code divides by zero below 4, so < 4
// is refused too), max_distance <= num_buckets / 2 (T5's log-spaced buckets need max_distance > max_exact), a
// T5 table not of num_buckets x heads finite values.
inline void validate(const bias_claim& c) {
  const auto bad = [](const std::string& field, const std::string& why) { throw std::invalid_argument(field + ": " + why); };
  if (c.scheme == bias_scheme::alibi) {
    const alibi_claim& a = c.alibi;
    if (a.heads < 1) bad("heads", std::to_string(a.heads) + ", need at least 1 (the model's global head count)");
    if (a.head_offset < 0 || a.head_offset >= a.heads)
      bad("head_offset", std::to_string(a.head_offset) + " is past the global head count " + std::to_string(a.heads));
    if (a.local_heads < 0 || a.head_offset + a.held_heads() > a.heads)
      bad("local_heads", std::to_string(a.held_heads()) + " heads from head " + std::to_string(a.head_offset) +
                             " run past the global head count " + std::to_string(a.heads));
    if (!(a.bias_max > 0) || !std::isfinite(a.bias_max)) bad("alibi_bias_max", std::to_string(a.bias_max) + ", need a finite value > 0");
    if (!(a.bias_scale > 0) || !std::isfinite(a.bias_scale)) bad("bias_scale", std::to_string(a.bias_scale) + ", need a finite value > 0");
  } else {
    const t5_claim& t = c.t5;
    if (t.heads < 1) bad("heads", std::to_string(t.heads) + ", need at least 1");
    if (t.num_buckets < 4)
      bad("relative_attention_num_buckets", std::to_string(t.num_buckets) +
                                                ", need at least 4 (T5's rule halves the buckets per direction and again "
                                                "for the exact ones; HF's _relative_position_bucket divides by zero below)");
    const int exact = (t.bidirectional ? t.num_buckets / 2 : t.num_buckets) / 2;
    if (t.max_distance <= exact)
      bad("relative_attention_max_distance", std::to_string(t.max_distance) + ", need more than the exact buckets' " +
                                                 std::to_string(exact) + " (log(max_distance / max_exact) divides)");
    if (!t.table.empty() && t.table.size() != static_cast<std::size_t>(t.num_buckets) * static_cast<std::size_t>(t.heads))
      bad("t5_table", std::to_string(t.table.size()) + " values, need num_buckets x heads = " + std::to_string(t.num_buckets) +
                          " x " + std::to_string(t.heads) + " (relative_attention_bias.weight)");
    for (const double x : t.table)
      if (!std::isfinite(x)) bad("t5_table", "a value is NaN or infinite");
  }
}

// The slopes of all `heads` global heads by `rule` (bias_max: the rule `mpt` only), in double: exact powers of
// two where the exponent is an integer, else exp2 of the exact exponent (< 1 ulp).
[[nodiscard]] inline std::vector<double> global_alibi_slopes(alibi_slope_rule rule, int heads, double bias_max = 8) {
  if (heads < 1) throw std::invalid_argument("heads: " + std::to_string(heads) + ", need at least 1");
  if (rule == alibi_slope_rule::press) {
    const std::vector<long double> s = alibi_slopes<long double>(heads);
    return {s.begin(), s.end()};
  }
  int P = 1;
  while (P < heads) P *= 2;  // 2^ceil(log2 H)
  std::vector<double> s;
  for (int k = 1; k <= P; ++k) s.push_back(std::exp2(-static_cast<double>(k) * bias_max / P));
  if (P == heads) return s;
  std::vector<double> out;
  for (int i = 1; i < P; i += 2) out.push_back(s[static_cast<std::size_t>(i)]);
  for (int i = 0; i < P; i += 2) out.push_back(s[static_cast<std::size_t>(i)]);
  out.resize(static_cast<std::size_t>(heads));
  return out;
}

// bf16's round to nearest even of a finite double (the slopes' rounding under slopes_bf16).
[[nodiscard]] inline double round_to_bf16(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  const double m = std::frexp(x, &e);              // x = m 2^e, 0.5 <= |m| < 1
  const double scaled = std::ldexp(m, 8);          // 8 significant bits
  return std::ldexp(std::nearbyint(scaled), e - 8);  // nearbyint: ties to even in the default rounding mode
}

// The slopes of the heads the kernel holds (claim.alibi's slice of the global heads), as the claim applies them:
// rounded to bf16 when slopes_bf16, times bias_scale.
[[nodiscard]] inline std::vector<double> claimed_slopes(const alibi_claim& a) {
  const std::vector<double> g = global_alibi_slopes(a.rule, a.heads, a.bias_max);
  std::vector<double> out;
  for (int h = 0; h < a.held_heads(); ++h) {
    double s = g.at(static_cast<std::size_t>(a.head_offset + h));
    if (a.slopes_bf16) s = round_to_bf16(s);
    out.push_back(s * a.bias_scale);
  }
  return out;
}

// ALiBi's bias of head `slope` at query m and key n under `distance`, in double (exact for |m - n| < 2^53).
[[nodiscard]] inline double alibi_bias_value(double slope, alibi_distance distance, std::int64_t m, std::int64_t n) {
  switch (distance) {
    case alibi_distance::relative: return -slope * static_cast<double>(m - n);
    case alibi_distance::key_position: return slope * static_cast<double>(n);
    case alibi_distance::symmetric: return -slope * static_cast<double>(m > n ? m - n : n - m);
  }
  return 0;
}

// The claim in one line, as every door prints it and a probe file records it ("ALiBi press slopes of 32 heads
// (heads 16..31 held), distance key_position" / "T5 buckets 32, max_distance 128, bidirectional, 8 heads").
[[nodiscard]] inline std::string describe(const bias_claim& c) {
  const auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  if (c.scheme == bias_scheme::t5)
    return "T5 buckets " + std::to_string(c.t5.num_buckets) + ", max_distance " + std::to_string(c.t5.max_distance) + ", " +
           (c.t5.bidirectional ? "bidirectional" : "causal") + ", " + std::to_string(c.t5.heads) + " heads" +
           (c.t5.table.empty() ? "" : ", its table given");
  const alibi_claim& a = c.alibi;
  std::string s = "ALiBi " + std::string(to_string(a.rule)) + " slopes";
  if (a.rule == alibi_slope_rule::mpt) s += " (alibi_bias_max " + num(a.bias_max) + ")";
  s += " of " + std::to_string(a.heads) + " heads";
  if (a.head_offset != 0 || a.held_heads() != a.heads)
    s += " (heads " + std::to_string(a.head_offset) + ".." + std::to_string(a.head_offset + a.held_heads() - 1) + " held)";
  s += ", distance " + std::string(to_string(a.distance));
  if (a.bias_scale != 1) s += ", bias x " + num(a.bias_scale);
  if (a.slopes_bf16) s += ", slopes in bf16";
  return s;
}

// T5's bucket of key n for query m (relative position n - m), HF's float32 arithmetic (positional.hpp).
[[nodiscard]] inline int t5_bucket(const t5_claim& t, std::int64_t m, std::int64_t n) {
  return t5_relative_position_bucket(n - m, t.bidirectional, t.num_buckets, t.max_distance);
}

}  // namespace ropecheck
