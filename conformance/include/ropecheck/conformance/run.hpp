// ropecheck/conformance/run.hpp — the checks of the conformance suite on one kernel, as results
// (the compiled library ropecheck::conformance; ropecheck/conformance.hpp turns them into GoogleTest
// tests). Light header: std types and kernel.hpp.
//
// The judge (ropecheck/judge/judge.hpp, the one every door of ropecheck calls) on the probe set
// (ropecheck/judge/probe.hpp: positions 0..63, +-8 around 256, 2048, 4096, 65504 and 2^24, 8 per octave
// to 2 max_position_embeddings; inputs k/128, exact in every dtype) applied by the kernel in two forms:
//   prefill  each run of consecutive probe positions in one call (at most 64 tokens; an isolated
//            position p as the two tokens p - 1, p), applied twice: the second answer must be
//            bitwise the first's
//   decode   every probe token in a call of its own (one token, as a decode step)
// and the property suite (RapidCheck, shrinking; bounds from the judge's allowance), each property
// under the drift rule of `ropecheck audit --plugin` (an excess that is fp32 angle drift only is a
// warning; strict fails it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/conformance/kernel.hpp"

namespace ropecheck::conformance {

enum class status { passed, warning, failed, skipped };

struct outcome {
  conformance::status status = conformance::status::failed;
  std::string message;                  // multi-line; what to read first, then figures, then how to replay
  std::vector<std::string> bug_classes; // the judge's findings (judge checks), most evidence first
};

enum class call_form { prefill, decode };

// The judge's verdict on the probe set applied in `form`. `test_id` (e.g. GoogleTest's full test
// name) goes into the replay line.
[[nodiscard]] outcome judge_probe(const kernel& k, call_form form, const std::string& test_id = "");

// One property by name (property_names()); its reproduce string replays exactly its shrunk
// counterexample: RC_PARAMS="<reproduce>" <test binary> --gtest_filter=<test_id>.
[[nodiscard]] outcome check_property(const kernel& k, std::string_view property, const std::string& test_id = "");

// Queries (apply) and keys (apply_k, else apply) together, at the score: the property
// query_key_scores_match_reference (conformance/drivers/score_properties.hpp: <R(m) q, R(n) k> against the
// reference's for query/key positions drawn independently, query head h against key head h / (Hq / Hk), within
// the allowance derived from each side's) and the judge's qk form (ropecheck/judge/scores.hpp audit_qk) on the
// probe set in decode calls, queries of probe_heads heads and keys of kv_heads. Fails when the property fails
// or the judge names a class only the pair shows (key_positions_wrong, key_convention_wrong, qk_crossed); the
// bug classes are the judge's qk findings. A fault both sides share (scores right, each tensor wrong) is left
// to the other checks.
[[nodiscard]] outcome check_key_scores(const kernel& k, const std::string& test_id = "");
inline constexpr const char* key_scores_check = "query_key_scores_match_reference";

// The properties, in the order the suite runs them.
[[nodiscard]] std::vector<std::string> property_names();

}  // namespace ropecheck::conformance
