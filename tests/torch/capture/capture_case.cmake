# tests/torch/capture/capture_case.cmake — one end-to-end capture case of the torch label (see
# tests/torch/capture.cmake):
#   cmake -DPYTHON=/usr/bin/python3 -DSCRIPT=tests/torch/capture/run_capture.py -DROPECHECK=<ropecheck>
#         -DDIR=<case folder> -DRUN_ARGS="<run_capture.py options>" -DEXPECT_FILES=<n>
#         [-DFAIL="0=<bug class>;2=<bug class>;1"] -P capture_case.cmake
# Runs a toy model under ropecheck_capture into DIR (run_capture.py exits non-zero when the logits
# with capture differ from those without), then `ropecheck audit DIR/<file> --config DIR/config.json`
# on every file index.json lists. Passes only when index.json lists EXPECT_FILES files, every file
# of a forward pass listed in FAIL fails (exit 1) with findings[0].bug_class the class given there
# ("N" alone: exit 1, class not checked), and every other file passes (exit 0).
cmake_minimum_required(VERSION 3.19)  # string(JSON)

foreach(v PYTHON SCRIPT ROPECHECK DIR RUN_ARGS EXPECT_FILES)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "capture_case.cmake: -D${v}=... is required")
  endif()
endforeach()
set(fail_forwards "")
foreach(entry IN LISTS FAIL)
  if(entry MATCHES "^([0-9]+)(=(.+))?$")
    list(APPEND fail_forwards ${CMAKE_MATCH_1})
    set(fail_class_${CMAKE_MATCH_1} "${CMAKE_MATCH_3}")
  else()
    message(FATAL_ERROR "capture_case.cmake: FAIL entry '${entry}' is not N or N=<bug class>")
  endif()
endforeach()

separate_arguments(args UNIX_COMMAND "${RUN_ARGS}")
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}/verdicts")

# 1. The capture.
set(run_cmd "${PYTHON}" "${SCRIPT}" ${args} --out "${DIR}")
string(JOIN " " shown_run ${run_cmd})
execute_process(COMMAND ${run_cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the capture failed (exit ${rc}; 3 means the logits changed under capture):\n"
                      "  ${shown_run}\n${out}${err}")
endif()
message(STATUS "capture: ${shown_run}\n${out}${err}")

# 2. Every captured file through the audit.
file(READ "${DIR}/index.json" index)
string(JSON n LENGTH "${index}" files)
set(problems "")
if(NOT n EQUAL EXPECT_FILES)
  string(APPEND problems "  index.json lists ${n} files, expected ${EXPECT_FILES}\n")
endif()
set(failed 0)
set(passed 0)
if(n GREATER 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${index}" files ${i} file)
    string(JSON fwd GET "${index}" files ${i} forward)
    set(expect_exit 0)
    set(expect_class "")
    if(fwd IN_LIST fail_forwards)
      set(expect_exit 1)
      set(expect_class "${fail_class_${fwd}}")
    endif()
    set(verdict "${DIR}/verdicts/${name}.json")
    execute_process(COMMAND "${ROPECHECK}" audit "${DIR}/${name}" --config "${DIR}/config.json" --json "${verdict}"
                    RESULT_VARIABLE arc OUTPUT_VARIABLE aout ERROR_VARIABLE aerr)
    set(top_class "")
    if(EXISTS "${verdict}")
      file(READ "${verdict}" vj)
      string(JSON top_class ERROR_VARIABLE jerr GET "${vj}" findings 0 bug_class)
      if(jerr)
        set(top_class "")
      endif()
    endif()
    message(STATUS "${name} (forward ${fwd}): exit ${arc}, top finding '${top_class}'")
    if(arc STREQUAL "0")
      math(EXPR passed "${passed} + 1")
    elseif(arc STREQUAL "1")
      math(EXPR failed "${failed} + 1")
    endif()
    if(NOT arc STREQUAL "${expect_exit}")
      string(APPEND problems "  ${name} (forward ${fwd}): exit ${arc}, expected ${expect_exit}\n${aout}${aerr}\n")
    elseif(expect_class AND NOT top_class STREQUAL expect_class)
      string(APPEND problems "  ${name} (forward ${fwd}): findings[0].bug_class '${top_class}', expected "
                             "${expect_class}\n${aout}${aerr}\n")
    endif()
  endforeach()
endif()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "capture case failed:\n${problems}capture: ${shown_run}")
endif()
message(STATUS "ok: ${n} files audited, ${passed} passed, ${failed} failed as expected (${FAIL})")
