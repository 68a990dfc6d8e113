// judge/src/bias_internal.hpp — the pieces of the bias judge (ropecheck/judge/bias.hpp), internal to ropecheck::judge:
//   bias_probe.cpp     make_bias_probe (ALiBi's calls; T5's via t5_windows) and bias_evidence_of_attention
//   bias_alibi.cpp     judge_alibi: the slopes fitted per head and the hypotheses that name an ALiBi bug
//   bias_t5.cpp        t5_windows and judge_t5: the offsets that share a score against the claim's buckets
//   bias_judge.cpp     judge_bias: the dispatch on the claim's scheme
#pragma once

#include <cstdint>
#include <vector>

#include "ropecheck/judge/bias.hpp"

namespace ropecheck::judge::detail {

// The claim's ALiBi (claimed.alibi) against the evidence.
[[nodiscard]] bias_verdict judge_alibi(const bias_evidence& e, const alibi_claim& claimed, const audit_options& opt);

// The claim's T5 buckets (claimed.t5) against the evidence: which offsets share a score.
[[nodiscard]] bias_verdict judge_t5(const bias_evidence& e, const t5_claim& claimed, const audit_options& opt);

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
