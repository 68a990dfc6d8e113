# tests/torch/vllm.cmake — vLLM's RoPE variants run with torch as vLLM's rotary classes compute them
# (tools/dump/torch_vllm_dump.py: DynamicNTKScalingRotaryEmbedding's static base, NTKScalingRotaryEmbedding
# fixed and mixed, YaRNScalingRotaryEmbedding with attn_factor, DeepseekScalingRotaryEmbedding in place,
# Phi3LongRoPEScaledRotaryEmbedding's once-per-engine factor choice, MRotaryEmbedding's YaRN range at 4x the
# original length, XDRotaryEmbedding's 4-row sections with the NTK-alpha base), audited end to end (label
# torch) with `--engine vllm` against the config.json the script writes in the spelling vLLM's get_rope
# reads: correct kernels pass in fp32 and bf16, each injected bug fails,
# named by the first bug class ropecheck gives; where transformers reads the same file differently, the correct
# vLLM dump is also audited without --engine vllm and what ropecheck says is pinned. Included from torch.cmake
# (needs its checks, ROPECHECK_TORCH_PYTHON and _rc_torch_case).
#
# A failing audit's other-layer hypothesis re-reads the config with the claim's reading (--engine vllm), so
# transformers' reading of the same layer is not taken for "another layer type".

# ropecheck_torch_vllm_case(<name> <expected exit> <expected top bug class or "-"> <style> <dump options...>)
# Audited with --engine vllm plus ROPECHECK_TORCH_VLLM_AUDIT_ARGS (optional, e.g. --max-model-len N);
# ROPECHECK_TORCH_VLLM_TRANSFORMERS set: without --engine vllm (transformers' reading of the same file).
function(ropecheck_torch_vllm_case name expect_exit expect_class style)
  string(JOIN " " dump_args --style ${style} ${ARGN})
  if(ROPECHECK_TORCH_VLLM_TRANSFORMERS)
    set(audit_args ${ROPECHECK_TORCH_VLLM_AUDIT_ARGS})
  else()
    set(audit_args --engine vllm ${ROPECHECK_TORCH_VLLM_AUDIT_ARGS})
  endif()
  string(JOIN " " audit_args ${audit_args})
  ropecheck_torch_audit_test(torch.vllm_${name} ${PROJECT_SOURCE_DIR}/tools/dump/torch_vllm_dump.py
                             ${CMAKE_CURRENT_BINARY_DIR}/torch/vllm_${name} "${dump_args}" ${expect_exit} "${expect_class}" "${audit_args}" "")
endfunction()

# --- dynamic: DynamicNTKScalingRotaryEmbedding, rope_scaling {"rope_type": "dynamic", "factor": 4} over 4096.
# vLLM's base is static, base * (s^2 - s + 1)^(d/(d-2)) = base * 13^(128/126) (ntk factor 13), its table
# 16384 = L * s rows. transformers' per-sequence dynamic NTK at seq_len 8192 (factor 5) instead: scaling_wrong
# (ropecheck's fit says factor 6). At seq_len 16384 = L * s transformers' dynamic base IS vLLM's: the same
# kernel on the default positions (0..16383) passes.
set(_rc_vllm_8191 --positions 0..63,64..8191/64)
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(dynamic_${dt} 0 - dynamic --dtype ${dt})
  ropecheck_torch_vllm_case(dynamic_${dt}_hf_dynamic 1 scaling_wrong dynamic --dtype ${dt} ${_rc_vllm_8191} --bug hf_dynamic)
