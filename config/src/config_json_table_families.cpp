// config/src/config_json_table_families.cpp — the rule of every model type whose residual stream takes an absolute
// position vector (config_json_table_rules.hpp), each fact with the transformers code it was read from, and
// table_families() (ropecheck/table_config.hpp; `explain --list-tables`). docs/tables.md is this table in words.
#include <string>
#include <vector>

#include "config_json_table_rules.hpp"

namespace ropecheck::detail::table_rules {
namespace {

using nlohmann::json;

// ---- the shared rules ---------------------------------------------------------------------------------------------

// A learned table indexed at the token's index in the sequence (arange(past, past + len)), no offset.
stack_rule plain_learned(const char* key, const char* alias, std::optional<std::int64_t> dflt, const char* dflt_source,
                         const char* table_source, const char* positions_source) {
  stack_rule s;
  s.rows_key = key;
  s.rows_alias = alias;
  s.rows_default = dflt;
  s.rows_default_source = dflt_source;
  s.rows_source = table_source;
  s.offset_source = positions_source;
  s.positions_source = positions_source;
  return s;
}

// BART's, mBART's and PLBart's learned table: nn.Embedding(max_position_embeddings + 2), read at arange + 2.
stack_rule bart_learned(const char* cls, std::optional<std::int64_t> dflt, const char* dflt_source) {
  stack_rule s;
  s.rows_key = "max_position_embeddings";
  s.rows_default = dflt;
  s.rows_default_source = dflt_source;
  s.rows_extra = 2;
  s.rows_source = cls;
  s.offset = 2;
  s.offset_source = cls;
  s.positions_source = cls;
  return s;
}

// OPT's and BioGPT's: positions from the attention mask's cumsum (padding -> -1), read at + 2.
stack_rule opt_learned(std::optional<std::int64_t> dflt, const char* dflt_source, const char* cls) {
  stack_rule s = bart_learned(cls, dflt, dflt_source);
  s.padding = padding_rule::skipped;
  s.padding_row = 1;
  return s;
}

// fairseq's sinusoid (M2M100, XGLM's older code, Speech2Text): [sin | cos], log(10000) / (half_dim - 1), float32, the
// padding_idx row zeroed, positions from create_position_ids_from_input_ids (from padding_idx + 1, padding skipped),
// the table rebuilt larger when a sequence needs it.
stack_rule fairseq_sinusoid(const char* key, std::optional<std::int64_t> dflt, const char* dflt_source, const char* cls,
                            const char* positions_source, std::int64_t pad_default, const char* pad_source) {
  stack_rule s;
  s.rows_key = key;
  s.rows_default = dflt;
  s.rows_default_source = dflt_source;
  s.sinusoidal = true;
  s.layout = sinusoid_layout::concatenated;
  s.fairseq_denominator = true;
  s.values_source = cls;
  s.no_end = true;
  s.rows_source = cls;
  s.pad_key = "pad_token_id";
  s.pad_default = pad_default;
  s.pad_default_source = pad_source;
  s.offset_from_pad = true;
  s.offset_source = positions_source;
  s.padding = padding_rule::skipped;
  s.padding_row_is_pad = true;
  s.padding_row_zero = true;
  s.positions_source = positions_source;
  return s;
}

// Marian's and Pegasus's: [sin | cos] of the paper's frequencies (numpy float64, then float32), a fixed nn.Embedding
// of max_position_embeddings rows, read at arange(past, past + len).
stack_rule marian_sinusoid(std::optional<std::int64_t> dflt, const char* dflt_source, const char* cls, const char* positions) {
  stack_rule s;
  s.rows_key = "max_position_embeddings";
  s.rows_default = dflt;
  s.rows_default_source = dflt_source;
  s.sinusoidal = true;
  s.layout = sinusoid_layout::concatenated;
  s.values_source = cls;
  s.rows_source = cls;
  s.offset_source = positions;
  s.positions_source = positions;
  return s;
}

// ---- the choices a key makes ----------------------------------------------------------------------------------------

// BERT's and RoBERTa's position_embedding_type: "absolute" adds the table; relative_key(_query) adds a distance term
// to the scores instead and never adds the table (models/bert/modeling_bert.py BertEmbeddings.forward: `if
// self.position_embedding_type == "absolute": embeddings += self.position_embeddings(position_ids)`).
const table_family* absolute_only(const reader& r, const json& j) {
  if (const auto t = r.string(j, "position_embedding_type", "position_embedding_type"); t && *t != "absolute")
    r.fail("position_embedding_type", "\"" + *t + "\": the model adds no absolute table (BertEmbeddings.forward adds it only for "
                                      "\"absolute\"); its distance embedding on the scores is not modelled, nothing claimed");
  return nullptr;
}

const table_family* distilbert_choice(const reader& r, const json& j);

const std::vector<table_family>& families() {
  static const std::vector<table_family> rows = [] {
    std::vector<table_family> v;
    // GPT-2: wpe = nn.Embedding(max_position_embeddings (n_positions), n_embd), arange(past, past + len).
    v.push_back({"gpt2", "GPT-2", "a learned table wpe", "n_embd", "hidden_size", 768,
                 "transformers models/gpt2/configuration_gpt2.py GPT2Config.__init__ n_embd=768", nullptr, "",
                 {},
                 plain_learned("n_positions", "max_position_embeddings", 1024,
                               "transformers models/gpt2/configuration_gpt2.py GPT2Config.__init__ n_positions=1024",
                               "transformers models/gpt2/modeling_gpt2.py GPT2Model.__init__: wpe = nn.Embedding(max_position_embeddings, embed_dim)",
                               "modeling_gpt2.py GPT2Model.forward: position_ids = arange(past_length, past_length + seq_len) (generate() "
                               "counts the mask instead: GPT2LMHeadModel.prepare_inputs_for_generation)"),
                 {}});
    // GPT-BigCode: wpe, positions from the 2-D attention mask's cumsum (padding -> 1).
    {
      stack_rule s = plain_learned("n_positions", "max_position_embeddings", std::nullopt, "",
                                   "transformers models/gpt_bigcode/modeling_gpt_bigcode.py GPTBigCodeModel.__init__: wpe = "
                                   "nn.Embedding(config.max_position_embeddings, embed_dim)",
                                   "modeling_gpt_bigcode.py GPTBigCodeModel.forward: position_ids = attention_mask.cumsum(-1) - 1, "
                                   "masked_fill_(attention_mask == 0, 1)");
      s.padding = padding_rule::skipped;
      s.padding_row = 1;
      v.push_back({"gpt_bigcode", "GPT-BigCode", "a learned table wpe", "n_embd", "hidden_size", std::nullopt, "", nullptr, "", {}, s, {}});
    }
    // BERT: position_embeddings, the position_ids buffer sliced at [past, past + len).
    v.push_back({"bert", "BERT", "a learned table position_embeddings", "hidden_size", nullptr, 768,
                 "transformers models/bert/configuration_bert.py BertConfig.__init__ hidden_size=768", nullptr, "",
                 {"position_embedding_type"},
                 plain_learned("max_position_embeddings", nullptr, 512,
                               "transformers models/bert/configuration_bert.py BertConfig.__init__ max_position_embeddings=512",
                               "transformers models/bert/modeling_bert.py BertEmbeddings.__init__: position_embeddings = "
                               "nn.Embedding(max_position_embeddings, hidden_size)",
                               "modeling_bert.py BertEmbeddings.forward: position_ids[:, past : past + seq_length]"),
                 {}, absolute_only});
    // RoBERTa: positions from the input ids (padding keeps padding_idx, the rest count from padding_idx + 1).
    {
      stack_rule s = plain_learned("max_position_embeddings", nullptr, 512,
                                   "transformers models/roberta/configuration_roberta.py RobertaConfig(BertConfig): "
                                   "max_position_embeddings=512 (BertConfig's)",
                                   "transformers models/roberta/modeling_roberta.py RobertaEmbeddings.__init__: position_embeddings = "
                                   "nn.Embedding(max_position_embeddings, hidden_size, padding_idx=pad_token_id)",
                                   "modeling_roberta.py create_position_ids_from_input_ids: (cumsum(input_ids != padding_idx) + past) * "
                                   "mask + padding_idx");
      s.pad_key = "pad_token_id";
      s.pad_default = 1;
      s.pad_default_source = "transformers models/roberta/configuration_roberta.py RobertaConfig.__init__ pad_token_id=1";
      s.offset_from_pad = true;
      s.padding = padding_rule::skipped;
      s.padding_row_is_pad = true;
      v.push_back({"roberta", "RoBERTa", "a learned table position_embeddings", "hidden_size", nullptr, 768,
                   "transformers models/roberta/configuration_roberta.py RobertaConfig(BertConfig): hidden_size=768", nullptr, "",
                   {"position_embedding_type"}, s, {}, absolute_only});
    }
    // DistilBERT: a learned table unless sinusoidal_pos_embds (distilbert_choice), the buffer sliced from 0.
    v.push_back({"distilbert", "DistilBERT", "a learned table position_embeddings", "dim", "hidden_size", std::nullopt, "", nullptr, "",
                 {"sinusoidal_pos_embds"},
                 plain_learned("max_position_embeddings", nullptr, std::nullopt, "",
                               "transformers models/distilbert/modeling_distilbert.py Embeddings.__init__: position_embeddings = "
                               "nn.Embedding(max_position_embeddings, dim)",
                               "modeling_distilbert.py Embeddings.forward: position_ids[:, :seq_length]"),
                 {}, distilbert_choice});
    {
      stack_rule s = plain_learned("max_position_embeddings", nullptr, std::nullopt, "",
                                   "transformers models/distilbert/modeling_distilbert.py Embeddings.__init__: nn.Embedding("
                                   "max_position_embeddings, dim) filled by create_sinusoidal_embeddings",
                                   "modeling_distilbert.py Embeddings.forward: position_ids[:, :seq_length]");
      s.sinusoidal = true;
      s.layout = sinusoid_layout::interleaved;
      s.values_source = "modeling_distilbert.py _create_sinusoidal_embeddings: pos / 10000^(2 (j // 2) / dim), out[:, 0::2] = sin, "
                        "out[:, 1::2] = cos (numpy float64, then float32)";
      v.push_back({"distilbert (sinusoidal_pos_embds)", "DistilBERT (sinusoidal_pos_embds)", "a sinusoid table", "dim", "hidden_size",
                   std::nullopt, "", nullptr, "", {"sinusoidal_pos_embds"}, s, {}});
    }
    // OPT and BioGPT: nn.Embedding(max_position_embeddings + 2), positions from the mask's cumsum, + 2.
    v.push_back({"opt", "OPT", "a learned table embed_positions", "hidden_size", "d_model", 768,
                 "transformers models/opt/configuration_opt.py OPTConfig.__init__ hidden_size=768", nullptr, "", {},
                 opt_learned(2048, "transformers models/opt/configuration_opt.py OPTConfig.__init__ max_position_embeddings=2048",
                             "transformers models/opt/modeling_opt.py OPTLearnedPositionalEmbedding: offset = 2, nn.Embedding(num + 2); "
                             "OPTDecoder.forward: position_ids = cumsum(attention_mask) * attention_mask - 1"),
                 {}});
    v.push_back({"biogpt", "BioGPT", "a learned table embed_positions", "hidden_size", nullptr, 1024,
                 "transformers models/biogpt/configuration_biogpt.py BioGptConfig.__init__ hidden_size=1024", "scale_embedding",
                 "models/biogpt/modeling_biogpt.py BioGptScaledWordEmbedding: embed_scale multiplies the token embedding only", {},
                 opt_learned(1024, "transformers models/biogpt/configuration_biogpt.py BioGptConfig.__init__ max_position_embeddings=1024",
                             "transformers models/biogpt/modeling_biogpt.py BioGptLearnedPositionalEmbedding (copied from OPT's): offset 2, "
                             "positions = cumsum(mask) * mask - 1"),
                 {}});
    // BART, mBART, PLBart: one table per stack, nn.Embedding(max_position_embeddings + 2), arange + 2.
    const char* bart_cls = "transformers models/bart/modeling_bart.py BartLearnedPositionalEmbedding: offset = 2, nn.Embedding(num + 2), "
                           "forward: arange(past, past + seq_len) + offset";
    v.push_back({"bart", "BART", "a learned table embed_positions per stack", "d_model", "hidden_size", 1024,
                 "transformers models/bart/configuration_bart.py BartConfig.__init__ d_model=1024", "scale_embedding",
                 "models/bart/modeling_bart.py BartScaledWordEmbedding: embed_scale multiplies the token embedding only", {},
                 bart_learned(bart_cls, 1024, "transformers models/bart/configuration_bart.py BartConfig.__init__ max_position_embeddings=1024"),
                 bart_learned(bart_cls, 1024, "transformers models/bart/configuration_bart.py BartConfig.__init__ max_position_embeddings=1024")});
    const char* mbart_cls = "transformers models/mbart/modeling_mbart.py MBartLearnedPositionalEmbedding (copied from BART's): offset 2";
    v.push_back({"mbart", "mBART", "a learned table embed_positions per stack", "d_model", "hidden_size", 1024,
                 "transformers models/mbart/configuration_mbart.py MBartConfig.__init__ d_model=1024", "scale_embedding",
                 "models/mbart/modeling_mbart.py MBartScaledWordEmbedding: embed_scale multiplies the token embedding only", {},
                 bart_learned(mbart_cls, 1024, "transformers models/mbart/configuration_mbart.py MBartConfig.__init__ max_position_embeddings=1024"),
                 bart_learned(mbart_cls, 1024, "transformers models/mbart/configuration_mbart.py MBartConfig.__init__ max_position_embeddings=1024")});
    const char* plbart_cls = "transformers models/plbart/modeling_plbart.py PLBartLearnedPositionalEmbedding (BART's): offset 2";
    v.push_back({"plbart", "PLBart", "a learned table embed_positions per stack", "d_model", "hidden_size", std::nullopt, "", "scale_embedding",
                 "models/plbart/modeling_plbart.py PLBartScaledWordEmbedding: embed_scale multiplies the token embedding only", {},
                 bart_learned(plbart_cls, std::nullopt, ""), bart_learned(plbart_cls, std::nullopt, "")});
    // Blenderbot and Blenderbot-small: nn.Embedding(max_position_embeddings), arange, no offset.
    const char* bb_cls = "transformers models/blenderbot/modeling_blenderbot.py BlenderbotLearnedPositionalEmbedding: nn.Embedding(num, dim), no offset";
    const char* bb_pos = "modeling_blenderbot.py BlenderbotLearnedPositionalEmbedding.forward: arange(past, past + seq_len)";
    v.push_back({"blenderbot", "Blenderbot", "a learned table embed_positions per stack", "d_model", "hidden_size", 2560,
                 "transformers models/blenderbot/configuration_blenderbot.py BlenderbotConfig.__init__ d_model=2560", "scale_embedding",
                 "models/blenderbot/modeling_blenderbot.py BlenderbotScaledWordEmbedding: the token embedding only", {},
                 plain_learned("max_position_embeddings", nullptr, 128, "configuration_blenderbot.py BlenderbotConfig.__init__ max_position_embeddings=128", bb_cls, bb_pos),
                 plain_learned("max_position_embeddings", nullptr, 128, "configuration_blenderbot.py BlenderbotConfig.__init__ max_position_embeddings=128", bb_cls, bb_pos)});
    const char* bbs_cls = "transformers models/blenderbot_small/modeling_blenderbot_small.py BlenderbotSmallLearnedPositionalEmbedding: no offset";
    v.push_back({"blenderbot-small", "Blenderbot-small", "a learned table embed_positions per stack", "d_model", "hidden_size", std::nullopt, "",
                 "scale_embedding", "models/blenderbot_small/modeling_blenderbot_small.py BlenderbotSmallEncoder.forward: embed_tokens(ids) * "
                 "embed_scale, the token term only", {},
                 plain_learned("max_position_embeddings", nullptr, std::nullopt, "", bbs_cls, bb_pos),
                 plain_learned("max_position_embeddings", nullptr, std::nullopt, "", bbs_cls, bb_pos)});
    // Marian and Pegasus: [sin | cos] of the paper's frequencies in a fixed nn.Embedding.
    const char* marian_cls = "transformers models/marian/modeling_marian.py MarianSinusoidalPositionalEmbedding._init_weight: out[:, :d/2] = "
                             "sin(pos / 10000^(2 (j // 2) / d)), out[:, d/2:] = cos (numpy float64, then float32), nn.Embedding(max_position_embeddings)";
    const char* marian_pos = "modeling_marian.py MarianSinusoidalPositionalEmbedding.forward: arange(past, past + seq_len)";
    v.push_back({"marian", "Marian", "a sinusoid table embed_positions per stack", "d_model", "hidden_size", 1024,
                 "transformers models/marian/configuration_marian.py MarianConfig.__init__ d_model=1024", "scale_embedding",
                 "models/marian/modeling_marian.py MarianEncoder.forward: embed_tokens(ids) * embed_scale, the token term only", {},
                 marian_sinusoid(1024, "configuration_marian.py MarianConfig.__init__ max_position_embeddings=1024", marian_cls, marian_pos),
                 marian_sinusoid(1024, "configuration_marian.py MarianConfig.__init__ max_position_embeddings=1024", marian_cls, marian_pos)});
    const char* pegasus_cls = "transformers models/pegasus/modeling_pegasus.py PegasusSinusoidalPositionalEmbedding (copied from Marian's)";
    v.push_back({"pegasus", "Pegasus", "a sinusoid table embed_positions per stack", "d_model", "hidden_size", 1024,
                 "transformers models/pegasus/configuration_pegasus.py PegasusConfig.__init__ d_model=1024", "scale_embedding",
                 "models/pegasus/modeling_pegasus.py PegasusEncoder.forward: embed_tokens(ids) * embed_scale, the token term only", {},
                 marian_sinusoid(1024, "configuration_pegasus.py PegasusConfig.__init__ max_position_embeddings=1024", pegasus_cls, marian_pos),
                 marian_sinusoid(1024, "configuration_pegasus.py PegasusConfig.__init__ max_position_embeddings=1024", pegasus_cls, marian_pos)});
    // M2M100 (and NLLB, whose checkpoints are model_type m2m_100), Speech2Text: fairseq's sinusoid.
    const char* m2m_cls = "transformers models/m2m_100/modeling_m2m_100.py M2M100SinusoidalPositionalEmbedding.get_embedding: [sin | cos], "
                          "exp(-i log(10000) / (half_dim - 1)) in float32, emb[padding_idx] = 0; forward rebuilds the table when max_pos exceeds it";
    const char* m2m_pos = "modeling_m2m_100.py create_position_ids_from_input_ids: (cumsum(input_ids != padding_idx) + past) * mask + padding_idx";
    v.push_back({"m2m_100", "M2M100 / NLLB", "a fairseq sinusoid embed_positions per stack", "d_model", "hidden_size", 1024,
                 "transformers models/m2m_100/configuration_m2m_100.py M2M100Config.__init__ d_model=1024", "scale_embedding",
                 "models/m2m_100/modeling_m2m_100.py M2M100ScaledWordEmbedding: the token embedding only", {},
                 fairseq_sinusoid("max_position_embeddings", 1024, "configuration_m2m_100.py M2M100Config.__init__ max_position_embeddings=1024",
                                  m2m_cls, m2m_pos, 1, "configuration_m2m_100.py M2M100Config.__init__ pad_token_id=1"),
                 fairseq_sinusoid("max_position_embeddings", 1024, "configuration_m2m_100.py M2M100Config.__init__ max_position_embeddings=1024",
                                  m2m_cls, m2m_pos, 1, "configuration_m2m_100.py M2M100Config.__init__ pad_token_id=1")});
    const char* s2t_cls = "transformers models/speech_to_text/modeling_speech_to_text.py Speech2TextSinusoidalPositionalEmbedding.get_embedding "
                          "(fairseq's): [sin | cos], log(10000) / (half_dim - 1), emb[padding_idx] = 0, rebuilt when a sequence needs it";
    const char* s2t_pos = "modeling_speech_to_text.py Speech2TextSinusoidalPositionalEmbedding.create_position_ids_from_input_ids (the encoder "
                          "passes its padding mask as ids: real frames from pad_token_id + 1)";
    v.push_back({"speech_to_text", "Speech2Text", "a fairseq sinusoid embed_positions per stack", "d_model", "hidden_size", 256,
                 "transformers models/speech_to_text/configuration_speech_to_text.py Speech2TextConfig.__init__ d_model=256", "scale_embedding",
                 "modeling_speech_to_text.py Speech2TextEncoder.forward: embed_scale * conv(input_features), the features only", {},
                 fairseq_sinusoid("max_source_positions", 6000, "configuration_speech_to_text.py Speech2TextConfig.__init__ max_source_positions=6000",
                                  s2t_cls, s2t_pos, 1, "configuration_speech_to_text.py Speech2TextConfig.__init__ pad_token_id=1"),
                 fairseq_sinusoid("max_target_positions", 1024, "configuration_speech_to_text.py Speech2TextConfig.__init__ max_target_positions=1024",
                                  s2t_cls, s2t_pos, 1, "configuration_speech_to_text.py Speech2TextConfig.__init__ pad_token_id=1")});
    // XGLM: fairseq's sinusoid read at position_ids + 2 (arange in the model's forward).
    {
      stack_rule s = fairseq_sinusoid("max_position_embeddings", 2048, "transformers models/xglm/configuration_xglm.py XGLMConfig max_position_embeddings=2048",
                                      "transformers models/xglm/modeling_xglm.py XGLMSinusoidalPositionalEmbedding.get_embedding (fairseq's): [sin | cos], "
                                      "log(10000) / (half_dim - 1), float32, rebuilt when max_pos exceeds it",
                                      "modeling_xglm.py XGLMModel.forward: position_ids = arange(past, past + seq_len); "
                                      "XGLMSinusoidalPositionalEmbedding.forward: position_ids + offset (2)",
                                      1, "configuration_xglm.py XGLMConfig pad_token_id=1");
      s.pad_key = nullptr;
      s.offset_from_pad = false;
      s.offset = 2;
      s.padding = padding_rule::counted;
      s.padding_row_is_pad = false;
      s.padding_row_zero = false;
      s.note = "XGLM's generate() counts positions from the attention mask (XGLMForCausalLM.prepare_inputs_for_generation: cumsum - 1, "
               "padding at 1); the claim is the model's forward (arange)";
      v.push_back({"xglm", "XGLM", "a fairseq sinusoid embed_positions", "d_model", "hidden_size", 1024,
                   "transformers models/xglm/configuration_xglm.py XGLMConfig d_model=1024", "scale_embedding",
                   "models/xglm/modeling_xglm.py XGLMScaledWordEmbedding: the token embedding only", {}, s, {}});
    }
    // Whisper: the encoder's frozen sinusoid table of max_source_positions rows, the decoder's learned table.
    {
      stack_rule enc;
      enc.rows_key = "max_source_positions";
      enc.rows_default = 1500;
      enc.rows_default_source = "transformers models/whisper/configuration_whisper.py WhisperConfig.__init__ max_source_positions=1500";
      enc.sinusoidal = true;
      enc.layout = sinusoid_layout::concatenated;
      enc.fairseq_denominator = true;
      enc.values_source = "transformers models/whisper/modeling_whisper.py sinusoids: log(max_timescale) / (channels // 2 - 1), "
                          "cat([sin, cos]) in float32";
      enc.rows_source = "modeling_whisper.py WhisperEncoder.__init__: embed_positions = nn.Embedding(max_source_positions, d_model), frozen";
      enc.offset_source = "modeling_whisper.py WhisperEncoder.forward: inputs_embeds + embed_positions.weight (row n for frame n)";
      enc.positions_source = enc.offset_source;
      stack_rule dec = plain_learned("max_target_positions", nullptr, 448,
                                     "transformers models/whisper/configuration_whisper.py WhisperConfig.__init__ max_target_positions=448",
                                     "transformers models/whisper/modeling_whisper.py WhisperPositionalEmbedding: nn.Embedding(max_target_positions, d_model)",
                                     "modeling_whisper.py WhisperPositionalEmbedding.forward: weight[past : past + seq_len] (or weight[position_ids])");
      v.push_back({"whisper", "Whisper", "a sinusoid table (encoder) and a learned table (decoder)", "d_model", "hidden_size", std::nullopt, "",
                   nullptr, "", {}, enc, dec});
    }
    return v;
  }();
  return rows;
}

const table_family* distilbert_choice(const reader& r, const json& j) {
  const auto s = r.boolean(j, "sinusoidal_pos_embds", "sinusoidal_pos_embds");
  if (!s) r.fail("sinusoidal_pos_embds", "missing: DistilBERT's class default for it is not one ropecheck has read; give it");
  if (!*s) return nullptr;
  for (const table_family& f : families())
    if (std::string(f.model_type) == "distilbert (sinusoidal_pos_embds)") return &f;
  return nullptr;
}

}  // namespace

const std::vector<table_family>& all_table_families() { return families(); }

const table_family* find_table_family(const std::string& model_type) {
  for (const table_family& f : families())
    if (model_type == f.model_type) return &f;
  return nullptr;
}

}  // namespace ropecheck::detail::table_rules

namespace ropecheck {

const std::vector<table_family_row>& table_families() {
  static const std::vector<table_family_row> rows = [] {
    std::vector<table_family_row> v;
    for (const auto& f : detail::table_rules::all_table_families()) {
      if (std::string(f.model_type).find(' ') != std::string::npos) continue;  // a variant a key selects
      const auto& s = f.encoder;
      v.push_back({f.model_type, f.family, f.adds, s.sinusoidal ? s.values_source : s.rows_source});
    }
    return v;
  }();
  return rows;
}

}  // namespace ropecheck
