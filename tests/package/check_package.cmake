# Installs ropecheck into a scratch prefix, moves the prefix (the package must be relocatable: no
# absolute build or source paths in its CMake files), then configures, builds and runs the consumer
# project of tests/package/consumer against the moved package:
#   correct_rope_conformance  the consumer's own templated kernel in float, double, bf16 and fp16:
#                             every test passes (its own ctest, label ropecheck-conformance)
#   buggy_rope_conformance    the same kernel with four bugs engines ship: the binary fails, and its
#                             JUnit XML (--gtest_output=xml) shows each expected test failing with the
#                             expected bug class, and every other expectation below
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_package.cmake needs -D${v}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/staging")
file(RENAME "${WORK_DIR}/staging" "${WORK_DIR}/moved")
set(prefix "${WORK_DIR}/moved")

# Relocatable: no installed CMake file names the build tree, the source tree or the staging prefix.
file(GLOB_RECURSE cmake_files "${prefix}/*.cmake")
if(NOT cmake_files)
  message(FATAL_ERROR "no CMake package files installed under ${prefix}")
endif()
foreach(f IN LISTS cmake_files)
  file(READ "${f}" text)
  foreach(path "${BUILD_DIR}" "${SOURCE_DIR}" "${WORK_DIR}/staging")
    string(FIND "${text}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${path}: the installed package is not relocatable")
    endif()
  endforeach()
endforeach()

# The version check: the consumer asks for 0.1; a request for another minor version must be refused.
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package/consumer" -B "${WORK_DIR}/build" -G Ninja
    "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
file(WRITE "${WORK_DIR}/wrong_version/CMakeLists.txt"
     "cmake_minimum_required(VERSION 3.25)\nproject(v LANGUAGES CXX)\nfind_package(ropecheck 0.2 REQUIRED)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S "${WORK_DIR}/wrong_version" -B "${WORK_DIR}/wrong_version/build"
                        "-DCMAKE_PREFIX_PATH=${prefix}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "version")
  message(FATAL_ERROR "find_package(ropecheck 0.2) against 0.1 should fail naming the version:\n${out}\n${err}")
endif()

run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")

# The correct kernel: every discovered test passes.
run(${CMAKE_COMMAND} -E env ROPECHECK_SEED=1 ctest --test-dir "${WORK_DIR}/build" -R "^correct/" -L ropecheck-conformance
    --output-on-failure --no-tests=error)
execute_process(COMMAND ctest --test-dir "${WORK_DIR}/build" -N -R "^correct/" OUTPUT_VARIABLE listing)
string(REGEX MATCH "Total Tests: ([0-9]+)" _ "${listing}")
if(NOT CMAKE_MATCH_1 EQUAL 40)  # 4 types x (2 judge tests + 7 properties + the query/key score check)
  message(FATAL_ERROR "expected 40 conformance tests of the correct kernel, found ${CMAKE_MATCH_1}:\n${listing}")
endif()

# The buggy kernels: the binary fails, and the XML says which test failed with which bug class.
set(xml "${WORK_DIR}/buggy.xml")
execute_process(COMMAND "${WORK_DIR}/build/buggy_rope_conformance" "--gtest_output=xml:${xml}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "buggy_rope_conformance passed:\n${out}")
endif()
file(READ "${xml}" junit)
# One list element per testcase: the messages' own ';', '[' and ']' are list syntax to CMake, so they
# are replaced first.
string(REPLACE ";" "<semicolon>" junit "${junit}")
string(REPLACE "[" "<lsb>" junit "${junit}")
string(REPLACE "]" "<rsb>" junit "${junit}")
string(REPLACE "<testcase " ";<testcase " cases "${junit}")

# expect(<kernel> <test> <FAIL|PASS> [<bug class that must be listed first>])
set(problems "")
function(expect kernel test outcome)
  set(found FALSE)
  foreach(c IN LISTS cases)
    if(c MATCHES "^<testcase name=\"${test}\"" AND c MATCHES "classname=\"${kernel}/float32\"")
      set(found TRUE)
      string(FIND "${c}" "<failure" f)
      if(outcome STREQUAL "FAIL" AND f EQUAL -1)
        string(APPEND problems "${kernel}.${test} should fail but passed\n")
      elseif(outcome STREQUAL "PASS" AND NOT f EQUAL -1)
        string(APPEND problems "${kernel}.${test} should pass but failed\n")
      endif()
      if(ARGC GREATER 3 AND NOT c MATCHES "name=\"bug_classes\" value=\"${ARGV3}[,\"]")
        string(APPEND problems "${kernel}.${test}: bug class ${ARGV3} not named first\n")
      endif()
    endif()
  endforeach()
  if(NOT found)
    string(APPEND problems "${kernel}.${test}: no such testcase in the XML\n")
  endif()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()
expect(bf16_positions prefill_outputs_pass_the_judge FAIL positions_low_precision)
expect(bf16_positions decode_outputs_pass_the_judge FAIL positions_low_precision)
expect(bf16_positions rotation_matches_reference FAIL positions_low_precision)
expect(fast_sincos prefill_outputs_pass_the_judge FAIL fast_sincos)
expect(fast_sincos rotation_matches_reference FAIL fast_sincos)
expect(hard_coded_base prefill_outputs_pass_the_judge FAIL base_wrong)
expect(hard_coded_base rotation_matches_reference FAIL base_wrong)
expect(decode_ahead prefill_outputs_pass_the_judge PASS)
expect(decode_ahead decode_outputs_pass_the_judge FAIL positions_offset)
expect(decode_ahead rotation_matches_reference FAIL positions_offset)
# The query/key check reads scores: a base both sides get wrong fails it; a decode offset both sides share
# leaves every score right (the decode test names it), and an adapter without apply_k is checked all the same.
expect(hard_coded_base query_key_scores_match_reference FAIL base_wrong)
expect(decode_ahead query_key_scores_match_reference PASS)
# A failure carries its replay command.
if(NOT junit MATCHES "replay: RC_PARAMS=" OR NOT junit MATCHES "rerun: ROPECHECK_SEED=")
  string(APPEND problems "the failures' messages carry no replay / rerun line\n")
endif()
if(problems)
  message(FATAL_ERROR "buggy kernels not reported as expected:\n${problems}\n(JUnit XML: ${xml})")
endif()
message(STATUS "package: relocatable, version-checked; correct kernel 40/40 tests passed; buggy kernels failed as expected")
