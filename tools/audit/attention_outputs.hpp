// tools/audit/attention_outputs.hpp — `ropecheck audit OUTPUTS.safetensors` on the outputs file of the probe's
// attention form (`ropecheck probe --form attention`; docs/scores.md): RoPE inside an attention kernel, whose
// outputs o = softmax(scale q'k'^T) v are read back as scores by the judge (ropecheck/judge/readout.hpp).
//
// The file holds the probe's tensors (tools/probe/probe_file.hpp probe_tensors_attention) with __metadata__
// form "attention", and the door's outputs attention.o [NQ, HQ, DV] and attention.o_again (every call made twice:
// the repeat-call check of every door). The probe is made again from the claim and the file's metadata and must be
// the file's, bit for bit: outputs of other inputs are not judged against this design.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit_output.hpp"
#include "ropecheck/claim.hpp"
#include "ropecheck/config.hpp"
#include "ropecheck/judge/readout.hpp"

namespace ropecheck::audit {

struct attention_outputs_contents {
  std::map<std::string, std::string> metadata;
  int heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  double softmax_scale = 0;
  std::int64_t max_position = 0;
  std::string dtype;                    // o's ("float32", "bfloat16", ...)
  std::vector<std::int64_t> calls, key_calls, q_positions, k_positions;
  std::vector<double> q, k, v, o, o_again;  // widened exactly
};

// The metadata form is "attention" (a safetensors outputs file; false for anything else).
[[nodiscard]] bool is_attention_outputs(const std::filesystem::path& file);

// Reads and checks the layout (every tensor present, shapes [NQ, HQ, D], [NK, HK, D], [NK, HK, DV], [NQ, HQ, DV],
// o and o_again in q's dtype, the metadata's numbers); input_error naming the tensor or field otherwise.
[[nodiscard]] attention_outputs_contents read_attention_outputs(const std::filesystem::path& file);

// The probe the claim gives for the file's metadata (judge::make_attention_probe), checked equal to the file's
// (calls, positions, q, k, v); input_error saying which tensor differs otherwise.
// Throws input_error naming the first of the file's calls, positions, q, k, v that differ from p (the probe the
// claim gives, `what` saying which: "" for RoPE's, "bias " for a bias claim's); shared by both matching probes.
void check_same_probe(const std::filesystem::path& file, const attention_outputs_contents& c, const judge::attention_probe& p,
                      const std::string& what);

[[nodiscard]] judge::attention_probe matching_probe(const std::filesystem::path& file, const attention_outputs_contents& c,
                                                   const rope_config& claimed);

struct attention_report {
  std::string version, command, source, rerun, claimed_from;
  std::map<std::string, std::string> metadata;
  rope_config claimed;
  ropecheck::claim claim_info;
  std::vector<std::string> notes;
  judge::attention_verdict v;
  std::optional<judge::finding> nondeterministic;  // attention.o_again differs from attention.o
  bool passed = false;
  double seconds = 0;
};

[[nodiscard]] std::string attention_summary(const attention_report& r);
[[nodiscard]] std::string attention_json(const attention_report& r);
[[nodiscard]] std::string attention_junit(const attention_report& r);

}  // namespace ropecheck::audit
