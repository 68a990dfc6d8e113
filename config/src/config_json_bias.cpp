// config/src/config_json_bias.cpp — parse_bias_config / load_bias_config (ropecheck/bias_config.hpp): a config.json
// of a family whose attention adds a score-matrix bias, read into the bias claim of the layer and stack asked.
// Every fact comes from the file, the family's class default (cited) or its modeling code (cited); a class
// default ropecheck has not read is never assumed: the key is then required. The table of families is
// config_json_bias_families.cpp. Covered by tests/config/config_json_bias_test.cpp.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config_json_reader.hpp"
#include "ropecheck/architectures.hpp"
#include "ropecheck/bias_config.hpp"

namespace ropecheck {
namespace {

using nlohmann::json;
using detail::json_read::describe;
using detail::json_read::fact_log;
using detail::json_read::reader;

// One family's reading: the object read (t: the top level, or text_config), its reader and the facts.
struct ctx {
  const reader& r;
  const json& t;
  bias_config_parse& out;
  const bias_declaration& decl;
  fact_log log;
};

// A key naming a positional scheme the family does not read is an error naming it (never silently dropped).
void refuse_scheme_keys(const ctx& c, const json& o, const std::string& at, std::initializer_list<const char*> read,
                        std::initializer_list<const char*> prefixes, const std::string& why) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    bool known = false;
    for (const char* x : read) known = known || k == x;
    bool named = false;
    for (const char* p : prefixes) named = named || k.rfind(p, 0) == 0;
    if (!known && named && !it->is_null())
      c.r.fail(at + k, "is not read by " + c.out.family + " (" + why + "); ropecheck refuses a positional key the family's code would ignore");
  }
}

// An integer key (or its alias) of o, the class default when absent (default_source: where the default is; "" when
// ropecheck has not read the class's default: the key is then required).
int int_key(const ctx& c, const json& o, const std::string& at, const char* key, const char* alias, std::optional<int> dflt,
            const std::string& default_source, const std::string& field) {
  const std::string pk = at + key;
  const auto a = c.r.integer(o, key, pk);
  std::optional<std::int64_t> b;
  if (alias) b = c.r.integer(o, alias, at + alias);
  const auto v = alias ? c.r.agree(a, pk, b, at + alias) : a;
  if (v) {
    if (*v < 1 || *v > (1 << 24)) c.r.fail(a ? pk : at + alias, "must be in [1, 2^24], got " + std::to_string(*v));
    c.log.add(field, std::to_string(*v), fact_origin::file, a ? pk : at + alias);
    return static_cast<int>(*v);
  }
  if (!dflt)
    c.r.fail(pk, "missing: " + c.out.family + "'s class default for it is not one ropecheck has read (" + default_source + "); give it");
  c.log.add(field, std::to_string(*dflt), fact_origin::class_default, default_source);
  return *dflt;
}

void set_head_dim(ctx& c, int hidden, int heads, const std::string& hidden_path, const std::string& how) {
  if (hidden % heads != 0)
    c.r.fail(hidden_path, std::to_string(hidden) + " is not divisible by the " + std::to_string(heads) + " heads");
  c.out.head_dim = hidden / heads;
  c.log.add("head_dim", std::to_string(c.out.head_dim), fact_origin::derived, how);
}

// ---- ALiBi -------------------------------------------------------------------------------------------------------

constexpr const char* bloom_cfg = "transformers models/bloom/configuration_bloom.py BloomConfig.__init__";

