# The library behind `ropecheck audit --plugin` (tools/audit/plugin_audit.cmake), included from
# tests/CMakeLists.txt after plugin_property_test is defined.
if(TARGET ropecheck_plugin_audit)
  # plugin_test.cpp binds its plugins with the library's bind_plugin (declared in rope_under_test.hpp).
  if(TARGET plugin_property_test)
    target_link_libraries(plugin_property_test PRIVATE ropecheck_plugin_audit)
    # The foreign HF and ggml plugins against ropecheck's own emulations of the same frameworks.
    add_dependencies(plugin_property_test ropecheck_plugin_hf_f32 ropecheck_plugin_ggml_norm_f32)
    target_compile_definitions(plugin_property_test PRIVATE
      ROPECHECK_FOREIGN_HF_F32="$<TARGET_FILE:ropecheck_plugin_hf_f32>"
      ROPECHECK_FOREIGN_GGML_NORM_F32="$<TARGET_FILE:ropecheck_plugin_ggml_norm_f32>")
  endif()
  # The audit runs the property suite (label property); the test itself sees only plugin_audit.hpp.
  ropecheck_add_property_test(plugin_audit_test SOURCES plugin_audit_test.cpp LIBS ropecheck_plugin_audit)
  add_dependencies(plugin_audit_test ropecheck_example_plugin ropecheck_example_plugin_buggy ropecheck_example_plugin_abi2)
  target_compile_definitions(plugin_audit_test PRIVATE
    ROPECHECK_EXAMPLE_PLUGIN="$<TARGET_FILE:ropecheck_example_plugin>"
    ROPECHECK_EXAMPLE_PLUGIN_BUGGY="$<TARGET_FILE:ropecheck_example_plugin_buggy>"
    ROPECHECK_EXAMPLE_PLUGIN_ABI2="$<TARGET_FILE:ropecheck_example_plugin_abi2>")

  # The example plugins of tools/audit/plugins/ (ROPECHECK_FOREIGN_PLUGINS: name|exit|first class):
  # each through the command line (label cli) and through the library in plugin_door_test, which
  # also checks the door's verdict against `ropecheck audit` on a dump of the same outputs.
  set(door_cases "")
  set(door_targets "")
  foreach(entry IN LISTS ROPECHECK_FOREIGN_PLUGINS)
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 name)
    list(GET fields 1 expect)
    list(LENGTH fields n)
    set(first "")
    if(n GREATER 2)
      list(GET fields 2 first)
    endif()
    if(expect STREQUAL "untested")
      continue()
    endif()
    list(APPEND door_targets ropecheck_plugin_${name})
    string(APPEND door_cases "    {\"${name}\", \"$<TARGET_FILE:ropecheck_plugin_${name}>\", ${expect}, \"${first}\"},\n")
    if(TARGET ropecheck AND COMMAND ropecheck_cli_test)
      if(expect EQUAL 0)
        set(match "PASS: 7 of 7 properties hold.*the probe's verdict: pass")
      elseif(expect EQUAL 2)
        set(match "${first}")
      else()
        set(match "(diagnosis \\(most evidence first\\):\n|declared convention: [^\n]*\n)  \\[${first}\\]")
      endif()
      ropecheck_cli_test(audit_plugin_${name} ${expect} "${match}"
                         audit --plugin $<TARGET_FILE:ropecheck_plugin_${name}> --quiet --plugin-timeout 2)
    endif()
  endforeach()
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/plugin_door_cases.inc CONTENT "${door_cases}")
  if(TARGET ropecheck)
    ropecheck_add_property_test(plugin_door_test SOURCES plugin_door_test.cpp
                                LIBS ropecheck_plugin_audit nlohmann_json::nlohmann_json)
    target_include_directories(plugin_door_test PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
    add_dependencies(plugin_door_test ropecheck ${door_targets})
    target_compile_definitions(plugin_door_test PRIVATE ROPECHECK_CLI="$<TARGET_FILE:ropecheck>")
  endif()
  # The doors agree: the report's verdict, the plugin door on the same implementation behind the C
  # interface, and a dump audit of its outputs name the same class (every default implementation).
  if(TARGET ropecheck_report_engine AND TARGET ropecheck_strategy_plugin)
    ropecheck_add_test(three_doors_test LIBS ropecheck_report_engine ropecheck_plugin_loader nlohmann_json::nlohmann_json)
    add_dependencies(three_doors_test ropecheck ropecheck_strategy_plugin)
    target_compile_definitions(three_doors_test PRIVATE ROPECHECK_CLI="$<TARGET_FILE:ropecheck>"
                               ROPECHECK_STRATEGY_PLUGIN="$<TARGET_FILE:ropecheck_strategy_plugin>")
  endif()
endif()

# The plugin's child processes (tools/audit/plugin_child.cpp) under a host with its own crash handlers
# (as ASan and UBSan are): a crash in the child is still named by its signal.
if(TARGET ropecheck_plugin_audit)
  ropecheck_add_test(plugin_child_test LIBS ropecheck_plugin_audit)
  add_dependencies(plugin_child_test ropecheck_plugin_fault_segv ropecheck_plugin_fault_abort ropecheck_plugin_fault_describe_segv)
  target_compile_definitions(plugin_child_test PRIVATE
    ROPECHECK_FAULT_SEGV_PLUGIN="$<TARGET_FILE:ropecheck_plugin_fault_segv>"
    ROPECHECK_FAULT_ABORT_PLUGIN="$<TARGET_FILE:ropecheck_plugin_fault_abort>"
    ROPECHECK_FAULT_DESCRIBE_SEGV_PLUGIN="$<TARGET_FILE:ropecheck_plugin_fault_describe_segv>")
endif()
