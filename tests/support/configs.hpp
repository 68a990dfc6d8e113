// tests/support/configs.hpp — the model conventions the tests sweep, one per scaling rule, with
// parameters of real checkpoints (Llama-2, Llama-3.1, Qwen2, YaRN, Phi-3, GPT-NeoX).
#pragma once

#include <string>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck::test {

struct named_config {
  std::string name;
  rope_config cfg;
  std::int64_t seq_len = 0;  // for dynamic NTK / LongRoPE
};

inline std::vector<named_config> scaling_configs() {
  std::vector<named_config> out;
  rope_config llama2;  // d 128, base 1e4, 4096
  out.push_back({"llama2_default", llama2});

  rope_config llama3 = llama2;
  llama3.base = 500000.0;
  llama3.scaling = scaling_kind::llama3;
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.max_position_embeddings = 131072;
  llama3.original_max_position_embeddings = 8192;
  out.push_back({"llama31_llama3", llama3});

  rope_config linear = llama2;
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  out.push_back({"linear_x4", linear});

  rope_config ntk = llama2;
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  out.push_back({"ntk_x8", ntk});

  rope_config dyn = llama2;
  dyn.scaling = scaling_kind::dynamic_ntk;
  dyn.factor = 2.0;
  out.push_back({"dynamic_x2_at_16k", dyn, 16384});

  rope_config yarn = llama2;
  yarn.base = 1000000.0;
  yarn.scaling = scaling_kind::yarn;
  yarn.factor = 4.0;
  yarn.max_position_embeddings = 32768;
  out.push_back({"yarn_x4", yarn});

  rope_config longrope;
  longrope.head_dim = 96;
  longrope.rotary_dim = 96;
  longrope.scaling = scaling_kind::longrope;
  longrope.max_position_embeddings = 131072;
  longrope.original_max_position_embeddings = 4096;
  for (int i = 0; i < 48; ++i) {
    longrope.short_factor.push_back(1.0 + 0.01 * i);
    longrope.long_factor.push_back(1.0 + 0.5 * i);
  }
  out.push_back({"phi3_longrope_long", longrope, 8192});

  rope_config neox;  // Pythia: rotary_pct 0.25 of head_dim 128
  neox.head_dim = 128;
  neox.rotary_dim = 32;
  neox.max_position_embeddings = 2048;
  out.push_back({"neox_partial_quarter", neox});

  rope_config gptj = neox;  // GPT-J: interleaved, rotary_dim 64 of 256
  gptj.head_dim = 256;
  gptj.rotary_dim = 64;
  gptj.pair_layout = layout::interleaved;
  out.push_back({"gptj_interleaved_partial", gptj});
  return out;
}

}  // namespace ropecheck::test
