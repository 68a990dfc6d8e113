// tools/audit/score_dump_input.hpp — `ropecheck audit --scores DUMP`: attention scores or weights as data
// (ropecheck/judge/score_dump.hpp), read from a .safetensors file or a directory of .npy files, and what the
// audit prints and writes. The contract (docs/scores.md, "Scores and weights as data"):
//   q, k                 [Tq, Hq, D], [Tk, Hk, D] (or with a leading batch of 1): the inputs BEFORE RoPE
//   q_positions, k_positions   integers [Tq], [Tk] (or [1, T])
//   weights | logits     [Hq, Tq, Tk] (or [1, Hq, Tq, Tk]): softmax weights (transformers' output_attentions), or
//                        the logits with their mask (-inf or finfo.min where masked); exactly one of the two
// __metadata__ (or the .npy directory's ropecheck.json "metadata") may say "softmax_scale" (default: the claim's
// head_dim^-0.5). Every fault is an input_error naming the tensor and the shape it expected.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ropecheck/claim.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/judge/score_dump.hpp"

namespace ropecheck::audit {

struct loaded_scores {
  judge::score_dump d;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> notes;
};

[[nodiscard]] loaded_scores load_score_dump(const std::filesystem::path& path, const std::optional<std::string>& declared_dtype);

struct scores_report {
  std::string version, command, source, claimed_from, rerun;
  rope_config claimed;
  ropecheck::claim claim_info;
  std::vector<std::string> notes;
  int q_heads = 0, k_heads = 0, q_tokens = 0, k_tokens = 0;
  std::string what, dtype;
  judge::score_dump_verdict v;
  double seconds = 0;
};

[[nodiscard]] std::string scores_summary(const scores_report& r);
[[nodiscard]] std::string scores_json(const scores_report& r);
[[nodiscard]] std::string scores_junit(const scores_report& r);

}  // namespace ropecheck::audit