endforeach()
ropecheck_torch_vllm_case(dynamic_float32_hf_dynamic_at_l_times_s 0 - dynamic --dtype float32 --bug hf_dynamic)
# The correct vLLM dump read as transformers reads the file: on a sequence of 8192 transformers' base is
# factor 5's; vLLM's is the dynamic base of a 16384-token sequence, named dynamic_ntk_not_reset. On the default
# positions (max 16383) both readings coincide: it passes.
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(dynamic_float32_transformers_reading 1 dynamic_ntk_not_reset dynamic --dtype float32 ${_rc_vllm_8191})
ropecheck_torch_vllm_case(dynamic_float32_transformers_reading_at_l_times_s 0 - dynamic --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- ntk / ntk_mixed: NTKScalingRotaryEmbedding, {"rope_type": "ntk", "factor": 4[, "mixed_b": 0.75]}: band i
# divided by s^((i+1)/64) (fixed) or exp(ln s ((i+1)/64)^0.75) (mixed). The NTK-alpha base base * s^(d/(d-2))
# (ropecheck's and HF's static ntk) instead: scaling_wrong. transformers has no rope type ntk: the file is read
# the same without --engine vllm (one case shows it).
foreach(st ntk ntk_mixed)
  foreach(dt float32 bfloat16)
    ropecheck_torch_vllm_case(${st}_${dt} 0 - ${st} --dtype ${dt})
    ropecheck_torch_vllm_case(${st}_${dt}_ropecheck_static_ntk 1 scaling_wrong ${st} --dtype ${dt} --bug ropecheck_static_ntk)
  endforeach()
endforeach()
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(ntk_mixed_float32_transformers_reading 0 - ntk_mixed --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- yarn: YaRNScalingRotaryEmbedding, {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings":
# 4096, "attn_factor": 0.9}: cos/sin times (0.1 ln 4 + 1) * 0.9 = 1.02477. The mscale without attn_factor
# (1.13863): attention_factor_wrong. transformers reads no attn_factor: without --engine vllm the file is
# refused (exit 2, "rope_scaling.attn_factor: not a key ropecheck reads for rope type "yarn"", no verdict).
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(yarn_${dt} 0 - yarn --dtype ${dt})
  ropecheck_torch_vllm_case(yarn_${dt}_attn_factor_ignored 1 attention_factor_wrong yarn --dtype ${dt} --bug attn_factor_ignored)
endforeach()
ropecheck_torch_vllm_case(yarn_float16 0 - yarn --dtype float16)
ropecheck_torch_vllm_case(yarn_bfloat16_npy 0 - yarn --dtype bfloat16 --format npy)
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(yarn_float32_transformers_reading 2 - yarn --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- deepseek_yarn: DeepseekScalingRotaryEmbedding on DeepSeek-V3's MLA rope slice (qk_rope_head_dim 64, YaRN
# factor 40 over 4096, mscale = mscale_all_dim = 1: attention factor 1), is_neox_style False: interleaved pairs
# rotated in place. transformers' output permutation (pair i to (i, i + 32)) instead fails; ropecheck names no
# known bug for outputs half-split under an in-place claim ("unexplained": every band off). Read as transformers
# reads the file (rope_interleave: outputs half-split) the correct in-place dump passes with the warning
# outputs_in_place; --strict fails it as layout_swapped.
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(deepseek_yarn_${dt} 0 - deepseek_yarn --dtype ${dt})
  ropecheck_torch_vllm_case(deepseek_yarn_${dt}_outputs_half_split 1 unexplained deepseek_yarn --dtype ${dt} --bug outputs_half_split)
endforeach()
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(deepseek_yarn_float32_transformers_reading 0 outputs_in_place deepseek_yarn --dtype float32)
set(ROPECHECK_TORCH_VLLM_AUDIT_ARGS "--strict")
ropecheck_torch_vllm_case(deepseek_yarn_float32_transformers_reading_strict 1 layout_swapped deepseek_yarn --dtype float32)
unset(ROPECHECK_TORCH_VLLM_AUDIT_ARGS)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- longrope: Phi3LongRoPEScaledRotaryEmbedding (model_type phi3, generated factor lists, original 4096,
# max_position_embeddings 131072, mscale sqrt(1 + ln 32 / ln 4096)): max_model_len > 4096 picks the long factors
# ONCE for every position, so a dump of positions below 4096 (a short prompt) carries the long factors. Short
# or long chosen per sequence (transformers' rule) on such a dump: short factors, scaling_wrong ("no scaling is
# applied": the short factors are 1..1.2). With --max-model-len 4096 the short factors everywhere.
# Under --engine vllm a longrope file needs --max-model-len (exit 2 without it).
set(_rc_vllm_short --positions 0..63,64..4000/64)
set(ROPECHECK_TORCH_VLLM_AUDIT_ARGS "--max-model-len 131072")
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(longrope_${dt} 0 - longrope --dtype ${dt})
  ropecheck_torch_vllm_case(longrope_short_${dt} 0 - longrope --dtype ${dt} ${_rc_vllm_short})
  ropecheck_torch_vllm_case(longrope_short_${dt}_per_sequence_switch 1 scaling_wrong longrope --dtype ${dt} ${_rc_vllm_short}
                            --bug per_sequence_switch)
endforeach()
set(ROPECHECK_TORCH_VLLM_AUDIT_ARGS "--max-model-len 4096")
ropecheck_torch_vllm_case(longrope_max_model_len_4096_float32 0 - longrope --dtype float32 --max-model-len 4096)
unset(ROPECHECK_TORCH_VLLM_AUDIT_ARGS)
ropecheck_torch_vllm_case(longrope_float32_no_max_model_len 2 - longrope --dtype float32)
# Read as transformers reads the file: a short dump claims the short factors and fails, named as what vLLM does
# (scaling_wrong: "LongRoPE with the long factors at sequence length 4001, where the short ones apply"); a long
# dump (max position 131071 > 4096) claims the long ones and passes: the readings differ only below the
# original length.
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(longrope_short_float32_transformers_reading 1 scaling_wrong longrope --dtype float32 ${_rc_vllm_short})
ropecheck_torch_vllm_case(longrope_float32_transformers_reading 0 - longrope --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- mrope_yarn: MRotaryEmbedding (contiguous [16, 24, 24]) with YaRN factor 4 over original 32768 on
# Qwen2.5-VL's config: vLLM enlarges max_position 4x before YaRN's inv_freq, so the correction range is taken
# at 131072 (bands 30..47 ramp instead of 23..40). The range at 32768 (transformers' YaRN) instead fails,
# named by the YaRN parameter fit (judge/src/pass_scaling_fit.cpp): scaling_wrong, "YaRN with
# original_max_position_embeddings 32768 (claimed 131072)". Read as transformers reads the file, the
# correct vLLM dump fails the same way.
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(mrope_yarn_${dt} 0 - mrope_yarn --dtype ${dt})
  ropecheck_torch_vllm_case(mrope_yarn_${dt}_correction_at_original 1 scaling_wrong mrope_yarn --dtype ${dt}
                            --bug correction_at_original)
endforeach()
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(mrope_yarn_float32_transformers_reading 1 scaling_wrong mrope_yarn --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)

# --- xdrope: XDRotaryEmbedding (DynamicNTKAlphaRotaryEmbedding with xdrope_section) on a llama config.json,
# rope_scaling {"rope_type": "xdrope", "alpha": 1000, "xdrope_section": [16, 16, 16, 16]}: the NTK-alpha base
# 10000 * 1000^(128/126) over a table of 32768 rows, the bands in 4 contiguous blocks of 16, block r turned by
# position row r (P, W, H, T as HunYuan-VL's get_xdrope_input_positions lays them out: two images' grid tokens
# differ, the text tokens have every row equal), half-split pairs. The plain base instead: scaling_wrong (on the
# text tokens). Rows 1 and 2 (W, H) exchanged: mrope_rows_swapped. Sections [8, 24, 16, 16]:
# mrope_section_wrong (the contiguous split is fitted band by band for any number of rows). transformers has no rope type xdrope: without --engine vllm
# the file is refused (exit 2, "pass --engine vllm to claim vLLM's reading", no verdict).
foreach(dt float32 bfloat16)
  ropecheck_torch_vllm_case(xdrope_${dt} 0 - xdrope --dtype ${dt})
  ropecheck_torch_vllm_case(xdrope_${dt}_alpha_ignored 1 scaling_wrong xdrope --dtype ${dt} --bug alpha_ignored)
  ropecheck_torch_vllm_case(xdrope_${dt}_rows_swapped 1 mrope_rows_swapped xdrope --dtype ${dt} --bug rows_swapped)
  ropecheck_torch_vllm_case(xdrope_${dt}_section_wrong 1 mrope_section_wrong xdrope --dtype ${dt} --bug section_wrong)
endforeach()
set(ROPECHECK_TORCH_VLLM_TRANSFORMERS ON)
ropecheck_torch_vllm_case(xdrope_float32_transformers_reading 2 - xdrope --dtype float32)
unset(ROPECHECK_TORCH_VLLM_TRANSFORMERS)
