# Warnings for the project's own code (issue 11): every target ropecheck compiles from here on gets
# -Wall -Wextra -Wconversion -Wshadow (and -Werror with ROPECHECK_WERROR, which `tools/bootstrap test`
# and so CI turn on). They are directory-level COMPILE_OPTIONS, never in the INTERFACE of
# ropecheck::core or of any installed target: a consumer's flags are the consumer's.
# Third-party headers (Eigen, GoogleTest, RapidCheck, CLI11, nlohmann-json, benchmark, MPFR) come
# through imported targets, whose include directories are SYSTEM, so they produce no warnings.
option(ROPECHECK_WARNINGS "Compile ropecheck's own code with -Wall -Wextra -Wconversion -Wshadow" ON)
option(ROPECHECK_WERROR "Turn ropecheck's warnings into errors (-Werror)" OFF)

set(ROPECHECK_WARNING_FLAGS "")
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  if(ROPECHECK_WARNINGS)
    list(APPEND ROPECHECK_WARNING_FLAGS -Wall -Wextra -Wconversion -Wshadow)
  endif()
  if(ROPECHECK_WERROR)
    list(APPEND ROPECHECK_WARNING_FLAGS -Werror)
  endif()
endif()
add_compile_options(${ROPECHECK_WARNING_FLAGS})
