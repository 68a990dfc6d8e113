// ropecheck/bias_config.hpp — a Hugging Face config.json of a family whose attention adds a score-matrix bias
// (ALiBi: BLOOM, MPT, Falcon with alibi true, ...; T5's bucketed bias: T5, mT5, UMT5, LongT5, Switch
// Transformers, Pix2Struct, UDOP, ...) read into the bias claim of the layer and stack asked (bias_claim.hpp).
//
// Declarations only: the reader is compiled into ropecheck::config (config/src/config_json_bias*.{hpp,cpp}). As
// for RoPE (config_json.hpp), the claim is never a guess: every fact comes from the file, the family's class
// default for a key the file leaves out, or the family's modeling code, and records which (facts with
// their sources, printed by `ropecheck explain`). A model type whose bias rule ropecheck cannot derive is refused
// by name. A key the family does not read that names the scheme (alibi*, relative_attention*, rope*/rotary*
// beside a bias) is an error naming it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ropecheck/bias_claim.hpp"
#include "ropecheck/claim.hpp"

namespace ropecheck {

// What the user declared on top of the file (flags of probe, audit, explain; the Python door's claim keys).
struct bias_declaration {
  std::optional<int> head_offset;       // --head-offset: the first global head this kernel holds (a TP rank's)
  std::optional<int> local_heads;       // --local-heads: the heads it holds (default: the rest from head_offset)
  std::optional<std::string> stack;     // --stack encoder|decoder (encoder-decoder families: T5's; default encoder)
  std::optional<int> layer;             // --layer: the layer of the stack (per-layer schemes: UMT5)
  engine_reading engine = engine_reading::transformers;  // --engine vllm (Falcon: slopes in fp32, not bf16)
};

// One attention layer of the stack asked, as far as the bias is concerned.
struct bias_layer {
  int index = 0;
  std::string kind;  // "alibi", "t5 computes" (the layer owns relative_attention_bias), "t5 shared" (reuses the
                     // first layer's position_bias), "none" (cross-attention, or a layer without the bias)
  std::string why;   // the rule with its source
};

struct bias_config_parse {
  bias_claim claim;                  // of the layer and stack asked
  std::string model_type, family, via;
  std::string stack;                 // "" (decoder-only), "encoder", "decoder"
  int layer = 0;                     // the layer the claim is of
  int head_dim = 0;                  // the attention's head dim (hidden_size / heads; T5: d_kv): the probe's q, k width
  std::vector<bias_layer> layers;    // the stack's layers (empty when the config gives no layer count)
  ropecheck::claim info;                      // family, layer and the facts of the claim with their sources (claim_lines)
  std::vector<std::string> notes;    // decisions, each with its source
};

// The model types whose attention takes a score-matrix bias, as ropecheck reads them (explain --list-bias).
struct bias_family_row {
  const char* model_type;
  const char* family;
  bias_scheme scheme;
  const char* how;     // one line: the rule and where it lives (file and function)
};
[[nodiscard]] const std::vector<bias_family_row>& bias_families();

// The bias claim of a config.json object whose model type adds a score-matrix bias; std::nullopt when the family
// does not (a RoPE family: parse_hf_config_with_notes reads it). Throws config_error naming the field for a bias
// claim it cannot make (a bias family's key it does not understand, alibi true with a RoPE field, a bucket count
// below 4, a head offset past the global head count, ...).
[[nodiscard]] std::optional<bias_config_parse> parse_bias_config(const nlohmann::json& j, const std::string& source = "",
                                                                 const bias_declaration& decl = {});
[[nodiscard]] std::optional<bias_config_parse> load_bias_config(const std::filesystem::path& path,
                                                                const bias_declaration& decl = {});

}  // namespace ropecheck
