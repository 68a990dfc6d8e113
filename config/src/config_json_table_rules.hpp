// config/src/config_json_table_rules.hpp — the rule of every family whose residual stream takes an absolute position
// vector (internal to ropecheck::config): per stack, the scheme, the sinusoid's layout and denominator, how positions
// are counted, the offset, the table's rows, each with the code it was read from. The table is
// config_json_table_families.cpp; the reader that applies it is config_json_table.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_json_reader.hpp"
#include "ropecheck/table_config.hpp"

namespace ropecheck::detail::table_rules {

using json_read::reader;

struct stack_rule {
  const char* rows_key = nullptr;  // nullptr: the family has no such stack
  const char* rows_alias = nullptr;
  std::optional<std::int64_t> rows_default;
  const char* rows_default_source = "";
  bool sinusoidal = false;
  sinusoid_layout layout = sinusoid_layout::interleaved;
  bool fairseq_denominator = false;  // D = d/2 - 1 (else the paper's d/2)
  const char* values_source = "";
  std::int64_t rows_extra = 0;       // rows = rows_key + rows_extra (OPT's and BART's +2)
  bool no_end = false;               // a sinusoid evaluated (or rebuilt) at any position
  const char* rows_source = "";
  const char* pad_key = nullptr;     // the key whose value is padding_idx (pad_token_id)
  std::int64_t pad_default = -1;
  const char* pad_default_source = "";
  bool offset_from_pad = false;      // offset = pad_token_id + 1 (fairseq, RoBERTa)
  std::int64_t offset = 0;
  const char* offset_source = "";
  padding_rule padding = padding_rule::counted;
  bool padding_row_is_pad = false;   // skipped: a padding token reads row pad_token_id (else padding_row)
  std::int64_t padding_row = -1;
  bool padding_row_zero = false;
  const char* positions_source = "";
  const char* note = nullptr;
};

struct table_family {
  const char* model_type;
  const char* family;
  const char* adds;  // one line: what the family adds, for messages
  const char* width_key;
  const char* width_alias;
  std::optional<std::int64_t> width_default;
  const char* width_default_source;
  const char* scale_key;     // scale_embedding: multiplies the token term only (scale_source says where)
  const char* scale_source;
  std::vector<const char*> scheme_keys_read;
  stack_rule encoder;        // the one stack of a decoder-only or encoder-only family
  stack_rule decoder;        // rows_key nullptr: none
  // A key the family reads that selects or forbids the scheme (BERT's position_embedding_type, DistilBERT's
  // sinusoidal_pos_embds): throws config_error naming it, or returns the family to read instead (nullptr: this one).
  const table_family* (*choose)(const reader&, const nlohmann::json&) = nullptr;
};

// The family of a model type (DistilBERT's learned table; its sinusoid is chosen by its key), nullptr for none.
[[nodiscard]] const table_family* find_table_family(const std::string& model_type);
[[nodiscard]] const std::vector<table_family>& all_table_families();

}  // namespace ropecheck::detail::table_rules