void read_bloom(ctx& c) {
  const int heads = int_key(c, c.t, "", "n_head", "num_attention_heads", 8, std::string(bloom_cfg) + " n_head=8 (attribute_map num_attention_heads)", "heads");
  const int hidden = int_key(c, c.t, "", "hidden_size", "n_embed", 64, std::string(bloom_cfg) + " hidden_size=64 (n_embed kwarg)", "hidden_size");
  set_head_dim(c, hidden, heads, "hidden_size", "hidden_size / n_head (modeling_bloom.py BloomAttention.__init__)");
  c.out.layers.resize(static_cast<std::size_t>(int_key(c, c.t, "", "n_layer", "num_hidden_layers", 2, std::string(bloom_cfg) + " n_layer=2", "num_layers")));
  refuse_scheme_keys(c, c.t, "", {}, {"alibi", "rope", "rotary", "relative_attention", "position_embedding"},
                     "BLOOM always adds ALiBi: modeling_bloom.py BloomModel.forward build_alibi_tensor");
  if (c.t.contains("offset_alibi"))
    c.out.notes.push_back("offset_alibi (Megatron-DeepSpeed's) is not read by transformers' BLOOM (modeling_bloom.py build_alibi_tensor takes "
                          "attention_mask, num_heads and dtype only)");
  alibi_claim& a = c.out.claim.alibi;
  a.heads = heads;
  a.rule = alibi_slope_rule::press;
  a.distance = alibi_distance::key_position;
  c.log.add("slopes", "press (the paper's get_slopes)", fact_origin::family_code,
            "transformers models/bloom/modeling_bloom.py build_alibi_tensor: closest_power_of_2, base 2^(-8/n), extra_base for the rest");
  c.log.add("distance", "key_position (+slope x n)", fact_origin::family_code,
            "modeling_bloom.py build_alibi_tensor: slopes[..., None] * ((attention_mask.cumsum(-1) - 1) * attention_mask)");
  c.log.add("bias_scale", "1", fact_origin::family_code,
            "modeling_bloom.py BloomAttention.forward: alibi.baddbmm(query, key, beta=self.beta (1.0), alpha=inv_norm_factor): "
            "the bias meets q.k/sqrt(head_dim) unscaled (earlier versions: beta=1/layer_number, then x layer_number: the same)");
  c.log.add("slopes_dtype", "fp32, the bias cast to the model dtype", fact_origin::family_code, "modeling_bloom.py build_alibi_tensor: .to(dtype)");
}

constexpr const char* mpt_cfg = "transformers models/mpt/configuration_mpt.py";

