# tests/certify/certify.cmake — `ropecheck certify` / `merge` (included from tests/CMakeLists.txt).
if(TARGET ropecheck_certify)
  ropecheck_add_test(certify_test SOURCES certify/certify_test.cpp LIBS ropecheck_certify ropecheck_report_engine)
  ropecheck_add_test(allowance_line_test SOURCES certify/allowance_line_test.cpp LIBS ropecheck_certify)
endif()
