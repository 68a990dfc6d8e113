# `ropecheck audit --plugin lib.so`: probe + judge + the property suite against a foreign kernel, and
# the example plugins written in the style of foreign kernels (tools/audit/plugins/)
# (included from tools/CMakeLists.txt, after ropecheck_plugin_loader is defined).
find_package(rapidcheck REQUIRED)  # Debian librapidcheck-dev

add_library(ropecheck_plugin_audit STATIC ${CMAKE_CURRENT_LIST_DIR}/plugin_audit.cpp ${CMAKE_CURRENT_LIST_DIR}/plugin_probe.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plugin_child.cpp ${CMAKE_CURRENT_LIST_DIR}/plugin_limits.cpp)
# plugin_audit.hpp is std types and the judge's verdict: RapidCheck, MPFR and the tests' headers stay PRIVATE.
target_include_directories(ropecheck_plugin_audit PUBLIC ${CMAKE_CURRENT_LIST_DIR} PRIVATE ${PROJECT_SOURCE_DIR}/tools)  # "markup.hpp"
# The property drivers, the implementation-under-test notion, the RapidCheck runner and the drift rule
# are the conformance suite's drivers (conformance/drivers/, header-only, no GoogleTest): the audit
# runs exactly what the property suites and a user's conformance test run.
target_link_libraries(ropecheck_plugin_audit PUBLIC ropecheck_plugin_loader ropecheck::judge PRIVATE ropecheck_conformance_drivers ropecheck::core ropecheck::reference rapidcheck)
target_compile_options(ropecheck_plugin_audit PRIVATE ${ROPECHECK_STRICT_FP_FLAGS})

# Example plugins: each a small C-ABI .so built from one source of tools/audit/plugins/ with the
# definitions that select its convention, bug or fault. ROPECHECK_FOREIGN_PLUGINS lists
# "name|expected exit|first bug class" for the tests (tests/audit/CMakeLists.txt).
set(ROPECHECK_FOREIGN_PLUGINS "")
function(ropecheck_foreign_plugin name source expect first_class)
  set(target ropecheck_plugin_${name})
  add_library(${target} SHARED ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugins/${source})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugins)
  target_compile_definitions(${target} PRIVATE ROPECHECK_FOREIGN_NAME="${name}" ${ARGN})
  # As compiled by their projects: IEEE arithmetic, no contraction into FMA (results are bitwise reproducible).
  target_compile_options(${target} PRIVATE -ffp-contract=off -fno-fast-math)
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  # Their null writes are the deliberate fault, and the door must see it as a foreign library makes it: a
  # SIGSEGV. Under the `asan` preset, UBSan's null check would report the write first and exit(1) instead.
  if(name MATCHES "^fault_(segv|describe_segv|qk_segv)$")
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
  endif()
  set(ROPECHECK_FOREIGN_PLUGINS ${ROPECHECK_FOREIGN_PLUGINS} "${name}|${expect}|${first_class}" PARENT_SCOPE)