void read_mpt(ctx& c) {
  const int heads = int_key(c, c.t, "", "n_heads", "num_attention_heads", 16, std::string(mpt_cfg) + " MptConfig.__init__ n_heads=16", "heads");
  const int hidden = int_key(c, c.t, "", "d_model", "hidden_size", 2048, std::string(mpt_cfg) + " MptConfig.__init__ d_model=2048", "d_model");
  set_head_dim(c, hidden, heads, "d_model", "d_model / n_heads (modeling_mpt.py MptAttention.__init__)");
  c.out.layers.resize(static_cast<std::size_t>(int_key(c, c.t, "", "n_layers", "num_hidden_layers", 24, std::string(mpt_cfg) + " MptConfig.__init__ n_layers=24", "num_layers")));
  refuse_scheme_keys(c, c.t, "", {}, {"alibi", "rope", "rotary", "relative_attention"}, "MPT's ALiBi keys live in attn_config");
  static const std::initializer_list<const char*> attn_keys = {"attn_type", "attn_pdrop", "attn_impl", "clip_qkv", "softmax_scale",
                                                               "prefix_lm", "qk_ln", "attn_uses_sequence_id", "alibi", "alibi_bias_max"};
  const auto it = c.t.find("attn_config");
  const double bias_max = 8;
  bool bias_max_read = false;
  if (it != c.t.end() && !it->is_null()) {
    if (!it->is_object()) c.r.fail("attn_config", "must be an object, got " + describe(*it));
    for (auto k = it->begin(); k != it->end(); ++k) {
      bool known = false;
      for (const char* x : attn_keys) known = known || k.key() == x;
      if (!known)
        c.r.fail("attn_config." + k.key(), "is not a key of MptAttentionConfig (configuration_mpt.py MptAttentionConfig.__init__: attn_type, "
                                           "attn_pdrop, attn_impl, clip_qkv, softmax_scale, prefix_lm, qk_ln, attn_uses_sequence_id, alibi, alibi_bias_max)");
    }
    // transformers' MptModel never reads attn_config.alibi (modeling_mpt.py MptModel.forward builds the ALiBi tensor
    // unconditionally and MptModel has no position embedding); MosaicML's own code would use learned_pos_emb instead.
    if (c.r.boolean(*it, "alibi", "attn_config.alibi").value_or(true) == false)
      c.r.fail("attn_config.alibi", "false: transformers' MptModel adds ALiBi regardless and has no position embedding (modeling_mpt.py "
                                    "MptModel.forward: build_mpt_alibi_tensor always), while MosaicML's remote code would use learned_pos_emb "
                                    "instead; the two readings differ, nothing to claim");
    if (c.r.boolean(*it, "prefix_lm", "attn_config.prefix_lm").value_or(false))
      c.r.fail("attn_config.prefix_lm", "true: a prefix LM attends bidirectionally over its prefix in MosaicML's code, which transformers' "
                                        "MptModel ignores (causal mask only); the readings differ, nothing to claim");
    if (const auto m = c.r.number(*it, "alibi_bias_max", "attn_config.alibi_bias_max")) {
      if (!(*m > 0)) c.r.fail("attn_config.alibi_bias_max", detail::json_read::fmt(*m) + ", need a value > 0");
      if (*m != 8)
        c.r.fail("attn_config.alibi_bias_max", detail::json_read::fmt(*m) + ": transformers' MptModel.forward calls build_mpt_alibi_tensor(num_heads, "
                                               "max_seq_len) without it (the default 8 applies), MosaicML's code uses it: the readings differ");
      c.log.add("alibi_bias_max", "8", fact_origin::file, "attn_config.alibi_bias_max");
      bias_max_read = true;
    }
  }
  if (!bias_max_read)
    c.log.add("alibi_bias_max", "8", fact_origin::family_code,
              "modeling_mpt.py build_mpt_alibi_tensor(num_heads, sequence_length, alibi_bias_max=8), called by MptModel.forward without it");
  alibi_claim& a = c.out.claim.alibi;
  a.heads = heads;
  a.rule = alibi_slope_rule::mpt;
  a.bias_max = bias_max;
  a.distance = alibi_distance::relative;
  c.log.add("slopes", "mpt (gen_slopes)", fact_origin::family_code,
            "modeling_mpt.py build_mpt_alibi_tensor: 2^ceil(log2 H) slopes 1/2^(k bias_max / P), concat(s[1::2], s[::2])[:H]");
  c.log.add("distance", "relative (slope x (n - (K-1)): -slope (m - n) up to a per-row constant)", fact_origin::family_code,
            "modeling_mpt.py build_mpt_alibi_tensor: arange(1 - seq_len, 1) * slopes; MptAttention.forward slices its last key_length columns");
  c.log.add("bias_scale", "1", fact_origin::family_code,
            "modeling_mpt.py MptAttention.forward: q.k^T x softmax_scale + position_bias (the bias is not scaled)");
}

constexpr const char* falcon_cfg = "transformers models/falcon/configuration_falcon.py FalconConfig.__init__";

