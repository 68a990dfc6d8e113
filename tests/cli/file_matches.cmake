# cmake -DFILE=<path> -DMATCH=<regex> -P file_matches.cmake: passes only if the file exists and its
# text matches the regex (e.g. a key of a JSON output the command line wrote).
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} does not exist")
endif()
file(READ "${FILE}" text)
if(NOT text MATCHES "${MATCH}")
  message(FATAL_ERROR "${FILE} does not match '${MATCH}'")
endif()
