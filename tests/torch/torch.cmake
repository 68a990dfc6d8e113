# tests/torch/torch.cmake — real torch RoPE implementations audited end to end (label torch).
# tools/dump/torch_rope_dump.py runs transformers' Llama RoPE (hf) or Meta's llama RoPE (meta) with
# Debian's python3-torch, correct or with one known bug; `ropecheck audit` must pass the correct ones
# (exit 0) and fail the buggy ones (exit 1) naming the bug class first. One case per test; each
# writes ${CMAKE_CURRENT_BINARY_DIR}/torch/<case>/ (dump, config.json, verdict.json, audit.txt).
# Included (optionally) by tests/CMakeLists.txt.
if(NOT TARGET ropecheck)
  return()
endif()

set(ROPECHECK_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH
    "Python with Debian's python3-torch and python3-numpy, for the torch end-to-end tests")
set(_rc_torch_case ${CMAKE_CURRENT_LIST_DIR}/audit_case.cmake)

execute_process(COMMAND ${ROPECHECK_TORCH_PYTHON} -c "import torch, numpy"
                RESULT_VARIABLE _rc_torch_import OUTPUT_QUIET ERROR_QUIET)
if(NOT _rc_torch_import EQUAL 0)
  message(STATUS "torch tests: `${ROPECHECK_TORCH_PYTHON} -c \"import torch, numpy\"` failed; "
                 "registering torch.available, which fails (run tools/bootstrap)")
  add_test(NAME torch.available COMMAND ${CMAKE_COMMAND} -DUNAVAILABLE=1 -DPYTHON=${ROPECHECK_TORCH_PYTHON} -P ${_rc_torch_case})
  set_tests_properties(torch.available PROPERTIES LABELS torch TIMEOUT 300)
  return()
endif()

# ropecheck_torch_audit_test(<test> <script> <case folder> <dump options> <expected exit> <class or "-">
#                            <audit flags> <claim config.json or "">): one end-to-end case. Its dump is made by
# the setup test torch.dumps (every case's dump in one interpreter that imported torch once:
# tools/dump/batch_dump.py); the case audits it (audit_case.cmake) and prints the dump
# script's command line to reproduce it alone.
function(ropecheck_torch_audit_test test script dir dump_args expect_exit expect_class audit_args config)
  if(expect_class STREQUAL "-")  # no class expected (a passing case, or a failure ropecheck names no class for)
    set(expect_class "")
  endif()
  add_test(NAME ${test}
           COMMAND ${CMAKE_COMMAND}
                   -DPYTHON=${ROPECHECK_TORCH_PYTHON}
                   -DSCRIPT=${script}
                   -DROPECHECK=$<TARGET_FILE:ropecheck>
                   -DDIR=${dir}
                   "-DDUMP_ARGS=${dump_args}"
                   -DEXPECT_EXIT=${expect_exit}
                   -DEXPECT_CLASS=${expect_class}
                   "-DAUDIT_ARGS=${audit_args}"
                   "-DCONFIG=${config}"
                   -P ${_rc_torch_case})
  set_tests_properties(${test} PROPERTIES LABELS torch TIMEOUT 300 FIXTURES_REQUIRED torch_dumps)
  set_property(GLOBAL APPEND PROPERTY ROPECHECK_TORCH_DUMPS "${dir}\t${script}\t${dump_args}")
endfunction()

# ropecheck_torch_case(<name> <expected exit> <expected top bug class or "-"> <dump options...>)
function(ropecheck_torch_case name expect_exit expect_class)
  string(JOIN " " dump_args ${ARGN})
  ropecheck_torch_audit_test(torch.${name} ${PROJECT_SOURCE_DIR}/tools/dump/torch_rope_dump.py
                             ${CMAKE_CURRENT_BINARY_DIR}/torch/${name} "${dump_args}" ${expect_exit} "${expect_class}"
                             "${ROPECHECK_TORCH_AUDIT_ARGS}" "${ROPECHECK_TORCH_CONFIG}")
endfunction()

# Correct implementations (default scaling, base 500000 unless said): the audit passes them.
ropecheck_torch_case(hf_fp32 0 - --impl hf --dtype float32)
ropecheck_torch_case(hf_bf16 0 - --impl hf --dtype bfloat16)
ropecheck_torch_case(meta_fp32 0 - --impl meta --dtype float32)
ropecheck_torch_case(meta_bf16 0 - --impl meta --dtype bfloat16)
ropecheck_torch_case(hf_bf16_npy 0 - --impl hf --dtype bfloat16 --format npy)
ropecheck_torch_case(hf_fp32_yarn 0 - --impl hf --dtype float32 --scaling yarn --factor 4
                     --original-max-position-embeddings 32768)
