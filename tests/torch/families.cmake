# tests/torch/families.cmake — the RoPE of five 2025-26 families run with torch as each family's code
# computes it (tools/dump/torch_family_dump.py: nanochat's reversed rotate_half, Gemma 4's proportional
# RoPE on a full-attention layer, Hunyuan dense's NTK-alpha, Phi-3.5-MoE's LongRoPE short/long mscale,
# the DeepSeek-V3.2 lightning indexer), audited end to end (label torch) against the config.json the
# script writes in the family's own spelling: correct kernels pass in fp32 and bf16, each broken
# convention fails, named by its first bug class where ropecheck names one. Included from torch.cmake
# (needs its checks, ROPECHECK_TORCH_PYTHON and _rc_torch_case).

# ropecheck_torch_family_case(<name> <expected exit> <expected top bug class or "-"> <family> <dump options...>)
# ROPECHECK_TORCH_FAMILY_AUDIT_ARGS (optional): flags added to the audit.
function(ropecheck_torch_family_case name expect_exit expect_class family)
  string(JOIN " " dump_args --family ${family} ${ARGN})
  ropecheck_torch_audit_test(torch.family_${name} ${PROJECT_SOURCE_DIR}/tools/dump/torch_family_dump.py
                             ${CMAKE_CURRENT_BINARY_DIR}/torch/family_${name} "${dump_args}" ${expect_exit} "${expect_class}" "${ROPECHECK_TORCH_FAMILY_AUDIT_ARGS}" "")
endfunction()

# nanochat (transformers models/nanochat/modeling_nanochat.py): rotate_half cat(x2, -x1), pairs turn by
# R(-p); config.json model_type "nanochat". HF Llama's rotate_half instead turns by R(+p).
foreach(dt float32 bfloat16)
  ropecheck_torch_family_case(nanochat_${dt} 0 - nanochat --dtype ${dt})
  ropecheck_torch_family_case(nanochat_${dt}_forward_rotation 1 rotation_reversed nanochat --dtype ${dt} --bug forward_rotation)
endforeach()

# Gemma 4, full-attention layer 5 (__metadata__ "layer"): proportional RoPE over global_head_dim 128
# (16 turning bands, 48 frozen; the class default 512 once), and a sliding layer (layer 0, default RoPE).
# The usual partial rotary instead fails with no class named (ropecheck's diagnosis: "no known bug class
# explains the error"); the turning bands' exponent over 2*rope_angles instead of head_dim is exactly a
# base change (base^(head_dim / (2*rope_angles))): base_wrong.
foreach(dt float32 bfloat16)
  ropecheck_torch_family_case(gemma4_full_${dt} 0 - gemma4 --head-dim 128 --dtype ${dt})
  ropecheck_torch_family_case(gemma4_${dt}_partial_as_usual 1 - gemma4 --head-dim 128 --dtype ${dt} --bug partial_as_usual)
  ropecheck_torch_family_case(gemma4_${dt}_exponent_over_rotary 1 base_wrong gemma4 --head-dim 128 --dtype ${dt}
                              --bug exponent_over_rotary)
endforeach()
ropecheck_torch_family_case(gemma4_full512_float32 0 - gemma4 --dtype float32)
ropecheck_torch_family_case(gemma4_sliding_float32 0 - gemma4 --head-dim 128 --layer 0 --dtype float32)

# Hunyuan dense NTK-alpha (rope_scaling {"type": "dynamic", "alpha": 1000}): base 10000 * 1000^(128/126).
# The plain base (alpha ignored): scaling_wrong.
foreach(dt float32 bfloat16)
  ropecheck_torch_family_case(hunyuan_${dt} 0 - hunyuan --dtype ${dt})
  ropecheck_torch_family_case(hunyuan_${dt}_alpha_ignored 1 scaling_wrong hunyuan --dtype ${dt} --bug alpha_ignored)
endforeach()

