// config/src/config_json_bias_families.cpp — the table of bias_families() (ropecheck/bias_config.hpp): every model
// type whose attention adds a score-matrix bias, as ropecheck reads it, with the code each rule was read from.
// The reader is config_json_bias.cpp; docs/configs.md "Score-matrix biases: the families" is this table in words.
#include <vector>

#include "ropecheck/bias_config.hpp"

namespace ropecheck {

const std::vector<bias_family_row>& bias_families() {
  static const std::vector<bias_family_row> rows{
      {"bloom", "BLOOM", bias_scheme::alibi,
       "press slopes of n_head heads, +slope x key position (transformers models/bloom/modeling_bloom.py build_alibi_tensor: "
       "slopes * ((attention_mask.cumsum(-1) - 1) * mask)); baddbmm(alibi, q, k^T, beta=1, alpha=inv_norm_factor): bias unscaled"},
      {"mpt", "MPT (MosaicML)", bias_scheme::alibi,
       "MPT gen_slopes of n_heads heads with alibi_bias_max 8, slope x (n - (K-1)) (transformers models/mpt/modeling_mpt.py "
       "build_mpt_alibi_tensor; MptModel.forward passes no alibi_bias_max, and never reads attn_config.alibi)"},
      {"falcon", "Falcon with alibi: true (falcon-rw)", bias_scheme::alibi,
       "press slopes rounded to bf16, +slope x key position, (scores + alibi) x 1/sqrt(head_dim) (transformers "
       "models/falcon/modeling_falcon.py build_alibi_tensor, FalconAttention.forward); --engine vllm: fp32 slopes "
       "(vllm/model_executor/models/falcon.py)"},
      {"t5", "T5", bias_scheme::t5,
       "buckets of n - m per stack: encoder bidirectional, decoder causal; layer 0 of each stack computes, the rest share "
       "(transformers models/t5/modeling_t5.py T5Stack.__init__ has_relative_attention_bias=bool(i == 0), T5Attention.compute_bias)"},
      {"mt5", "mT5", bias_scheme::t5, "as T5 (transformers models/mt5/modeling_mt5.py, copied from T5)"},
      {"umt5", "UMT5", bias_scheme::t5,
       "as T5, but every layer computes its own bias (transformers models/umt5/modeling_umt5.py UMT5Block.__init__: "
       "UMT5LayerSelfAttention(config); UMT5LayerSelfAttention.__init__: UMT5Attention(config, has_relative_attention_bias=True))"},
      {"switch_transformers", "Switch Transformers", bias_scheme::t5,
       "as T5 (transformers models/switch_transformers/modeling_switch_transformers.py SwitchTransformersStack: "
       "has_relative_attention_bias=bool(i == 0))"},
      {"pop2piano", "Pop2Piano", bias_scheme::t5, "as T5 (transformers models/pop2piano/modeling_pop2piano.py, copied from T5)"},
      {"longt5", "LongT5 (decoder only)", bias_scheme::t5,
       "decoder: T5's causal buckets (transformers models/longt5/modeling_longt5.py LongT5Block.__init__: is_decoder -> "
       "LongT5LayerSelfAttention); the encoder's local / transient-global block attention is refused"},
      {"pix2struct", "Pix2Struct (text decoder)", bias_scheme::t5,
       "text_config: T5's causal buckets, layer 0 computes (transformers models/pix2struct/modeling_pix2struct.py "
       "Pix2StructTextModel.__init__ has_relative_attention_bias=bool(i == 0)); the vision encoder has none"},
  };
  return rows;
}

}  // namespace ropecheck