ropecheck_torch_case(hf_fp32_partial 0 - --impl hf --dtype float32 --rotary-fraction 0.5)
ropecheck_torch_case(hf_fp32_llama3 0 - --impl hf --dtype float32 --scaling llama3 --factor 8
                     --low-freq-factor 1 --high-freq-factor 4 --original-max-position-embeddings 8192)

# One known bug each: the audit fails them and names the class first.
ropecheck_torch_case(hf_fp32_bf16_positions 1 positions_low_precision --impl hf --dtype float32 --bug bf16_positions)
ropecheck_torch_case(hf_bf16_bf16_positions 1 positions_low_precision --impl hf --dtype bfloat16 --bug bf16_positions)
ropecheck_torch_case(meta_fp32_bf16_positions 1 positions_low_precision --impl meta --dtype float32 --bug bf16_positions)
ropecheck_torch_case(hf_fp32_wrong_base 1 base_wrong --impl hf --dtype float32 --bug wrong_base)
ropecheck_torch_case(meta_fp32_layout_swapped 1 layout_swapped --impl meta --dtype float32 --bug layout_swapped)
ropecheck_torch_case(hf_fp32_cos_sin_bf16 1 cos_sin_low_precision --impl hf --dtype float32 --bug cos_sin_bf16)
ropecheck_torch_case(hf_fp32_offset_by_one 1 positions_offset --impl hf --dtype float32 --bug offset_by_one)
ropecheck_torch_case(hf_fp32_partial_over_head_dim 1 rotary_dim_wrong --impl hf --dtype float32
                     --rotary-fraction 0.5 --bug partial_over_head_dim)
ropecheck_torch_case(hf_fp32_yarn_factor_missing 1 attention_factor_wrong --impl hf --dtype float32 --scaling yarn
                     --factor 4 --original-max-position-embeddings 32768 --bug yarn_factor_missing)
ropecheck_torch_case(hf_fp32_yarn_factor_doubled 1 attention_factor_wrong --impl hf --dtype float32 --scaling yarn
                     --factor 4 --original-max-position-embeddings 32768 --bug yarn_factor_doubled)
ropecheck_torch_case(hf_fp32_inv_freq_bf16 1 inv_freq_low_precision --impl hf --dtype float32 --bug inv_freq_bf16)
ropecheck_torch_case(hf_fp32_decode_at_zero 1 positions_constant --impl hf --dtype float32 --bug decode_at_zero)
ropecheck_torch_case(hf_fp32_fast_sincos 1 fast_sincos --impl hf --dtype float32 --bug fast_sincos)
ropecheck_torch_case(hf_fp32_dynamic_ntk_not_reset 1 dynamic_ntk_not_reset --impl hf --dtype float32
                     --scaling dynamic --factor 2 --bug dynamic_ntk_not_reset)
ropecheck_torch_case(hf_fp32_llama3_scaling_missing 1 scaling_wrong --impl hf --dtype float32 --scaling llama3 --factor 8
                     --low-freq-factor 1 --high-freq-factor 4 --original-max-position-embeddings 8192 --bug scaling_missing)
ropecheck_torch_case(hf_bf16_yarn_scaling_missing 1 scaling_wrong --impl hf --dtype bfloat16 --scaling yarn --factor 4
                     --original-max-position-embeddings 32768 --bug scaling_missing)
# More dtypes and layouts of correct kernels, and the same bugs through Meta's kernel and in bf16.
ropecheck_torch_case(hf_fp16 0 - --impl hf --dtype float16)
ropecheck_torch_case(meta_fp32_llama3 0 - --impl meta --dtype float32 --scaling llama3 --factor 8
                     --low-freq-factor 1 --high-freq-factor 4 --original-max-position-embeddings 8192)
ropecheck_torch_case(meta_fp32_wrong_base 1 base_wrong --impl meta --dtype float32 --bug wrong_base)
ropecheck_torch_case(hf_bf16_inv_freq_bf16 1 inv_freq_low_precision --impl hf --dtype bfloat16 --bug inv_freq_bf16)
# A KV cache dump (x raw keys, y cached keys, positions as the engine claims): decode keys off by one.
ropecheck_torch_case(hf_fp32_kv_decode_off_by_one 1 positions_wrong --impl hf --dtype float32 --bug kv_decode_off_by_one)