endfunction()
# Correct conventions real engines use: pass (at most an angle_drift_fp32 warning).
ropecheck_foreign_plugin(ggml_neox_f32 ggml_rope.cpp 0 "" GGML_NEOX)
ropecheck_foreign_plugin(ggml_norm_f32 ggml_rope.cpp 0 "")
ropecheck_foreign_plugin(hf_f32 hf_rope.cpp 0 "")
ropecheck_foreign_plugin(hf_bf16 hf_rope.cpp 0 "" HF_BF16)
ropecheck_foreign_plugin(meta_f32 meta_rope.cpp 0 "")
ropecheck_foreign_plugin(yarn_f32 yarn_rope.cpp 0 "")
ropecheck_foreign_plugin(llama3_f32 llama3_rope.cpp 0 "")
ropecheck_foreign_plugin(onnx_f32 onnx_rope.cpp 0 "")
ropecheck_foreign_plugin(onnx_f16 onnx_rope.cpp 0 "" ONNX_F16)
ropecheck_foreign_plugin(onnx_f32_interleaved onnx_rope.cpp 0 "" ONNX_INTERLEAVED)
ropecheck_foreign_plugin(table_f32 table_rope.cpp 0 "")
# Bugs: fail, their class named first.
ropecheck_foreign_plugin(bug_base_500000 hf_rope.cpp 1 base_wrong BUG_BASE_500000)
# The fast sin/cos both ways real kernels do it: angles formed in fp32 (then ~1 rad off at the probe's
# 2^24 +- 8, which must not hide the bug), and formed and range-reduced in double.
ropecheck_foreign_plugin(bug_fast_sincos hf_rope.cpp 1 fast_sincos BUG_FAST_SINCOS ANGLE_FP64)
ropecheck_foreign_plugin(bug_fast_sincos_fp32_angles hf_rope.cpp 1 fast_sincos BUG_FAST_SINCOS)
ropecheck_foreign_plugin(bug_bf16_positions hf_rope.cpp 1 positions_low_precision BUG_BF16_POSITIONS)
ropecheck_foreign_plugin(bug_interleaved_pairs hf_rope.cpp 1 layout_swapped BUG_INTERLEAVED_PAIRS)
ropecheck_foreign_plugin(bug_theta_over_head_dim hf_rope.cpp 1 rotary_dim_wrong BUG_THETA_OVER_HEAD_DIM)
ropecheck_foreign_plugin(bug_yarn_no_attention_factor yarn_rope.cpp 1 attention_factor_wrong BUG_NO_ATTENTION_FACTOR)
# Parameter fits inside the scaling rule (judge/src/pass_scaling_fit.cpp): the claimed rule, other numbers.
ropecheck_foreign_plugin(bug_yarn_original_short yarn_rope.cpp 1 scaling_wrong BUG_YARN_ORIGINAL_SHORT)
ropecheck_foreign_plugin(bug_yarn_factor_inverted yarn_rope.cpp 1 scaling_wrong BUG_YARN_FACTOR_INVERTED)
ropecheck_foreign_plugin(bug_llama3_smoothing_inverted llama3_rope.cpp 1 scaling_wrong BUG_LLAMA3_SMOOTHING_INVERTED)
# A KV-cache off-by-one: right in prefill calls, one position ahead in one-token (decode) calls.
ropecheck_foreign_plugin(bug_decode_one_ahead hf_rope.cpp 1 positions_offset BUG_DECODE_ONE_AHEAD)
ropecheck_foreign_plugin(bug_conjugate meta_rope.cpp 1 rotation_reversed BUG_CONJUGATE)
# A cos/sin cache grown by recurrence from anchors every 4096, and a query loop bounded by num_kv_heads.
ropecheck_foreign_plugin(bug_accumulated_table table_rope.cpp 1 cos_sin_accumulated BUG_ACCUMULATED_TABLE)
ropecheck_foreign_plugin(bug_first_head_only table_rope.cpp 1 heads_wrong BUG_FIRST_HEAD_ONLY)
# Faults: a finding each, exit 1, never a crash of ropecheck (apply runs in a child process).
ropecheck_foreign_plugin(fault_nan hf_rope.cpp 1 non_finite FAULT_NAN)
ropecheck_foreign_plugin(fault_segv hf_rope.cpp 1 plugin_crashed FAULT_SEGV)
ropecheck_foreign_plugin(fault_abort hf_rope.cpp 1 plugin_crashed FAULT_ABORT)
ropecheck_foreign_plugin(fault_hang hf_rope.cpp 1 plugin_timeout FAULT_HANG)
ropecheck_foreign_plugin(fault_write_past_y hf_rope.cpp 1 plugin_out_of_bounds FAULT_WRITE_PAST_Y)
ropecheck_foreign_plugin(fault_nondeterministic hf_rope.cpp 1 nondeterministic FAULT_NONDETERMINISTIC)
# Cannot be loaded (exit 2; the third field is then the message's key phrase).
ropecheck_foreign_plugin(fault_describe_segv hf_rope.cpp 2 "crashed while loading" FAULT_DESCRIBE_SEGV)
# ABI 2 (plugins/abi2_hf_rope.cpp): the claim by a config.json of tests/data/configs and the kernel's
# limits. LongRoPE's long factors are read from the same file, so kernel and claim cannot drift apart.
set(_h4_configs ${PROJECT_SOURCE_DIR}/tests/data/configs)
file(READ ${_h4_configs}/phi3_mini_128k.json _h4_phi3)
string(JSON _h4_n LENGTH "${_h4_phi3}" rope_scaling long_factor)
set(_h4_long "")
math(EXPR _h4_last "${_h4_n} - 1")
foreach(i RANGE ${_h4_last})
  string(JSON v GET "${_h4_phi3}" rope_scaling long_factor ${i})
  string(APPEND _h4_long "${v},")
endforeach()
set(_h4_llama "ROPECHECK_CONFIG_PATH=\"${_h4_configs}/llama3_1_8b.json\"" LLAMA3_CACHE)
set(_h4_phi "ROPECHECK_CONFIG_PATH=\"${_h4_configs}/phi3_mini_128k.json\"" LONGROPE "PHI3_LONG_FACTOR=${_h4_long}")
ropecheck_foreign_plugin(abi2_llama3_cache abi2_hf_rope.cpp 0 "" ${_h4_llama})
ropecheck_foreign_plugin(abi2_llama3_cache_no_inverse abi2_hf_rope.cpp 0 "" ${_h4_llama} NO_INVERSE)
# A LongRoPE claim (ABI 1 cannot express it) by config_path: the judge and the properties both evaluate it at
# the probe's sequence length (its last position + 1: the long factors; conformance/drivers/judged_binding.hpp).
ropecheck_foreign_plugin(abi2_longrope_phi3 abi2_hf_rope.cpp 0 "" ${_h4_phi})
ropecheck_foreign_plugin(bug_abi2_cache_offset abi2_hf_rope.cpp 1 positions_offset ${_h4_llama} BUG_CACHE_OFFSET)
ropecheck_foreign_plugin(bug_abi2_longrope_no_attention_factor abi2_hf_rope.cpp 1 attention_factor_wrong ${_h4_phi} BUG_NO_ATTENTION_FACTOR)
# Bad ABI 2 declarations: exit 2, the message names the field (a relative config_path is resolved
# beside the .so: the message shows where it was looked for).
ropecheck_foreign_plugin(bad_abi2_config_path abi2_hf_rope.cpp 2 "ropecheck_convention.config_path: cannot read '"
                         LLAMA3_CACHE "ROPECHECK_CONFIG_PATH=\"no_such_config.json\"")
