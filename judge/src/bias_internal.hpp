// judge/src/bias_internal.hpp — the pieces of the bias judge (ropecheck/judge/bias.hpp), internal to ropecheck::judge:
//   bias_probe.cpp     make_bias_probe (ALiBi's calls; T5's via t5_windows) and bias_evidence_of_attention
//   bias_alibi.cpp     judge_alibi: the slopes fitted per head and the hypotheses that name an ALiBi bug
//   bias_t5.cpp        t5_windows and judge_t5: the offsets that share a score against the claim's buckets
//   bias_t5_table.cpp  judge_t5_table: the scores against T5's learned table when the user gives it
//   bias_judge.cpp     judge_bias: the dispatch on the claim's scheme
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ropecheck/judge/bias.hpp"

namespace ropecheck::judge::detail {

// The claim's ALiBi (claimed.alibi) against the evidence.
[[nodiscard]] bias_verdict judge_alibi(const bias_evidence& e, const alibi_claim& claimed, const audit_options& opt);

// The claim's T5 buckets (claimed.t5) against the evidence: which offsets share a score.
[[nodiscard]] bias_verdict judge_t5(const bias_evidence& e, const t5_claim& claimed, const audit_options& opt);

// One row per (head, m, form): the evidence's rows of one query chained on their shared keys (bias_t5.cpp). A
// chained key's allowance carries the shared key's two; each key's allowance is its difference's from the row's
// first reference key, so two keys' difference is within the sum of theirs.
[[nodiscard]] std::vector<bias_row> chain_rows(const bias_evidence& e);

// The values of T5's table when the claim gives it (claimed.table non-empty), on rows whose partition the claim
// already explains: each key's score minus the row's reference key's against the table's entries at their
// buckets, within the read-out's allowance and the table and score rounded in the evidence's dtype (error
// model 8b, 8c). Fills v (pass, worst figures, a finding naming the first hypothesis that explains every row).
void judge_t5_table(const std::vector<bias_row>& rows, const bias_evidence& e, const t5_claim& claimed, bias_verdict& v);

// The row's reference key: its largest score (the largest weight's, the read-out's reference).
[[nodiscard]] inline std::size_t ref_of(const bias_row& r) {
  return static_cast<std::size_t>(std::max_element(r.s.begin(), r.s.end()) - r.s.begin());
}

// x rounded to nearest even at `digits` significant bits (bf16 8, fp16 11; no exponent range): a bias or table
// held in a 16-bit type (bias_low_precision's hypotheses).
[[nodiscard]] inline double round_to_digits(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int ex = 0;
  const double mant = std::frexp(x, &ex);
  return std::ldexp(std::nearbyint(std::ldexp(mant, digits)), ex - digits);
}

// The head_dim d (of 32, 64, 80, 96, 128, 256) whose 1/sqrt(d) a fitted factor c is within 1e-3 of (negative:
// sqrt(d), the inverse), 0 for none: a bias scaled with the scores, or missing that scale (bias_scaled).
[[nodiscard]] inline int head_dim_scale_of(double c) {
  for (const int d : {32, 64, 80, 96, 128, 256}) {
    const double r = std::sqrt(static_cast<double>(d));
    if (std::fabs(c * r - 1) < 1e-3) return d;
    if (std::fabs(c / r - 1) < 1e-3) return -d;
  }
  return 0;
}

// One call of the bias probe: the query at m, its keys at first..last (inclusive, contiguous).
struct key_window {
  std::int64_t m = 0, first = 0, last = 0;
  friend bool operator==(const key_window&, const key_window&) = default;
};

// T5's calls: for each query position of the probe, windows of at most max_keys keys that together cover every
// offset n - m from 0 to past max_distance (both signs when bidirectional), consecutive windows of one query
// sharing one key (so their rows chain into one row up to one constant). Positions stay >= 0 and <= max_position
// (0: no limit).
[[nodiscard]] std::vector<key_window> t5_windows(const t5_claim& c, int max_keys, std::int64_t max_position);

}  // namespace ropecheck::judge::detail