# Architectures whose layout comes from config.json's model_type (src/ropecheck/architectures.hpp):
# GLM-4's interleaved partial rotary and DeepSeek-V3's rope_interleave (interleaved in, half-split out),
# each audited with the config.json the script writes (model_type, no ropecheck_layout).
ropecheck_torch_case(glm_fp32 0 - --impl glm --dtype float32 --rotary-fraction 0.5 --base 10000)
ropecheck_torch_case(glm_bf16 0 - --impl glm --dtype bfloat16 --rotary-fraction 0.5 --base 10000)
ropecheck_torch_case(deepseek_fp32 0 - --impl deepseek --dtype float32 --head-dim 64 --base 10000)
ropecheck_torch_case(deepseek_bf16 0 - --impl deepseek --dtype bfloat16 --head-dim 64 --base 10000)
# Outputs left in place (as vLLM's DeepSeek rotates these pairs) under rope_interleave's claim: scores are
# the same when q and k agree, so it passes with the warning outputs_in_place; --strict fails it.
ropecheck_torch_case(deepseek_fp32_outputs_in_place 0 outputs_in_place --impl deepseek --dtype float32 --head-dim 64
                     --base 10000 --bug outputs_in_place)
set(ROPECHECK_TORCH_AUDIT_ARGS "--strict")
ropecheck_torch_case(deepseek_fp32_outputs_in_place_strict 1 layout_swapped --impl deepseek --dtype float32 --head-dim 64
                     --base 10000 --bug outputs_in_place)
unset(ROPECHECK_TORCH_AUDIT_ARGS)
# The same in-place kernel claimed with outputs in place (as vLLM's DeepSeek rotates): it passes.
set(ROPECHECK_TORCH_AUDIT_ARGS "--outputs in_place")
ropecheck_torch_case(deepseek_fp32_outputs_in_place_claimed_in_place 0 - --impl deepseek --dtype float32 --head-dim 64
                     --base 10000 --bug outputs_in_place)
unset(ROPECHECK_TORCH_AUDIT_ARGS)
# A correct GLM-4 dump judged with a Llama-style claim (its config.json with --layout half_split).
set(ROPECHECK_TORCH_AUDIT_ARGS "--layout half_split")
ropecheck_torch_case(glm_fp32_llama_claim 1 layout_swapped --impl glm --dtype float32 --rotary-fraction 0.5 --base 10000)
unset(ROPECHECK_TORCH_AUDIT_ARGS)
# A dump that says (__metadata__ "layer") which Gemma 3 layer it is, audited with Gemma 3's own
# per-layer config.json: layer 0 is a sliding layer (base 10000, no scaling), layer 5 a global one
# (base 1e6, linear 8), so the same local-layer kernel passes as layer 0 and fails as layer 5, named
# layer_convention_wrong (it passes as a sliding_attention layer of the same config).
set(ROPECHECK_TORCH_CONFIG ${PROJECT_SOURCE_DIR}/tests/data/configs/gemma3_4b.json)
ropecheck_torch_case(hf_gemma3_local_layer_from_metadata 0 - --impl hf --dtype float32 --head-dim 256 --base 10000 --layer 0)
ropecheck_torch_case(hf_gemma3_local_kernel_as_global_layer 1 layer_convention_wrong --impl hf --dtype float32 --head-dim 256 --base 10000 --layer 5)
unset(ROPECHECK_TORCH_CONFIG)

include(${CMAKE_CURRENT_LIST_DIR}/capture.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/mrope.cmake)  # M-RoPE (tools/dump/torch_mrope_dump.py)
include(${CMAKE_CURRENT_LIST_DIR}/families.cmake)  # 2025-26 families (tools/dump/torch_family_dump.py)
include(${CMAKE_CURRENT_LIST_DIR}/vllm.cmake)  # vLLM's variants (tools/dump/torch_vllm_dump.py), --engine vllm

# The setup of every case above: their dumps, made in one interpreter (tools/dump/batch_dump.py; each
# case forked from a parent that imported torch once). A case whose dump script fails fails itself.
get_property(_rc_torch_dumps GLOBAL PROPERTY ROPECHECK_TORCH_DUMPS)
string(REPLACE ";" "\n" _rc_torch_dumps "${_rc_torch_dumps}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/torch/dumps.tsv "${_rc_torch_dumps}\n")
add_test(NAME torch.dumps
         COMMAND ${ROPECHECK_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/tools/dump/batch_dump.py
                 --manifest ${CMAKE_CURRENT_BINARY_DIR}/torch/dumps.tsv --jobs 1)
set_tests_properties(torch.dumps PROPERTIES LABELS torch TIMEOUT 600 FIXTURES_SETUP torch_dumps COST 900)
unset(_rc_torch_dumps)
