# tests/torch/audit_case.cmake — one end-to-end case of the torch label (see torch.cmake):
#   cmake -DPYTHON=/usr/bin/python3 -DSCRIPT=tools/dump/torch_rope_dump.py -DROPECHECK=<ropecheck>
#         -DDIR=<case folder> -DDUMP_ARGS="<dump options>" -DEXPECT_EXIT=<0|1|2> [-DEXPECT_CLASS=<bug class>]
#         [-DAUDIT_ARGS="<convention flags added to the audit>"] [-DCONFIG=<config.json to claim instead>]
#         -P audit_case.cmake
# The dump is already in DIR, made by the setup test torch.dumps (tools/dump/batch_dump.py runs SCRIPT
# with DUMP_ARGS --out DIR --self-check), with its exit status in DIR/dump.rc and its output in
# DIR/dump.log. This runs `ropecheck audit DIR/dump.safetensors (or DIR/dump for --format npy) --config
# DIR/config.json --json DIR/verdict.json`, and passes only when the dump script succeeded, the exit code
# is EXPECT_EXIT, verdict.json's "pass" agrees with it, and (when EXPECT_CLASS is given)
# findings[0].bug_class is EXPECT_CLASS. The audit's human output is printed in every case (and kept
# in DIR/audit.txt), with the command that makes the dump alone.
#   cmake -DUNAVAILABLE=1 [-DPYTHON=...] -P audit_case.cmake   fails with the message to install torch.
cmake_minimum_required(VERSION 3.19)  # string(JSON)

if(UNAVAILABLE)
  if(NOT PYTHON)
    set(PYTHON /usr/bin/python3)
  endif()
  message(FATAL_ERROR
    "torch end-to-end tests need Debian's python3-torch and python3-numpy for ${PYTHON} "
    "(`${PYTHON} -c \"import torch, numpy\"` failed when this build was configured). "
    "Run `tools/bootstrap test` (it installs the packages of tools/debian-packages.txt), then reconfigure.")
endif()

foreach(v PYTHON SCRIPT ROPECHECK DIR DUMP_ARGS EXPECT_EXIT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "audit_case.cmake: -D${v}=... is required")
  endif()
endforeach()

separate_arguments(args UNIX_COMMAND "${DUMP_ARGS}")
set(dump "${DIR}/dump.safetensors")
if(DUMP_ARGS MATCHES "--format[ =]npy")
  set(dump "${DIR}/dump")
endif()

string(JOIN " " shown_dump "${PYTHON}" "${SCRIPT}" ${args} --out "${DIR}" --self-check)
# 1. The dump, made by the setup test torch.dumps: its exit status and output.
if(NOT EXISTS "${DIR}/dump.rc")
  message(FATAL_ERROR "no dump in ${DIR}: the setup test torch.dumps makes it (ctest runs it first; "
                      "`ctest -FS torch_dumps` skips it). Alone:\n  ${shown_dump}")
endif()
file(STRINGS "${DIR}/dump.rc" rc LIMIT_COUNT 1)
set(out "")
if(EXISTS "${DIR}/dump.log")
  file(READ "${DIR}/dump.log" out)
endif()
file(REMOVE "${DIR}/verdict.json" "${DIR}/audit.txt")  # this run's, never a previous run's
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the dump script failed (exit ${rc}):\n  ${shown_dump}\n${out}")
endif()
message(STATUS "dump: ${shown_dump}\n${out}")

# 2. The audit.
# AUDIT_ARGS (optional): convention flags on top of the claim, e.g. another claim's layout.
separate_arguments(audit_args UNIX_COMMAND "${AUDIT_ARGS}")
# CONFIG (optional): the claim's config.json instead of the one the script wrote (a per-layer one).
if(NOT CONFIG)
  set(CONFIG "${DIR}/config.json")
endif()
# CLAIM_ARGS (optional): the claim as convention flags instead of --config.
if(DEFINED CLAIM_ARGS)
  separate_arguments(claim UNIX_COMMAND "${CLAIM_ARGS}")
else()
  set(claim --config "${CONFIG}")
endif()
set(audit_cmd "${ROPECHECK}" audit "${dump}" ${claim} ${audit_args} --json "${DIR}/verdict.json")
string(JOIN " " shown_audit ${audit_cmd})
execute_process(COMMAND ${audit_cmd} RESULT_VARIABLE arc OUTPUT_VARIABLE aout ERROR_VARIABLE aerr)
file(WRITE "${DIR}/audit.txt" "${aout}${aerr}")
message(STATUS "audit: ${shown_audit}\nexit ${arc}\n${aout}${aerr}")

# 3. The checks.
set(problems "")
if(NOT arc STREQUAL "${EXPECT_EXIT}")
  string(APPEND problems "  exit code ${arc}, expected ${EXPECT_EXIT}\n")
endif()
set(top_class "")
set(top_sentence "")
if(EXISTS "${DIR}/verdict.json")
  file(READ "${DIR}/verdict.json" verdict)
  string(JSON pass ERROR_VARIABLE jerr GET "${verdict}" pass)
  if(jerr)
    string(APPEND problems "  verdict.json has no top-level \"pass\": ${jerr}\n")
  elseif(EXPECT_EXIT STREQUAL "0" AND NOT pass)
    string(APPEND problems "  verdict.json says pass = ${pass}, expected true\n")
  elseif(EXPECT_EXIT STREQUAL "1" AND pass)
    string(APPEND problems "  verdict.json says pass = ${pass}, expected false\n")
  endif()
  string(JSON top_class ERROR_VARIABLE jerr GET "${verdict}" findings 0 bug_class)
  if(jerr)
    set(top_class "")
  endif()
  string(JSON top_sentence ERROR_VARIABLE jerr GET "${verdict}" findings 0 sentence)
  if(jerr)
    set(top_sentence "")
  endif()
elseif(NOT EXPECT_EXIT STREQUAL "2")
  string(APPEND problems "  ${DIR}/verdict.json was not written\n")
endif()
if(EXPECT_CLASS AND NOT top_class STREQUAL EXPECT_CLASS)
  if(top_class STREQUAL "")
    string(APPEND problems "  findings[0].bug_class is missing, expected ${EXPECT_CLASS}\n")
  else()
    string(APPEND problems "  findings[0].bug_class is ${top_class}, expected ${EXPECT_CLASS}\n")
  endif()
endif()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "torch audit case failed:\n${problems}dump:  ${shown_dump}\naudit: ${shown_audit}\n"
                      "audit output (exit ${arc}):\n${aout}${aerr}")
endif()
message(STATUS "ok: exit ${arc}, top finding: ${top_class} ${top_sentence}")
