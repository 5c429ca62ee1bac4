# deploy/completion.cmake: writes the bash completion for simhash (cmake -P, at build
# time) with the commands of the program's own table, read from `simhash --help`
# (the lines under "Commands:"), so a new command is completed without editing it.
#   -DPROG=<simhash> -DIN=<simhash.bash-completion.in> -DOUT=<file>
execute_process(COMMAND ${PROG} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROG} --help failed (${rc})")
endif()
string(REGEX MATCH "Commands:\n(  [^\n]*\n)+" block "${help}")
string(REGEX MATCHALL "\n  [a-z][a-z0-9-]* " names "${block}")
set(SIMHASH_COMMANDS "")
foreach(n ${names})
  string(STRIP "${n}" n)
  string(APPEND SIMHASH_COMMANDS " ${n}")
endforeach()
string(STRIP "${SIMHASH_COMMANDS}" SIMHASH_COMMANDS)
if(SIMHASH_COMMANDS STREQUAL "")
  message(FATAL_ERROR "no commands in ${PROG} --help")
endif()
configure_file(${IN} ${OUT} @ONLY)
