# `ropecheck audit --plugin lib.so`: the property suite driven against a foreign kernel
# (included from tools/CMakeLists.txt, after ropecheck_plugin_loader is defined).
find_package(rapidcheck REQUIRED)  # Debian librapidcheck-dev

add_library(ropecheck_plugin_audit STATIC ${CMAKE_CURRENT_LIST_DIR}/plugin_audit.cpp)
# plugin_audit.hpp is std types only: RapidCheck, MPFR and the tests' headers stay PRIVATE.
target_include_directories(ropecheck_plugin_audit PUBLIC ${CMAKE_CURRENT_LIST_DIR})
# The property drivers, the implementation-under-test binding, the error model and the RapidCheck
# runner are the test suite's own headers (header-only, no GoogleTest), read from the source tree
# whether or not ROPECHECK_BUILD_TESTS is on: the audit runs exactly the suite's drivers.
target_include_directories(ropecheck_plugin_audit PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/tests/properties)
target_link_libraries(ropecheck_plugin_audit PUBLIC ropecheck_plugin_loader PRIVATE ropecheck::core ropecheck::reference ropecheck::judge rapidcheck)
target_compile_options(ropecheck_plugin_audit PRIVATE ${ROPECHECK_STRICT_FP_FLAGS})