void read_falcon(ctx& c) {
  const int heads = int_key(c, c.t, "", "num_attention_heads", "n_head", 71, std::string(falcon_cfg) + " num_attention_heads=71", "heads");
  const int hidden = int_key(c, c.t, "", "hidden_size", "n_embed", 4544, std::string(falcon_cfg) + " hidden_size=4544", "hidden_size");
  set_head_dim(c, hidden, heads, "hidden_size", "hidden_size // n_head (configuration_falcon.py FalconConfig.head_dim)");
  c.out.layers.resize(static_cast<std::size_t>(int_key(c, c.t, "", "num_hidden_layers", "n_layer", 32, std::string(falcon_cfg) + " num_hidden_layers=32", "num_layers")));
  // rope_theta: FalconConfig may serialize it beside alibi; FalconAttention builds its rotary embedding only when
  // config.rotary (= not alibi, configuration_falcon.py FalconConfig.rotary), so it is unused, not a contradiction.
  // A RoPE scaling, or a rope_parameters other than the default's, claims a RoPE the model does not apply.
  if (const auto it = c.t.find("rope_scaling"); it != c.t.end() && !it->is_null())
    c.r.fail("rope_scaling", "set beside alibi true: Falcon then has no rotary embedding (configuration_falcon.py FalconConfig.rotary = not alibi), "
                             "so the file claims both ALiBi and a RoPE scaling");
  if (const auto it = c.t.find("rope_parameters"); it != c.t.end() && !it->is_null()) {
    if (!it->is_object()) c.r.fail("rope_parameters", "must be an object, got " + describe(*it));
    for (auto k = it->begin(); k != it->end(); ++k)
      if (k.key() != "rope_theta" && !(k.key() == "rope_type" && k->is_string() && k->get<std::string>() == "default"))
        c.r.fail("rope_parameters." + k.key(), "set beside alibi true: Falcon then has no rotary embedding (FalconConfig.rotary = not alibi)");
  }
  refuse_scheme_keys(c, c.t, "", {"alibi", "rope_theta", "rope_scaling", "rope_parameters"}, {"alibi", "rope", "rotary", "relative_attention"},
                     "Falcon reads alibi (true here) and nothing else of a positional scheme");
  if (c.t.contains("rope_theta"))
    c.out.notes.push_back("rope_theta is unused with alibi true (configuration_falcon.py FalconConfig.rotary = not alibi): not a contradiction");
  alibi_claim& a = c.out.claim.alibi;
  a.heads = heads;
  a.rule = alibi_slope_rule::press;
  a.distance = alibi_distance::key_position;
  a.bias_scale = 1.0 / std::sqrt(static_cast<double>(c.out.head_dim));
  const bool vllm = c.decl.engine == engine_reading::vllm;
  a.slopes_bf16 = !vllm;
  c.log.add("slopes", "press (the paper's get_slopes)", fact_origin::family_code, "transformers models/falcon/modeling_falcon.py build_alibi_tensor");
  c.log.add("distance", "key_position (+slope x n)", fact_origin::family_code,
            "modeling_falcon.py build_alibi_tensor: slopes[..., None].bfloat16() * ((attention_mask.cumsum(-1) - 1) * attention_mask)");
  c.log.add("bias_scale", "1/sqrt(head_dim)", fact_origin::family_code,
            "modeling_falcon.py FalconAttention.forward: attention_logits = scores + alibi; attention_logits *= inv_norm_factor (1/sqrt(head_dim))");
  if (vllm)
    c.log.add("slopes_dtype", "fp32", fact_origin::declared, "--engine vllm: vllm/model_executor/models/falcon.py keeps the ALiBi slopes in fp32");
  else
    c.log.add("slopes_dtype", "bf16", fact_origin::family_code, "modeling_falcon.py build_alibi_tensor: slopes[..., None].bfloat16()");
}

// ---- T5's buckets --------------------------------------------------------------------------------------------------

struct t5_family {
  const char* model_type;
  const char* family;
  const char* code;              // the modeling file and the rule of its layers
  const char* config_class;      // "" when ropecheck has not read its defaults (the keys are then required)
  int heads, layers;             // class defaults (config_class)
  bool every_layer_computes;     // UMT5
  bool decoder_only;             // the encoder has no T5 bias ropecheck claims (LongT5's local attention, Pix2Struct's vision)
  const char* no_encoder_why;
  const char* sub;               // "text_config" (Pix2Struct) or nullptr
};