# Phi-3.5-MoE LongRoPE (generated factor lists, short_mscale 1.1, long_mscale 1.243163121016122): short
# dumps (max position < 4096: short factors, short mscale), long ones (default positions to 131071), the
# boundary (max position 4095: seq_len 4096 == original, short; 4096: seq_len 4097 > original, long).
set(_rc_phimoe_short --positions 0..63,64..4000/64)
set(_rc_phimoe_4095 --positions 0..63,64..4095/64,4095)
set(_rc_phimoe_4096 --positions 0..63,64..4096/64,4096)
foreach(dt float32 bfloat16)
  ropecheck_torch_family_case(phimoe_short_${dt} 0 - phimoe --dtype ${dt} ${_rc_phimoe_short})
  ropecheck_torch_family_case(phimoe_long_${dt} 0 - phimoe --dtype ${dt})
  ropecheck_torch_family_case(phimoe_long_${dt}_computed_attention_factor 1 attention_factor_wrong phimoe --dtype ${dt}
                              --bug computed_attention_factor)
endforeach()
ropecheck_torch_family_case(phimoe_at_4095_float32 0 - phimoe --dtype float32 ${_rc_phimoe_4095})
ropecheck_torch_family_case(phimoe_at_4096_float32 0 - phimoe --dtype float32 ${_rc_phimoe_4096})
ropecheck_torch_family_case(phimoe_short_float32_computed_attention_factor 1 attention_factor_wrong phimoe --dtype float32
                            ${_rc_phimoe_short} --bug computed_attention_factor)
# Long factors and long mscale already at seq_len == original: fails at max position 4095. ropecheck names
# the frequencies first (scaling_wrong: "LongRoPE with the long factors at sequence length 4096, where the short
# ones apply", judge/src/pass_scaling_fit.cpp), then the mscale half (attention_factor_wrong: 1.24316 where 1.1
# is claimed). At 4096 both rules pick the long regime: the same kernel passes.
ropecheck_torch_family_case(phimoe_at_4095_float32_switch_at_equality 1 scaling_wrong phimoe --dtype float32
                            ${_rc_phimoe_4095} --bug switch_at_equality)
ropecheck_torch_family_case(phimoe_at_4096_float32_switch_at_equality 0 - phimoe --dtype float32
                            ${_rc_phimoe_4096} --bug switch_at_equality)

# DeepSeek-V3.2 lightning indexer (__metadata__ "part": "indexer"): the first 64 of 128 coordinates,
# half-split, default scaling and the model's YaRN (factor 40 over 4096); the attention's interleaved
# layout instead: layout_swapped. An .npy dump carries "part" in its ropecheck.json sidecar ("metadata");
# and --indexer says the same.
foreach(dt float32 bfloat16)
  ropecheck_torch_family_case(deepseek_v32_indexer_${dt} 0 - deepseek_v32 --dtype ${dt})
  ropecheck_torch_family_case(deepseek_v32_indexer_yarn_${dt} 0 - deepseek_v32 --dtype ${dt} --scaling yarn)
  ropecheck_torch_family_case(deepseek_v32_indexer_${dt}_interleaved 1 layout_swapped deepseek_v32 --dtype ${dt}
                              --bug interleaved_indexer)
endforeach()
ropecheck_torch_family_case(deepseek_v32_indexer_bfloat16_npy 0 - deepseek_v32 --dtype bfloat16 --format npy)
ropecheck_torch_family_case(deepseek_v32_indexer_npy_interleaved 1 layout_swapped deepseek_v32 --format npy --bug interleaved_indexer)
set(ROPECHECK_TORCH_FAMILY_AUDIT_ARGS "--indexer")
ropecheck_torch_family_case(deepseek_v32_indexer_bfloat16_npy_flag 0 - deepseek_v32 --dtype bfloat16 --format npy)
unset(ROPECHECK_TORCH_FAMILY_AUDIT_ARGS)
# Gemma 4 as .npy: the sidecar's "layer" picks the full layer's convention (no --layer).
ropecheck_torch_family_case(gemma4_full_float32_npy 0 - gemma4 --head-dim 128 --format npy)
