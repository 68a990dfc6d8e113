# tests/python/python.cmake — the Python door's tests (label python): python/ropecheck driven by pytest
# against the toy kernels of tests/python/toys/ (transformers', vLLM's, flash-attn's and a user's own style),
# one ctest test per test file so `ctest -L python -j2` runs them side by side. Each runs
# `python3 -m pytest tests/python/<file>` with ROPECHECK_BIN = the built CLI, PYTHONPATH = python/, and
# ROPECHECK_PLUGIN_DIR = the folder of the example plugins (tools/audit/plugin_audit.cmake) for the doors
# comparison; JUnit XML and pytest's temporary files go to ${CMAKE_CURRENT_BINARY_DIR}/python/<test>/.
# Included by tests/CMakeLists.txt.
if(NOT TARGET ropecheck)
  return()
endif()

# ROPECHECK_TORCH_PYTHON: the Python of the torch tests (tests/torch/torch.cmake, included before this file).
set(_rc_py_dir ${CMAKE_CURRENT_LIST_DIR})
set(_rc_py_out ${CMAKE_CURRENT_BINARY_DIR}/python)

execute_process(COMMAND ${ROPECHECK_TORCH_PYTHON} -c "import torch, numpy, pytest"
                RESULT_VARIABLE _rc_py_import OUTPUT_QUIET ERROR_QUIET)
if(NOT _rc_py_import EQUAL 0)
  message(STATUS "python tests: `${ROPECHECK_TORCH_PYTHON} -c \"import torch, numpy, pytest\"` failed; "
                 "registering python.available, which fails (install python3-torch python3-numpy python3-pytest)")
  add_test(NAME python.available COMMAND ${ROPECHECK_TORCH_PYTHON} -c "import torch, numpy, pytest")
  set_tests_properties(python.available PROPERTIES LABELS python TIMEOUT 60)
  return()
endif()

set(_rc_py_env "ROPECHECK_BIN=$<TARGET_FILE:ropecheck>" "PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
    "PYTHONDONTWRITEBYTECODE=1")  # no __pycache__ in the source tree
if(TARGET ropecheck_plugin_hf_f32)
  list(APPEND _rc_py_env "ROPECHECK_PLUGIN_DIR=$<TARGET_FILE_DIR:ropecheck_plugin_hf_f32>")
endif()

# ropecheck_python_test(<name> <timeout seconds>): tests/python/test_<name>.py as the ctest test python.<name>.
function(ropecheck_python_test name timeout)
  set(out ${_rc_py_out}/${name})
  file(MAKE_DIRECTORY ${out})  # the working directory: whatever a test writes beside it stays in the build tree
  add_test(NAME python.${name}
           COMMAND ${ROPECHECK_TORCH_PYTHON} -m pytest -q -rs -p no:cacheprovider
                   --rootdir=${_rc_py_dir} --basetemp=${out}/tmp --junitxml=${out}/junit.xml
                   ${_rc_py_dir}/test_${name}.py)
  set_tests_properties(python.${name} PROPERTIES LABELS python TIMEOUT ${timeout} ENVIRONMENT "${_rc_py_env}"
                       WORKING_DIRECTORY ${out})
endfunction()

ropecheck_python_test(adapters_pass 120)   # each adapter's correct toy, float32 and bfloat16 (cuda skipped)
ropecheck_python_test(bugs_named 120)      # each known bug named first
ropecheck_python_test(doors_agree 120)     # check() = `ropecheck audit` of its file = the C++ plugin door
ropecheck_python_test(bad_input 120)       # kernel and claim faults -> the package's errors
ropecheck_python_test(pytest_plugin 120)   # the fixture, JUnit properties and skips, in a pytest subprocess
ropecheck_python_test(seq_len_rules 180)   # LongRoPE and dynamic NTK judged per call's length
ropecheck_python_test(install 120)         # pip install --no-build-isolation: the entry point gives the fixture
ropecheck_python_test(drive_qk 60)         # the qk driver on a probe built in Python: the outputs file, errors
ropecheck_python_test(adapters_qk 60)      # the adapters' qk forms call the wrapped code with distinct q and k
ropecheck_python_test(qk 180)              # check_qk(): correct qk kernels pass, each qk bug named first
ropecheck_python_test(kv_cache 300)        # check_qk() with the kernel's own cache and kv_shift: correct pass, KV bugs named
ropecheck_python_test(scores_dump 120)      # `ropecheck audit --scores` on eager weights and logits: correct pass, bugs named
ropecheck_python_test(drive_attention 60)  # the attention driver on a probe built in Python: the outputs file, errors
ropecheck_python_test(adapters_attention 60)  # eager_attention and flash_attn_kvcache call the wrapped code as engines do
ropecheck_python_test(attention 300)       # check_attention(): correct attention kernels pass, each bug named first
ropecheck_python_test(capture_scores 300)  # ropecheck.capture.capture_scores on a toy Llama: correct pass, bugs named
ropecheck_python_test(bias_toys 60)        # the bias toys against independent formulas; the bias adapters (no binary)
ropecheck_python_test(bias_drive 120)      # every bias kernel through the attention driver; the bias read back from o
ropecheck_python_test(bias 600)            # check_attention() on ALiBi and T5 claims: correct pass, each bias bug named
ropecheck_python_test(mrope_hf 60)         # adapters.hf with M-RoPE position_ids [3, 1, T]: a Qwen2-VL-style toy passes, another split named
ropecheck_python_test(table 120)           # check_table(): each family's table as its code computes it passes, each port's bug named
