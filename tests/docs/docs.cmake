# tests/docs/docs.cmake — every command of README.md and docs/*.md is run and its shown output checked
# (label docs): one test per file, docs.<file> (docs.README.md is the top-level README, docs.docs/README.md
# the docs index), each running tests/docs/run_doc_commands.py, whose opening comment is the convention
# (docs/README.md, "Commands in these files", says it for writers). The commands call the build tree's
# ropecheck and example plugins; the capture example needs Debian's python3-torch (/usr/bin/python3).
# Included from tests/CMakeLists.txt.
if(NOT TARGET ropecheck)  # the commands need the command line (ROPECHECK_BUILD_TOOLS)
  return()
endif()
set(_rc_docs_runner ${CMAKE_CURRENT_LIST_DIR}/run_doc_commands.py)
file(GLOB _rc_docs RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
foreach(doc README.md ${_rc_docs})
  if(doc STREQUAL "docs/README.md")
    set(name docs.docs/README.md)
  else()
    get_filename_component(name ${doc} NAME)
    set(name docs.${name})
  endif()
  add_test(NAME ${name}
           COMMAND /usr/bin/python3 ${_rc_docs_runner} --source ${PROJECT_SOURCE_DIR} --build ${PROJECT_BINARY_DIR} ${doc})
  set_tests_properties(${name} PROPERTIES LABELS docs TIMEOUT 300
                       REQUIRED_FILES "$<TARGET_FILE:ropecheck>;$<TARGET_FILE:ropecheck_example_plugin>;$<TARGET_FILE:ropecheck_example_plugin_buggy>")
endforeach()