const t5_family t5_families[] = {
    {"t5", "T5", "transformers models/t5/modeling_t5.py T5Stack.__init__ (has_relative_attention_bias=bool(i == 0)), T5Attention.compute_bias",
     "transformers models/t5/configuration_t5.py T5Config.__init__", 8, 6, false, false, nullptr, nullptr},
    {"mt5", "mT5", "transformers models/mt5/modeling_mt5.py MT5Stack.__init__ (has_relative_attention_bias=bool(i == 0)), MT5Attention.compute_bias",
     "transformers models/mt5/configuration_mt5.py MT5Config.__init__", 6, 8, false, false, nullptr, nullptr},
    {"umt5", "UMT5", "transformers models/umt5/modeling_umt5.py UMT5LayerSelfAttention.__init__ (UMT5Attention(config, has_relative_attention_bias=True) in every layer)",
     "transformers models/umt5/configuration_umt5.py UMT5Config", 6, 8, true, false, nullptr, nullptr},
    {"switch_transformers", "Switch Transformers",
     "transformers models/switch_transformers/modeling_switch_transformers.py SwitchTransformersStack.__init__ (has_relative_attention_bias=bool(i == 0))",
     "", 0, 0, false, false, nullptr, nullptr},
    {"pop2piano", "Pop2Piano", "transformers models/pop2piano/modeling_pop2piano.py Pop2PianoStack.__init__ (copied from T5Stack)", "", 0, 0, false, false,
     nullptr, nullptr},
    {"longt5", "LongT5", "transformers models/longt5/modeling_longt5.py LongT5Stack.__init__ (has_relative_attention_bias=bool(i == 0)); LongT5Block.__init__",
     "", 0, 0, false, true,
     "LongT5's encoder uses local or transient-global block attention (modeling_longt5.py LongT5Block.__init__: LongT5LayerLocalSelfAttention / "
     "LongT5LayerTransientGlobalSelfAttention), whose bias is over blocks and global tokens, not T5's full bucketed bias; ropecheck claims the decoder only",
     nullptr},
    {"pix2struct", "Pix2Struct", "transformers models/pix2struct/modeling_pix2struct.py Pix2StructTextModel.__init__ (has_relative_attention_bias=bool(i == 0))",
     "", 0, 0, false, true,
     "Pix2Struct's encoder is the vision model, which has no bucketed bias (modeling_pix2struct.py Pix2StructVisionAttention); its text decoder has T5's",
     "text_config"},
};

void read_t5(ctx& c, const t5_family& f) {
  const std::string at = f.sub ? std::string(f.sub) + "." : "";
  const json& o = f.sub ? c.t.at(f.sub) : c.t;
  const std::string cfg = f.config_class;
  const auto dflt = [&](int v) { return cfg.empty() ? std::nullopt : std::optional<int>(v); };
  const std::string nodefault = "its configuration class";
  const std::string stack = c.decl.stack.value_or(f.decoder_only ? "decoder" : "encoder");
  if (stack != "encoder" && stack != "decoder") c.r.fail("--stack", "\"" + stack + "\": encoder or decoder");
  if (stack == "encoder" && f.decoder_only) throw config_error(c.r.source(), "--stack", std::string("encoder: ") + f.no_encoder_why);
  if (!c.decl.stack)
    c.out.notes.push_back(f.decoder_only ? std::string("no --stack: the decoder (") + f.no_encoder_why + ")"
                                         : "no --stack: the encoder's self-attention (bidirectional buckets); --stack decoder for the decoder's (causal)");
  c.out.stack = stack;
  c.log.add("stack", stack + (stack == "encoder" ? " self-attention: bidirectional buckets" : " self-attention: causal buckets (cross-attention has no bias)"),
            c.decl.stack ? fact_origin::declared : fact_origin::derived, c.decl.stack ? "--stack" : "the default stack (no --stack)");
  t5_claim& t = c.out.claim.t5;
  t.heads = int_key(c, o, at, "num_heads", "num_attention_heads", dflt(f.heads), cfg.empty() ? nodefault : cfg + " num_heads=" + std::to_string(f.heads), "heads");
  c.out.head_dim = int_key(c, o, at, "d_kv", nullptr, dflt(64), cfg.empty() ? nodefault : cfg + " d_kv=64", "head_dim");
  t.num_buckets = int_key(c, o, at, "relative_attention_num_buckets", nullptr, dflt(32), cfg.empty() ? nodefault : cfg + " relative_attention_num_buckets=32", "num_buckets");
  t.max_distance = int_key(c, o, at, "relative_attention_max_distance", nullptr, dflt(128), cfg.empty() ? nodefault : cfg + " relative_attention_max_distance=128", "max_distance");
  t.bidirectional = stack == "encoder";
  const int enc_layers = int_key(c, o, at, "num_layers", "num_hidden_layers", dflt(f.layers), cfg.empty() ? nodefault : cfg + " num_layers=" + std::to_string(f.layers),
                                 stack == "encoder" ? "num_layers" : "encoder_layers");
  int n = enc_layers;
  if (stack == "decoder" && !f.sub) {
    const auto d = c.r.integer(o, "num_decoder_layers", at + "num_decoder_layers");
    n = d ? static_cast<int>(*d) : enc_layers;
    if (n < 1) c.r.fail(at + "num_decoder_layers", "must be at least 1, got " + std::to_string(n));
    c.log.add("num_layers", std::to_string(n), d ? fact_origin::file : fact_origin::class_default,
              d ? at + "num_decoder_layers" : "num_decoder_layers absent: num_layers (the configuration class: num_decoder_layers if not None else num_layers)");
  }
  refuse_scheme_keys(c, o, at, {"relative_attention_num_buckets", "relative_attention_max_distance"}, {"alibi", "rope", "rotary", "relative_attention"},
                     "its bias is T5's buckets: relative_attention_num_buckets and relative_attention_max_distance");
  c.out.layers.clear();
  for (int i = 0; i < n; ++i) {
    const bool computes = f.every_layer_computes || i == 0;
    c.out.layers.push_back({i, computes ? "t5 computes" : "t5 shared",
                            computes ? std::string(f.code) : std::string("reuses layer 0's position_bias (") + f.code + ")"});
  }
  c.log.add("buckets", std::string("T5's _relative_position_bucket, ") + (t.bidirectional ? "bidirectional" : "causal"), fact_origin::family_code, f.code);
}

