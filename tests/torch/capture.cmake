# tests/torch/capture.cmake — ropecheck.capture (python/ropecheck/capture.py) end to end (label torch). Each case runs a
# toy model of tests/torch/capture/ (toy_hf.py: transformers' apply_rotary_pos_emb convention;
# toy_vllm.py: vLLM's RotaryEmbedding.forward(positions, query, key)) under the capture, prefill of
# 300 tokens then 2 decode steps, two layers, q and k: 12 files. Every captured file is audited with
# the captured config.json (tests/torch/capture/capture_case.cmake). Included by torch.cmake after
# its torch check, so ROPECHECK_TORCH_PYTHON imports torch and numpy here.
set(_rc_capture_dir ${CMAKE_CURRENT_LIST_DIR}/capture)

# ropecheck_capture_case(<name> <failing forward passes: "-" or "N=class,N=class,N"> <run options...>)
# (forward 0 is the 300-token prefill, 1 and 2 the decode steps at positions 300 and 301)
function(ropecheck_capture_case name fail)
  string(JOIN " " run_args ${ARGN})
  if(fail STREQUAL "-")
    set(fail "")
  endif()
  string(REPLACE "," ";" fail "${fail}")
  add_test(NAME torch.capture.${name}
           COMMAND ${CMAKE_COMMAND}
                   -DPYTHON=${ROPECHECK_TORCH_PYTHON}
                   -DSCRIPT=${_rc_capture_dir}/run_capture.py
                   -DROPECHECK=$<TARGET_FILE:ropecheck>
                   -DDIR=${CMAKE_CURRENT_BINARY_DIR}/torch/capture/${name}
                   "-DRUN_ARGS=${run_args}"
                   -DEXPECT_FILES=12
                   "-DFAIL=${fail}"
                   -P ${_rc_capture_dir}/capture_case.cmake)
  set_tests_properties(torch.capture.${name} PROPERTIES LABELS torch TIMEOUT 300)
endfunction()

# Correct toys: every captured file passes.
ropecheck_capture_case(hf_fp32 - --toy hf --dtype float32)
ropecheck_capture_case(hf_bf16 - --toy hf --dtype bfloat16)
ropecheck_capture_case(hf_bf16_seq_heads_batch2 - --toy hf --dtype bfloat16 --unsqueeze-dim 2 --batch 2)
ropecheck_capture_case(vllm_neox_fp32 - --toy vllm --style neox --dtype float32)
ropecheck_capture_case(vllm_neox_bf16 - --toy vllm --style neox --dtype bfloat16)
ropecheck_capture_case(vllm_gptj_fp32 - --toy vllm --style gptj --dtype float32)
ropecheck_capture_case(vllm_gptj_bf16 - --toy vllm --style gptj --dtype bfloat16)
ropecheck_capture_case(vllm_neox_fp32_partial - --toy vllm --style neox --dtype float32 --rotary-fraction 0.5)

# One known bug each, in the rotary code (the positions the model is given stay right): the files of
# the forward passes the bug touches fail with the bug named first, the others pass.
ropecheck_capture_case(hf_fp32_bf16_positions 0=positions_low_precision,2=positions_offset
                       --toy hf --dtype float32 --bug bf16_positions)
ropecheck_capture_case(hf_bf16_bf16_positions 0=positions_low_precision,2=positions_offset
                       --toy hf --dtype bfloat16 --bug bf16_positions)
ropecheck_capture_case(hf_fp32_decode_off_by_one 1=positions_offset,2=positions_offset
                       --toy hf --dtype float32 --bug decode_off_by_one)
ropecheck_capture_case(hf_bf16_decode_off_by_one 1=positions_offset,2=positions_offset
                       --toy hf --dtype bfloat16 --bug decode_off_by_one)
# (bf16(300) = 300, so the first decode step is right; bf16(301) = 300: seen from one token, an
# offset by -1, which is what the audit names.)
# A bf16 cos/sin cache in an fp32 model (vLLM's cache is built in the model dtype): named on the
# prefill; a decode step's one position fails without a class fitting (the audit's cos/sin fit
# needs more than one position), so only its failure is checked.
ropecheck_capture_case(vllm_fp32_cache_bf16 0=cos_sin_low_precision,1,2 --toy vllm --dtype float32 --bug cache_bf16)

# inv_freq rounded to bf16 (model.to(torch.bfloat16) does that to the buffer): named on the prefill
# (dense positions 0..299: every angle is within 0.1 rad of the claim, so the judge asks the frequency
# fit before the cos/sin classes) and on each decode step (one position: every angle within the fp32
# drift bound of p * bf16(theta_i), none of the claim's).
ropecheck_capture_case(hf_fp32_inv_freq_bf16 0=inv_freq_low_precision,1=inv_freq_low_precision,2=inv_freq_low_precision
                       --toy hf --dtype float32 --bug inv_freq_bf16)

# The wrapper's unit tests (restoring, bit-identical outputs, errors, index.json, limits).
add_test(NAME torch.capture.unit COMMAND ${ROPECHECK_TORCH_PYTHON} ${_rc_capture_dir}/test_capture.py -v)
set_tests_properties(torch.capture.unit PROPERTIES LABELS torch TIMEOUT 300)
