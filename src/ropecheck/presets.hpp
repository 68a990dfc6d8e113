// ropecheck/presets.hpp — named RoPE conventions: the rope settings of well-known checkpoints,
// and one sweep that covers every scaling rule and layout (used by tests, golden data, reports).
//
// Light header: plain data only, constexpr, so proofs/ evaluate the same presets at compile time.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ropecheck/config.hpp"

namespace ropecheck {

struct named_config {
  std::string name;
  rope_config cfg;
  std::int64_t seq_len = 0;  // the sequence length dynamic NTK and LongRoPE are evaluated at (0 = none)
};

// The rope fields of public config.json files (head_dim, rope_theta, rope_scaling, partial rotary).
[[nodiscard]] constexpr std::vector<named_config> model_presets() {
  std::vector<named_config> out;
  rope_config llama2;  // meta-llama/Llama-2-7b: d 128, theta 1e4, 4096
  llama2.max_position_embeddings = 4096;
  out.push_back({"llama2-7b", llama2});

  rope_config llama3 = llama2;  // meta-llama/Llama-3.1-8B: theta 5e5, llama3 scaling x8 over 8192
  llama3.base = 500000.0;
  llama3.scaling = scaling_kind::llama3;
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.original_max_position_embeddings = 8192;
  llama3.max_position_embeddings = 131072;
  out.push_back({"llama3-8b", llama3});

  rope_config qwen2 = llama2;  // Qwen/Qwen2-7B: theta 1e6, 32768
  qwen2.base = 1000000.0;
  qwen2.max_position_embeddings = 32768;
  out.push_back({"qwen2-7b", qwen2});

  rope_config qwen_yarn = qwen2;  // Qwen2.5 long-context recipe: yarn x4 over 32768
  qwen_yarn.scaling = scaling_kind::yarn;
  qwen_yarn.factor = 4.0;
  qwen_yarn.original_max_position_embeddings = 32768;
  qwen_yarn.max_position_embeddings = 131072;
  out.push_back({"qwen2.5-7b-yarn", qwen_yarn});

  rope_config deepseek;  // deepseek-ai/DeepSeek-V3: rope slice 64, yarn x40, mscale 1/1
  deepseek.head_dim = deepseek.rotary_dim = 64;
  deepseek.scaling = scaling_kind::yarn;
  deepseek.factor = 40.0;
  deepseek.original_max_position_embeddings = 4096;
  deepseek.max_position_embeddings = 163840;
  deepseek.mscale = 1.0;
  deepseek.mscale_all_dim = 1.0;
  out.push_back({"deepseek-v3", deepseek});

  rope_config pythia = llama2;  // EleutherAI/pythia: rotary_pct 0.25 of 128, 2048
  pythia.rotary_dim = 32;
  pythia.max_position_embeddings = 2048;
  out.push_back({"pythia", pythia});

  rope_config gptj;  // EleutherAI/gpt-j-6b: interleaved, rotary_dim 64 of 256, 2048
  gptj.head_dim = 256;
  gptj.rotary_dim = 64;
  gptj.pair_layout = layout::interleaved;
  gptj.max_position_embeddings = 2048;
  out.push_back({"gpt-j-6b", gptj});
  return out;
}

[[nodiscard]] constexpr std::optional<rope_config> find_preset(std::string_view name) {
  for (const auto& p : model_presets())
    if (p.name == name) return p.cfg;
  return std::nullopt;
}

[[nodiscard]] inline std::string preset_names() {
  std::string s;
  for (const auto& p : model_presets()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

// One convention per scaling rule and layout, with the sequence length the length-dependent
// rules are evaluated at. LongRoPE's factors are synthetic (Phi-3's are 48 measured numbers;
// these have the same length and shape: short near 1, long growing with the band).
[[nodiscard]] inline std::vector<named_config> rule_sweep() {
  const auto m = model_presets();
  auto preset = [&](std::string_view n) {
    for (const auto& p : m)
      if (p.name == n) return p.cfg;
    return rope_config{};
  };
  std::vector<named_config> out;
  out.push_back({"llama2_default", preset("llama2-7b")});
  out.push_back({"llama31_llama3", preset("llama3-8b")});

  rope_config linear = preset("llama2-7b");
  linear.scaling = scaling_kind::linear;
  linear.factor = 4.0;
  out.push_back({"linear_x4", linear});

  rope_config ntk = preset("llama2-7b");
  ntk.scaling = scaling_kind::ntk;
  ntk.factor = 8.0;
  out.push_back({"ntk_x8", ntk});

  rope_config dyn = preset("llama2-7b");
  dyn.scaling = scaling_kind::dynamic_ntk;
  dyn.factor = 2.0;
  out.push_back({"dynamic_x2_at_16k", dyn, 16384});

  rope_config yarn = preset("llama2-7b");
  yarn.base = 1000000.0;
  yarn.scaling = scaling_kind::yarn;
  yarn.factor = 4.0;
  yarn.max_position_embeddings = 32768;
  out.push_back({"yarn_x4", yarn});

  rope_config longrope;
  longrope.head_dim = longrope.rotary_dim = 96;
  longrope.scaling = scaling_kind::longrope;
  longrope.max_position_embeddings = 131072;
  longrope.original_max_position_embeddings = 4096;
  for (int i = 0; i < 48; ++i) {
    longrope.short_factor.push_back(1.0 + 0.01 * i);
    longrope.long_factor.push_back(1.0 + 0.5 * i);
  }
  out.push_back({"phi3_longrope_long", longrope, 8192});

  rope_config neox = preset("pythia");
  neox.head_dim = 128;
  out.push_back({"neox_partial_quarter", neox});
  out.push_back({"gptj_interleaved_partial", preset("gpt-j-6b")});
  return out;
}

}  // namespace ropecheck
