# package_test_util.cmake - helpers for the package tests (cmake -P scripts): run a command, read a cache entry's version
#
# kdsl_package_require_vars(<name>...): every -D<name>=... was given.
function(kdsl_package_require_vars)
  foreach(var ${ARGN})
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: pass -D${var}=...")
    endif()
  endforeach()
endfunction()

# kdsl_package_run(<what> COMMAND <args>... [OUTPUT <var>]): runs the command; a non-zero exit
# fails the test with the command's output.
function(kdsl_package_run what)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT" "COMMAND")
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    string(REPLACE ";" " " shown "${arg_COMMAND}")
    message(FATAL_ERROR "${what} failed (exit ${result}):\n  ${shown}\n${output}")
  endif()
  message(STATUS "${what}: ok")
  if(arg_OUTPUT)
    set(${arg_OUTPUT} "${output}" PARENT_SCOPE)
  endif()
endfunction()

# kdsl_package_cached_versions(<cache dir> <var>): the kdsl_version of every kernel cache entry
# under the folder (each entry's key is stored as JSON text), sorted and deduplicated.
function(kdsl_package_cached_versions dir out_var)
  file(GLOB_RECURSE entries ${dir}/*)
  set(versions "")
  foreach(entry ${entries})
    file(STRINGS ${entry} lines REGEX "\"kdsl_version\":\"[^\"]*\"")
    foreach(line ${lines})
      string(REGEX MATCHALL "\"kdsl_version\":\"[^\"]*\"" found "${line}")
      foreach(f ${found})
        string(REGEX REPLACE "\"kdsl_version\":\"([^\"]*)\"" "\\1" v "${f}")
        list(APPEND versions ${v})
      endforeach()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES versions)
  list(SORT versions)
  set(${out_var} "${versions}" PARENT_SCOPE)
endfunction()