const t5_family* t5_family_of(const std::string& mt) {
  for (const auto& f : t5_families)
    if (mt == f.model_type) return &f;
  return nullptr;
}

// ---- the declarations ---------------------------------------------------------------------------------------------

void apply_declarations(ctx& c, const std::string& heads_field) {
  const bias_declaration& d = c.decl;
  const int n = static_cast<int>(c.out.layers.size());
  if (d.layer) {
    if (*d.layer < 0 || *d.layer >= n)
      throw config_error(c.r.source(), "--layer", std::to_string(*d.layer) + " is outside the " + (c.out.stack.empty() ? "model" : c.out.stack) + "'s " +
                                                      std::to_string(n) + " layers (0.." + std::to_string(n - 1) + ")");
    c.out.layer = *d.layer;
  }
  if (c.out.claim.scheme == bias_scheme::alibi) {
    if (d.stack) throw config_error(c.r.source(), "--stack", *d.stack + ": " + c.out.family + " is decoder-only; --stack names a stack of T5's encoder-decoder families");
    for (int i = 0; i < n; ++i) c.out.layers[static_cast<std::size_t>(i)] = {i, "alibi", "every layer adds the same ALiBi bias (" + c.out.via + ")"};
    alibi_claim& a = c.out.claim.alibi;
    if (d.head_offset) {
      a.head_offset = *d.head_offset;
      c.log.add("head_offset", std::to_string(a.head_offset), fact_origin::declared, "--head-offset");
    }
    if (d.local_heads) {
      a.local_heads = *d.local_heads;
      c.log.add("local_heads", std::to_string(a.local_heads), fact_origin::declared, "--local-heads");
    }
  } else {
    if (d.head_offset || d.local_heads)
      throw config_error(c.r.source(), d.head_offset ? "--head-offset" : "--local-heads",
                         "T5's bias claim has no head slice (every head's bias is learned, bucket by bucket, and judged as a whole)");
    if (d.engine != engine_reading::transformers)
      throw config_error(c.r.source(), "--engine", std::string(to_string(d.engine)) + ": ropecheck has read T5's bias in transformers only");
    const bias_layer& l = c.out.layers.at(static_cast<std::size_t>(c.out.layer));
    c.log.add("layer_kind", l.kind, fact_origin::family_code, l.why);
  }
  try {
    validate(c.out.claim);
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    const std::string field = m.substr(0, m.find(':'));
    const std::string path = field == "heads"          ? heads_field
                             : field == "head_offset"  ? "--head-offset"
                             : field == "local_heads"  ? "--local-heads"
                             : field == "alibi_bias_max" ? "attn_config.alibi_bias_max"
                             : (c.r.prefix().empty() && c.out.model_type == "pix2struct" ? "text_config." : "") + field;
    throw config_error(c.r.source(), path, m.substr(m.find(':') + 2));
  }
}

}  // namespace

