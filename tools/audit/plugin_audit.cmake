# `ropecheck audit --plugin lib.so`: probe + judge + the property suite against a foreign kernel, and
# the example plugins written in the style of foreign kernels (tools/audit/plugins/)
# (included from tools/CMakeLists.txt, after ropecheck_plugin_loader is defined).
find_package(rapidcheck REQUIRED)  # Debian librapidcheck-dev

add_library(ropecheck_plugin_audit STATIC ${CMAKE_CURRENT_LIST_DIR}/plugin_audit.cpp ${CMAKE_CURRENT_LIST_DIR}/plugin_probe.cpp
            ${CMAKE_CURRENT_LIST_DIR}/plugin_child.cpp)
# plugin_audit.hpp is std types and the judge's verdict: RapidCheck, MPFR and the tests' headers stay PRIVATE.
target_include_directories(ropecheck_plugin_audit PUBLIC ${CMAKE_CURRENT_LIST_DIR})
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
  if(name MATCHES "^fault_(segv|describe_segv)$")
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
ropecheck_foreign_plugin(onnx_f32 onnx_rope.cpp 0 "")
ropecheck_foreign_plugin(onnx_f16 onnx_rope.cpp 0 "" ONNX_F16)
ropecheck_foreign_plugin(onnx_f32_interleaved onnx_rope.cpp 0 "" ONNX_INTERLEAVED)
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
# Faults: a finding each, exit 1, never a crash of ropecheck (apply runs in a child process).
ropecheck_foreign_plugin(fault_nan hf_rope.cpp 1 non_finite FAULT_NAN)
ropecheck_foreign_plugin(fault_segv hf_rope.cpp 1 plugin_crashed FAULT_SEGV)
ropecheck_foreign_plugin(fault_abort hf_rope.cpp 1 plugin_crashed FAULT_ABORT)
ropecheck_foreign_plugin(fault_hang hf_rope.cpp 1 plugin_timeout FAULT_HANG)
ropecheck_foreign_plugin(fault_write_past_y hf_rope.cpp 1 plugin_out_of_bounds FAULT_WRITE_PAST_Y)
ropecheck_foreign_plugin(fault_nondeterministic hf_rope.cpp 1 nondeterministic FAULT_NONDETERMINISTIC)
# Cannot be loaded (exit 2; the third field is then the message's key phrase).
ropecheck_foreign_plugin(fault_describe_segv hf_rope.cpp 2 "crashed while loading" FAULT_DESCRIBE_SEGV)
set(ROPECHECK_FOREIGN_PLUGINS ${ROPECHECK_FOREIGN_PLUGINS} CACHE INTERNAL "example plugins: name|exit|first class")

# The plugin audit's outputs (summary, JSON, JUnit) are the command line's: the json header stays there.
target_sources(ropecheck PRIVATE ${CMAKE_CURRENT_LIST_DIR}/plugin_output.cpp)

# The speed of the plugin audit of a 128-dim fp32 kernel (prints the figures; not a test).
add_executable(bench_plugin_audit ${CMAKE_CURRENT_LIST_DIR}/../bench_plugin_audit.cpp)
target_link_libraries(bench_plugin_audit PRIVATE ropecheck_plugin_audit)
add_dependencies(bench_plugin_audit ropecheck_plugin_hf_f32)
target_compile_definitions(bench_plugin_audit PRIVATE ROPECHECK_BENCH_PLUGIN="$<TARGET_FILE:ropecheck_plugin_hf_f32>")
