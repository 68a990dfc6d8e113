# ropecheck_add_conformance_test(<name> SOURCES <adapter sources...> [LIBRARIES <your kernel targets...>]
#                                [LABELS <ctest labels...>] [ENVIRONMENT <VAR=value...>])
#
# One GoogleTest executable <name> from your adapter source(s) (which instantiate the suite, see
# ropecheck/conformance.hpp), linked with ropecheck::conformance and GTest::gtest_main, and its tests
# registered with CTest by gtest_discover_tests (one CTest test per GoogleTest test, named as GoogleTest
# names it, e.g. my_rope/ropecheck_conformance/bfloat16.rotation_matches_reference; label
# "ropecheck-conformance" plus LABELS). ENVIRONMENT is set for the tests, e.g. ROPECHECK_REFERENCE=hf.
include_guard(GLOBAL)
include(GoogleTest)

function(ropecheck_add_conformance_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "ropecheck_add_conformance_test(${name}): SOURCES is required (your adapter's .cpp)")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ropecheck_add_conformance_test(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ropecheck::conformance GTest::gtest_main ${ARG_LIBRARIES})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 120 NO_PRETTY_TYPES
                       PROPERTIES LABELS "ropecheck-conformance;${ARG_LABELS}" ENVIRONMENT "${ARG_ENVIRONMENT}")
endfunction()