ropecheck_foreign_plugin(bad_abi2_max_position abi2_hf_rope.cpp 2 "ropecheck_convention.max_position: 40 is below the probe's dense positions 0..63"
                         ${_h4_llama} BAD_MAX_POSITION=40)
# M-RoPE through apply2 (plugins/mrope_rope.cpp): Qwen2.5-VL's claim by its config.json; the probe's
# image and video tokens carry their rows (tools/audit/plugin_limits.hpp limit_probe).
set(_h6_qwen_vl "ROPECHECK_CONFIG_PATH=\"${_h4_configs}/qwen2_5_vl_7b.json\"")
ropecheck_foreign_plugin(mrope_f32 mrope_rope.cpp 0 "" ${_h6_qwen_vl})
ropecheck_foreign_plugin(bug_mrope_rows_swapped mrope_rope.cpp 1 mrope_rows_swapped ${_h6_qwen_vl} BUG_MROPE_ROWS_SWAPPED)
ropecheck_foreign_plugin(bug_mrope_text_positions mrope_rope.cpp 1 mrope_text_positions ${_h6_qwen_vl} BUG_MROPE_TEXT_POSITIONS)
ropecheck_foreign_plugin(bad_mrope_position_rows mrope_rope.cpp 2 "ropecheck_convention.position_rows: 1, but the claim is M-RoPE with 3 position rows"
                         ${_h6_qwen_vl} BAD_POSITION_ROWS=1)
# ABI 3 (plugins/qk_rope.cpp): ropecheck_plugin_apply_qk, the qk form (8 query, 2 key heads) judged after the x form
# and the properties. apply() is right in every one of them: only the pair names the bug.
ropecheck_foreign_plugin(qk_f32 qk_rope.cpp 0 "")
ropecheck_foreign_plugin(bug_qk_crossed qk_rope.cpp 1 qk_crossed BUG_QK_CROSSED)
ropecheck_foreign_plugin(bug_qk_keys_one_ahead qk_rope.cpp 1 key_positions_wrong BUG_KEYS_ONE_AHEAD)
ropecheck_foreign_plugin(bug_qk_keys_base_10000 qk_rope.cpp 1 key_convention_wrong BUG_KEYS_BASE_10000)
ropecheck_foreign_plugin(fault_qk_segv qk_rope.cpp 1 plugin_crashed FAULT_QK_SEGV)
# An ABI 2 plugin writing abi = ROPECHECK_PLUGIN_ABI, rebuilt against the ABI 3 header: audited exactly as its ABI 2
# build (abi2_llama3_cache_no_inverse; tests/audit/plugin_door_cli_test.cpp compares them).
ropecheck_foreign_plugin(abi2_llama3_cache_rebuilt_abi3 abi2_hf_rope.cpp 0 "" ${_h4_llama} NO_INVERSE ABI_FROM_HEADER)
# apply_qk takes one position per token: an M-RoPE claim exporting it is refused, naming position_rows.
ropecheck_foreign_plugin(bad_mrope_apply_qk mrope_rope.cpp 2 "ropecheck_convention.position_rows: 3 rows, but ropecheck_plugin_apply_qk takes one position per token"
                         ${_h6_qwen_vl} BAD_APPLY_QK)
set(ROPECHECK_FOREIGN_PLUGINS ${ROPECHECK_FOREIGN_PLUGINS} CACHE INTERNAL "example plugins: name|exit|first class")

# The plugin audit's outputs (summary, JSON, JUnit) are the command line's: the json header stays there.
target_sources(ropecheck PRIVATE ${CMAKE_CURRENT_LIST_DIR}/plugin_output.cpp)

# The speed of the plugin audit of a 128-dim fp32 kernel (prints the figures; not a test).
add_executable(bench_plugin_audit ${CMAKE_CURRENT_LIST_DIR}/../bench_plugin_audit.cpp)
target_link_libraries(bench_plugin_audit PRIVATE ropecheck_plugin_audit)
add_dependencies(bench_plugin_audit ropecheck_plugin_hf_f32)
target_compile_definitions(bench_plugin_audit PRIVATE ROPECHECK_BENCH_PLUGIN="$<TARGET_FILE:ropecheck_plugin_hf_f32>")
