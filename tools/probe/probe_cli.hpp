// tools/probe/probe_cli.hpp — the `probe` subcommand: the judge's probe set and call plan for a claimed
// convention, written as a file for a door in another language (probe_file.hpp; docs/python.md).
//
//   ropecheck probe (--config config.json [--layer N] [--indexer] | --preset NAME | --head-dim D [flags])
//                   --dtype float32|bfloat16|float16|float64 [--seed N] [--heads N] [--max-position N]
//                   [--form x | --form qk --kv-heads N | --form attention --kv-heads N [--value-dim DV]
//                   [--softmax-scale S]] --out probe.safetensors
//
// --form x (the default): one tensor x through fn(x, positions) -> y. --form qk: queries q (--heads) and keys k
// (--kv-heads, dividing --heads) through fn(q, k, positions) -> (q', k'), judged together (docs/scores.md).
// --form attention: RoPE inside attention, fn(q, k, v, q_positions, k_positions) -> o, the scores read from o
// (ropecheck/judge/readout.hpp); --softmax-scale is the claim's scale (default head_dim^-0.5), --value-dim v's width;
// --heads and --kv-heads default to 8 and 2. A config whose family adds a score-matrix bias (ALiBi, T5's buckets;
// bias_config.hpp) is probed in the attention form only, with the bias design (ropecheck/judge/bias.hpp): query
// heads the claim's held heads (--heads, if given, must say the same), key heads --kv-heads (default: as many).
//
// The claim is stated explicitly (a config, a preset, or convention flags with --head-dim): it is the
// convention the outputs are judged against, and the file records the arguments that state it
// (__metadata__ "claim_args"), which `ropecheck audit` of the outputs file is then given. --max-position
// is the kernel's last position (a cache of N rows: N - 1): the probe positions past it are not asked,
// as for a plugin declaring max_position, and the file's "notes" say which. Exit 0 written, 2 bad input.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "../cli_common.hpp"

namespace ropecheck::probe {

class probe_command {
 public:
  void add_to(CLI::App& app);
  [[nodiscard]] bool parsed() const { return app_->parsed(); }
  int run(const std::string& command);
  // A bias claim (ALiBi, T5): the attention form's bias probe (ropecheck/judge/bias.hpp).
  int run_bias(const bias_config_parse& b, const std::string& command);
  // An absolute position table's claim: the positions to ask (ropecheck/judge/table.hpp make_table_probe).
  int run_table(const table_config_parse& t, const std::string& command);

 private:
  CLI::App* app_ = nullptr;
  cli::convention_flags conv_;
  std::string dtype_, out_;
  std::optional<std::uint64_t> seed_;
  std::optional<int> heads_;  // default: 4 (x, qk), 8 (attention with RoPE), the claim's held heads (a bias claim)
  std::optional<int> kv_heads_, value_dim_;
  std::optional<double> softmax_scale_;
  std::string form_ = "x";
  std::int64_t max_position_ = 0;
  std::optional<int> table_width_;
};

// The arguments stating the claim of `f` (--config as an absolute path), as `ropecheck audit` takes them.
[[nodiscard]] std::vector<std::string> claim_arguments(const cli::convention_flags& f);

// vLLM's reading of the claim's --config (--engine vllm) as a convention line when it differs from the claim's
// (transformers' reading), "not derived without more: <why>" when it needs more flags (LongRoPE's
// --max-model-len), "" when it is the same or the claim is not read from a config or is vLLM's already. The probe
// records it (metadata vllm_reading) so the Python door notes vLLM's reading only where it differs.
[[nodiscard]] std::string vllm_reading_if_other(const cli::convention_flags& f, const rope_config& claimed,
                                                const rope_config& fallback);

}  // namespace ropecheck::probe
