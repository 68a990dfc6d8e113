# One line per proof translation unit (kept in a file of its own so parallel work appends cleanly).
list(APPEND ROPECHECK_PROOF_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/schedules.cpp)
list(APPEND ROPECHECK_PROOF_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/algebra.cpp)
list(APPEND ROPECHECK_PROOF_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/conventions.cpp)
list(APPEND ROPECHECK_PROOF_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/equivariance.cpp)
