// tools/audit/bias_outputs.hpp — `ropecheck audit OUTPUTS.safetensors` when the probe was made for a score-matrix bias
// claim (ALiBi, T5's buckets: `ropecheck probe --form attention --config <a bias family's config.json>`; docs/bias.md):
// the attention outputs read back as biases (ropecheck/judge/bias.hpp) and judged against the claim.
//
// The file is an attention outputs file (attention_outputs.hpp reads it) whose __metadata__ says "scheme" (alibi or
// t5). `audit --scores` of a bias family's score or weight dump is reported by the same functions (door "scores").
// The probe is made again from the claim and the file's metadata and must be the file's, bit for bit.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attention_outputs.hpp"
#include "ropecheck/bias_config.hpp"
#include "ropecheck/judge/bias.hpp"

namespace ropecheck::audit {

// The bias probe the claim gives for the file's metadata (judge::make_bias_probe), checked equal to the file's (calls,
// positions, q, k, v); input_error saying which tensor differs otherwise.
[[nodiscard]] judge::attention_probe matching_bias_probe(const std::filesystem::path& file, const attention_outputs_contents& c,
                                                        const bias_claim& claimed);

struct bias_report {
  std::string door = "attention";  // "attention" (outputs of the bias probe) or "scores" (`audit --scores` of a dump)
  std::string version, command, source, rerun;
  std::map<std::string, std::string> metadata;
  bias_config_parse claimed;
  std::vector<std::string> notes;
  judge::bias_verdict v;
  std::optional<judge::finding> nondeterministic;  // attention.o_again differs from attention.o
  bool passed = false;
  double seconds = 0;
};

[[nodiscard]] std::string bias_summary(const bias_report& r);
[[nodiscard]] std::string bias_json(const bias_report& r);
[[nodiscard]] std::string bias_junit(const bias_report& r);

}  // namespace ropecheck::audit
