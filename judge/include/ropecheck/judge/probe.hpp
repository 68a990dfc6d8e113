// ropecheck/judge/probe.hpp — the probe set: the inputs a careful dump carries, for the doors that drive
// an implementation themselves (the plugin audit, the report's verdict column, the conformance suite).
// What is judged on it is exactly what `ropecheck audit` judges on a file of the same outputs.
//
// Positions (sorted, distinct, all >= 0):
//   0..63 dense                        the line fits unwrap from here; fp32 angles exact to ~1e-5
//   +-8 around 256, 2048, 4096, 65504  bf16 / fp16 integer limits, a common training length, fp16 max
//   +-8 around 2^24                    fp32 integers run out (positions held in fp32 round)
//   8 per octave from 64 to 2 max_position_embeddings (at least to 2^17), and that end itself
// Inputs x: [tokens][heads][head_dim], each value k/128 for a random nonzero k in [-127, 127] (exactly
// representable in bf16, fp16, fp32 and fp64), drawn from a splitmix64 stream of `seed`: no
// zero, so the implied rotation of every (token, band, head) is measurable.
#pragma once

#include <cstdint>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::judge {

struct probe_set {
  std::vector<std::int64_t> positions;  // one per token (M-RoPE: row 0, the temporal/text position)
  // M-RoPE: every position row, [rows][tokens] row-major (as judge::dump::position_rows); empty for
  // 1-D RoPE, and for M-RoPE text-only tokens (every row = positions). make_probe leaves it empty (its
  // tokens are text); the plugin door adds multimodal tokens (tools/audit/plugin_limits.hpp limit_probe).
  std::vector<std::int64_t> position_rows;
  int heads = 4;
  int head_dim = 0;
  std::vector<double> x;  // tokens * heads * head_dim
  std::uint64_t seed = 0;
  [[nodiscard]] int tokens() const { return static_cast<int>(positions.size()); }
};

// The seed of the probe's inputs and of the property suites when none is asked for (RC_PARAMS="seed=N"
// or ROPECHECK_SEED; conformance/drivers/property_runner.hpp, `ropecheck probe --seed`).
inline constexpr std::uint64_t default_seed = 0x5eed2026;

// The positions of the probe set for a convention (see above).
[[nodiscard]] std::vector<std::int64_t> probe_positions(const rope_config& c);

// The whole probe set: positions for c, `heads` heads of c.head_dim coordinates, inputs from seed.
[[nodiscard]] probe_set make_probe(const rope_config& c, std::uint64_t seed, int heads = 4);

// tokens x heads x head_dim inputs as the probe draws them (each k/128, k a nonzero draw in [-127, 127] of the
// splitmix64 stream of `seed`): make_probe's x is probe_inputs(seed, ...).
[[nodiscard]] std::vector<double> probe_inputs(std::uint64_t seed, int tokens, int heads, int head_dim);

// The qk form (scores.hpp): the probe set's x are the queries; the keys and the other inputs of the crossing
// check are further draws, each from its own stream of the probe's seed (qk_stream).
enum class qk_stream : std::uint64_t { keys = 1, other_queries = 2, other_keys = 3 };
[[nodiscard]] std::uint64_t qk_seed(std::uint64_t seed, qk_stream s) noexcept;

// The qk form's inputs besides the queries (p.x, p.heads heads), [tokens][heads][head_dim] each: the keys k and
// other keys k_alt of kv_heads heads, other queries q_alt of p.heads heads, each probe_inputs of its qk_seed stream
// of p.seed. Every door that drives the qk form draws them here (`ropecheck probe --form qk`, the plugin door's
// apply_qk), so the same seed gives every door the same inputs. std::invalid_argument unless kv_heads >= 1
// divides p.heads.
struct qk_inputs {
  int kv_heads = 0;
  std::vector<double> k, q_alt, k_alt;
};
[[nodiscard]] qk_inputs make_qk_inputs(const probe_set& p, int kv_heads);

// How a door's kernel is called on the probe set; every door that drives a kernel walks the same plan
// (plan_calls), so that they judge the same calls:
//   prefill  each run of consecutive probe positions in one call, at most max_prefill_tokens a call; an
//            isolated position p (a run of one) as the two tokens (p - 1, p), or (p, p + 1) when p <= 0:
//            every prefill call has two tokens or more, so a kernel treating a one-token call as a
//            decode step is seen prefilling. The added neighbour carries the probe token's inputs.
//   decode   every probe token in a call of its own (one token a call, as a decode step after a KV cache)
// A kernel right in one form and wrong in the other (a KV-cache off-by-one rotating one-token calls at
// position + 1) is judged wrong only on that form's outputs: doors judge both.
// M-RoPE (position_rows given): the tokens of an image share their temporal position (row 0) and a
// video's frames step it by one, so "consecutive" is decided on row 0 as the kernel is given it: a
// prefill run goes on while row 0 stays or steps by +1 (one image, one video, a text run: one call
// each, as an engine prefills them; get_rope_index's jump to the text after a vision block breaks the
// run). Each call carries its tokens' slice of the rows; a prefilled isolated token's neighbour is a
// text token (every row = its position). Without rows (1-D RoPE) the plan is exactly the above.
enum class call_form { prefill, decode };

inline constexpr int max_prefill_tokens = 64;

// "prefill calls (runs of consecutive positions, 2 to 64 tokens a call)", "decode calls (one token a call)".
[[nodiscard]] const char* call_form_phrase(call_form f) noexcept;
// "prefill", "decode" (the JSON's names).
[[nodiscard]] const char* to_string(call_form f) noexcept;

// One call of the plan. Plain data (issue 23 writes the plan to a file for other languages).
struct probe_call {
  int first = 0;   // the first probe token carried (an index into probe_set::positions)
  int count = 0;   // the probe tokens carried: first .. first + count - 1, consecutive in the probe set
  // The call's positions in order: the probe tokens' and, for a prefilled isolated position, the
  // neighbour's (before it, or after it when the position is <= 0).
  std::vector<std::int64_t> positions;
  int probe_at = 0;  // index in `positions` of token `first` (1 when a neighbour precedes it, else 0)
  bool has_neighbour = false;
  std::int64_t neighbour = 0;  // the added position (when has_neighbour)
  // M-RoPE: the call's rows, [rows][positions.size()] row-major (the neighbour's column every row =
  // neighbour); empty when the probe set has no position_rows.
  std::vector<std::int64_t> position_rows;
};

// The calls applying p in `form`, in the order of p's tokens: every probe token in exactly one call.
[[nodiscard]] std::vector<probe_call> plan_calls(const probe_set& p, call_form form);

}  // namespace ropecheck::judge
