// ropecheck/table_config.hpp — a Hugging Face config.json of a family that adds a position vector to the tokens at the
// input (a sinusoid: Marian, Pegasus, M2M100/NLLB, XGLM, Speech2Text, Whisper's encoder, DistilBERT with
// sinusoidal_pos_embds; a learned table: GPT-2, GPT-BigCode, BERT, RoBERTa, DistilBERT, OPT, BioGPT, BART, mBART,
// PLBart, Blenderbot, Whisper's decoder) read into the table claim of the stack asked (table_claim.hpp).
//
// Declarations only: the reader is config/src/config_json_table*.cpp. As for RoPE and the score biases, the claim is
// never a guess: every fact comes from the file, the family's class default (cited) or its modeling code (cited),
// recorded with its source (printed by `ropecheck explain`). A class default ropecheck has not read is required from
// the file. A key naming another positional scheme the family does not read (rope*, rotary*, alibi*, relative_*) is
// an error naming it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ropecheck/claim.hpp"
#include "ropecheck/table_claim.hpp"

namespace ropecheck {

struct table_declaration {
  std::optional<std::string> stack;  // --stack encoder|decoder (encoder-decoder families; default encoder)
};

struct table_config_parse {
  table_claim claim;               // of the stack asked (no weights: a door reads them from --table-weights)
  std::string model_type, family, via;
  std::string stack;               // "" (one stack), "encoder", "decoder"
  ropecheck::claim info;           // family and the facts of the claim with their sources (claim_lines)
  std::vector<std::string> notes;  // decisions, each with its source
};

// The model types whose residual stream takes an absolute position vector, as ropecheck reads them
// (explain --list-tables).
struct table_family_row {
  const char* model_type;
  const char* family;
  const char* scheme;  // "sinusoidal", "learned", or "encoder sinusoidal, decoder learned"
  const char* how;     // one line: the rule and where it lives (file and function)
};
[[nodiscard]] const std::vector<table_family_row>& table_families();

// The table claim of a config.json object whose model type adds an absolute position vector; std::nullopt when it
// does not (a RoPE or bias family). Throws config_error naming the field for a claim it cannot make.
[[nodiscard]] std::optional<table_config_parse> parse_table_config(const nlohmann::json& j, const std::string& source = "",
                                                                   const table_declaration& decl = {});
[[nodiscard]] std::optional<table_config_parse> load_table_config(const std::filesystem::path& path,
                                                                  const table_declaration& decl = {});

}  // namespace ropecheck
