# The library behind `ropecheck audit --plugin` (tools/audit/plugin_audit.cmake), included from
# tests/CMakeLists.txt after plugin_property_test is defined.
if(TARGET ropecheck_plugin_audit)
  # plugin_test.cpp binds its plugins with the library's bind_plugin (declared in rope_under_test.hpp).
  if(TARGET plugin_property_test)
    target_link_libraries(plugin_property_test PRIVATE ropecheck_plugin_audit)
  endif()
  # The audit runs the property suite (label property); the test itself sees only plugin_audit.hpp.
  ropecheck_add_property_test(plugin_audit_test SOURCES plugin_audit_test.cpp LIBS ropecheck_plugin_audit)
  add_dependencies(plugin_audit_test ropecheck_example_plugin ropecheck_example_plugin_buggy ropecheck_example_plugin_abi2)
  target_compile_definitions(plugin_audit_test PRIVATE
    ROPECHECK_EXAMPLE_PLUGIN="$<TARGET_FILE:ropecheck_example_plugin>"
    ROPECHECK_EXAMPLE_PLUGIN_BUGGY="$<TARGET_FILE:ropecheck_example_plugin_buggy>"
    ROPECHECK_EXAMPLE_PLUGIN_ABI2="$<TARGET_FILE:ropecheck_example_plugin_abi2>")
endif()