std::optional<bias_config_parse> parse_bias_config(const json& j, const std::string& source, const bias_declaration& decl) {
  if (!j.is_object() || detail::json_read::nesting_depth(j) > detail::json_read::max_nesting) return std::nullopt;  // the RoPE reader says why
  const reader r(source);
  const auto mt = r.string(j, "model_type", "model_type");
  if (!mt) return std::nullopt;
  bias_config_parse out;
  out.model_type = *mt;
  out.via = "model_type \"" + *mt + "\"";
  ctx c{r, j, out, decl, fact_log{out.info.facts}};
  std::string heads_field;
  const t5_family* t5 = t5_family_of(*mt);
  if (*mt == "bloom") {
    out.family = "BLOOM";
    heads_field = "n_head";
    read_bloom(c);
  } else if (*mt == "mpt") {
    out.family = "MPT";
    heads_field = "n_heads";
    read_mpt(c);
  } else if (*mt == "falcon" && r.boolean(j, "alibi", "alibi").value_or(false)) {
    out.family = "Falcon (alibi true)";
    out.via += ", alibi true";
    heads_field = "num_attention_heads";
    read_falcon(c);
  } else if (t5) {
    out.family = t5->family;
    out.claim.scheme = bias_scheme::t5;
    heads_field = std::string(t5->sub ? std::string(t5->sub) + "." : "") + "num_heads";
    if (t5->sub && (!j.contains(t5->sub) || !j.at(t5->sub).is_object()))
      r.fail(t5->sub, "missing or not an object: Pix2Struct's text decoder is configured by text_config");
    read_t5(c, *t5);
  } else if (*mt == "udop") {
    r.fail("model_type", "\"udop\": UDOP's encoder adds layout (horizontal, vertical) biases of its boxes beside T5's 1-d buckets "
                         "(configuration_udop.py relative_bias_args); ropecheck does not model them, nothing claimed");
  } else if (*mt == "layoutlmv2" || *mt == "layoutlmv3") {
    r.fail("model_type", "\"" + *mt + "\": its self-attention adds a 1-d relative bias (has_relative_attention_bias) and a 2-d spatial bias "
                         "of the layout boxes (has_spatial_attention_bias; models/" + *mt + "/modeling_" + *mt + ".py " +
                         (*mt == "layoutlmv2" ? "LayoutLMv2SelfAttention" : "LayoutLMv3SelfAttention") + "), not T5's buckets; not modelled, nothing claimed");
  } else {
    // A RoPE family (or one ropecheck has no facts for): its reader decides; a bias key on a family ropecheck knows,
    // that the family does not read, is an error naming it (the RoPE reader would otherwise ignore it).
    if (find_architecture(*mt) != nullptr && *mt != "falcon")
      for (const char* k : {"alibi", "alibi_bias_max", "use_alibi", "relative_attention_num_buckets", "relative_attention_max_distance"})
        if (j.contains(k) && !j.at(k).is_null() && !(j.at(k).is_boolean() && !j.at(k).get<bool>()))
          r.fail(k, "names a score-matrix bias, which model_type \"" + *mt + "\" does not read (its attention is claimed from its RoPE facts)");
    return std::nullopt;
  }
  if (decl.engine == engine_reading::vllm && out.claim.scheme == bias_scheme::alibi && *mt != "falcon")
    throw config_error(source, "--engine", "vllm: ropecheck has read vLLM's ALiBi for Falcon only; claim " + out.family + " as transformers reads it");
  apply_declarations(c, heads_field);
  claim& info = out.info;
  info.source = source;
  info.family = out.family;
  info.model_type = out.model_type;
  info.via = out.via;
  info.layer = out.layer;
  info.layer_type = out.layers.empty() ? "" : out.layers[static_cast<std::size_t>(out.layer)].kind;
  info.num_layers = static_cast<int>(out.layers.size());
  info.primary = false;  // claim_lines reads primary as "the first RoPE layer"; a bias claim names its layer
  info.engine = decl.engine;
  c.log.add("scheme", describe(out.claim), fact_origin::derived, "the facts above (bias_claim.hpp describe)");
  return out;
}

std::optional<bias_config_parse> load_bias_config(const std::filesystem::path& path, const bias_declaration& decl) {
  return parse_bias_config(detail::json_read::read_config_json(path), path.string(), decl);
}

}  // namespace ropecheck
