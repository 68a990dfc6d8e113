# tests/fuzz/fuzz.cmake — the CTest fuzz.short_run (label fuzz): fuzz/run.sh builds the libFuzzer
# targets of `ropecheck audit`'s parsers (safetensors, .npy) and of config.json with clang into
# ${PROJECT_BINARY_DIR}/fuzz-build and runs each for ROPECHECK_FUZZ_SECONDS (20) seconds; it fails
# on any crash, sanitizer report, leak, out-of-memory or timeout and prints the input and the
# command that replays it. Included from tests/CMakeLists.txt.
#
# clang++ and its libFuzzer runtime (Debian: clang, libclang-rt-14-dev) are looked for at configure
# time; without them the test is still registered and fails, saying to run tools/bootstrap. In that
# case this file is also the test's command: `cmake -P tests/fuzz/fuzz.cmake` prints the message and fails.
if(CMAKE_SCRIPT_MODE_FILE)
  message(FATAL_ERROR "${ROPECHECK_FUZZ_MISSING}\n"
          "The fuzz targets need clang++ with its libFuzzer runtime (Debian 12: clang and libclang-rt-14-dev, "
          "listed in tools/debian-packages.txt). Run tools/bootstrap to install what is missing, then re-run cmake.")
endif()

set(ROPECHECK_FUZZ_SECONDS 20 CACHE STRING "Seconds each libFuzzer target runs in the CTest fuzz.short_run")

find_program(ROPECHECK_FUZZ_CLANGXX NAMES clang++ clang++-14 DOC "clang++ for the libFuzzer targets (fuzz/)")
find_program(ROPECHECK_FUZZ_CLANG NAMES clang clang-14 DOC "clang for the libFuzzer targets (fuzz/)")
find_program(ROPECHECK_FUZZ_BASH NAMES bash DOC "bash, to run fuzz/run.sh")

set(_rc_fuzz_missing "")
if(NOT ROPECHECK_FUZZ_CLANGXX OR NOT ROPECHECK_FUZZ_CLANG)
  set(_rc_fuzz_missing "fuzz.short_run: clang/clang++ not found at configure time.")
elseif(NOT ROPECHECK_FUZZ_BASH)
  set(_rc_fuzz_missing "fuzz.short_run: bash not found at configure time (fuzz/run.sh is a bash script).")
else()
  # libFuzzer's runtime: libclang_rt.fuzzer-<arch>.a (or <triple>/libclang_rt.fuzzer.a) under the
  # resource directory. A glob, not a test compile, so configuring stays fast.
  execute_process(COMMAND ${ROPECHECK_FUZZ_CLANGXX} -print-resource-dir
                  OUTPUT_VARIABLE _rc_fuzz_resource OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc_fuzz_rv)
  set(_rc_fuzz_runtime "")
  if(NOT _rc_fuzz_rv EQUAL 0 OR NOT _rc_fuzz_resource)
    set(_rc_fuzz_missing "fuzz.short_run: ${ROPECHECK_FUZZ_CLANGXX} -print-resource-dir failed at configure time.")
  else()
    file(GLOB_RECURSE _rc_fuzz_runtime "${_rc_fuzz_resource}/lib/libclang_rt.fuzzer*.a")
    if(NOT _rc_fuzz_runtime)
      set(_rc_fuzz_missing "fuzz.short_run: ${ROPECHECK_FUZZ_CLANGXX} has no libFuzzer runtime at configure time (no libclang_rt.fuzzer*.a under ${_rc_fuzz_resource}/lib).")
    endif()
  endif()
endif()

if(_rc_fuzz_missing)
  message(STATUS "${_rc_fuzz_missing} The test fuzz.short_run will fail until tools/bootstrap installs clang and libclang-rt-14-dev.")
  add_test(NAME fuzz.short_run
           COMMAND ${CMAKE_COMMAND} "-DROPECHECK_FUZZ_MISSING=${_rc_fuzz_missing}" -P ${CMAKE_CURRENT_LIST_FILE})
else()
  add_test(NAME fuzz.short_run
           COMMAND ${CMAKE_COMMAND} -E env CC=${ROPECHECK_FUZZ_CLANG} CXX=${ROPECHECK_FUZZ_CLANGXX} CMAKE=${CMAKE_COMMAND} FUZZ_JOBS=1
                   ${ROPECHECK_FUZZ_BASH} ${PROJECT_SOURCE_DIR}/fuzz/run.sh ${PROJECT_BINARY_DIR}/fuzz-build ${ROPECHECK_FUZZ_SECONDS})
endif()
# Budget: ~80 s to build with clang on one core, 3 x 20 s of fuzzing (each libFuzzer run is one process).
# One core throughout (its build with one job: FUZZ_JOBS=1), so that it has a core to itself while the
# other runs the rest of the suite: the same executions as when it ran alone (RUN_SERIAL) on 2 cores,
# without leaving one idle. COST: started first, so that it is not the suite's last, lone test.
set_tests_properties(fuzz.short_run PROPERTIES LABELS fuzz TIMEOUT 600 PROCESSORS 1 COST 1000)
unset(_rc_fuzz_missing)
unset(_rc_fuzz_runtime)
unset(_rc_fuzz_resource)
