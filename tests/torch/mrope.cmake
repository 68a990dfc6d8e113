# tests/torch/mrope.cmake — HF's M-RoPE run with torch (tools/dump/torch_mrope_dump.py: Qwen2-VL /
# Qwen2.5-VL contiguous sections, Qwen3-VL interleaved; with partial rotary: Qwen3.5 interleaved over
# 64 of 256, GLM-4.1V contiguous with interleaved pairs over 64 of 128, GLM-4.5V contiguous half-split
# over 64 of 128), audited end to end (label torch): correct ones pass in fp32 and bf16, each bug is
# named first. Included from torch.cmake (needs its checks).
# The claim is the config.json the script writes, in each family's own spelling (Qwen2-VL:
# rope_scaling {"type": "mrope", "mrope_section": [...]}; Qwen3-VL: text_config.rope_scaling with
# "mrope_interleaved": true; Qwen3.5: text_config.rope_parameters, 8 layers of which 3 and 7 are full
# attention, the dump's __metadata__ "layer": "3"; GLM-4.1V / GLM-4.5V: text_config with
# partial_rotary_factor 0.5 and rope_scaling {"type"/"rope_type": "default", "mrope_section"}), read
# by src/ropecheck/config_json.hpp; the pair layout of glm4v / glm4v_moe comes from the family's code.

function(ropecheck_torch_mrope_case name expect_exit expect_class style)
  string(JOIN " " dump_args --style ${style} ${ARGN})
  ropecheck_torch_audit_test(torch.mrope_${name} ${PROJECT_SOURCE_DIR}/tools/dump/torch_mrope_dump.py
                             ${CMAKE_CURRENT_BINARY_DIR}/torch/mrope_${name} "${dump_args}" ${expect_exit} "${expect_class}" "" "")
endfunction()

foreach(style qwen2vl qwen3vl qwen3_5 glm4v glm4v_moe)
  ropecheck_torch_mrope_case(${style}_fp32 0 - ${style} --dtype float32)
  ropecheck_torch_mrope_case(${style}_bf16 0 - ${style} --dtype bfloat16)
  ropecheck_torch_mrope_case(${style}_rows_swapped 1 mrope_rows_swapped ${style} --bug rows_swapped)
  ropecheck_torch_mrope_case(${style}_section_wrong 1 mrope_section_wrong ${style} --bug section_wrong)
  ropecheck_torch_mrope_case(${style}_text_positions 1 mrope_text_positions ${style} --bug text_positions)
  ropecheck_torch_mrope_case(${style}_bf16_text_positions 1 mrope_text_positions ${style} --dtype bfloat16 --bug text_positions)
  ropecheck_torch_mrope_case(${style}_cos_sin_downcast 1 cos_sin_low_precision ${style} --dtype float32 --bug cos_sin_downcast)
endforeach()

# Partial rotary (rotary_dim < head_dim): inv_freq's exponent over head_dim instead of rotary_dim.
foreach(style qwen3_5 glm4v glm4v_moe)
  ropecheck_torch_mrope_case(${style}_freqs_over_head_dim 1 rotary_dim_wrong ${style} --bug freqs_over_head_dim)
  ropecheck_torch_mrope_case(${style}_bf16_freqs_over_head_dim 1 rotary_dim_wrong ${style} --dtype bfloat16 --bug freqs_over_head_dim)
endforeach()

# The pair layout inside the rotary part: GLM-4.1V's interleaved pairs vs GLM-4.5V's half split.
foreach(style glm4v glm4v_moe)
  ropecheck_torch_mrope_case(${style}_layout_swapped 1 layout_swapped ${style} --bug layout_swapped)
  ropecheck_torch_mrope_case(${style}_bf16_layout_swapped 1 layout_swapped ${style} --dtype bfloat16 --bug layout_swapped)
endforeach()
