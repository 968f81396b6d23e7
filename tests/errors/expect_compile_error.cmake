# expect_compile_error.cmake - compiles SRC, which must fail, and requires the text of its first line
# ("// expect: <text>") in the compiler's output. Run by ctest as
#   cmake -DCXX=<compiler> -DSRC=<bad_*.cpp> -DINCLUDE=<include dir> -P expect_compile_error.cmake
foreach(var CXX SRC INCLUDE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "expect_compile_error.cmake: pass -D${var}=...")
  endif()
endforeach()

file(STRINGS "${SRC}" first_line LIMIT_COUNT 1)
set(prefix "// expect: ")
string(LENGTH "${prefix}" prefix_length)
string(SUBSTRING "${first_line}" 0 ${prefix_length} head)
if(NOT head STREQUAL prefix)
  message(FATAL_ERROR "${SRC}: the first line must be \"${prefix}<text the compiler must print>\", not \"${first_line}\"")
endif()
string(SUBSTRING "${first_line}" ${prefix_length} -1 expected)
string(STRIP "${expected}" expected)
if(expected STREQUAL "")
  message(FATAL_ERROR "${SRC}: the expected text after \"${prefix}\" is empty")
endif()

execute_process(
  COMMAND "${CXX}" -std=c++20 -fsyntax-only "-I${INCLUDE}" "${SRC}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if(result EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with\n  ${expected}")
endif()
string(FIND "${output}" "${expected}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "${SRC} failed to compile, but the output does not contain\n  ${expected}\n"
                      "compiler output:\n${output}")
endif()
message(STATUS "${SRC}: fails to compile with \"${expected}\"")
