# expect_compile_error.cmake - compiles SRC, which must fail, and requires the text of its first line
# ("// expect: <text>") on the first error line of the compiler's output. Run by ctest as
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
# The message must be on the first error line, not in a note further down: that is the line a
# user reads. Clang prints a long compile-time message as several string pieces
# (`Text<29>{"shapes [16] and [32] do not "}, Text<10>{"broadcast"}`): join them first.
string(REGEX MATCH "[^\n]*error:[^\n]*" first_error "${output}")
string(REGEX REPLACE "\"}, (kdsl::detail::)?Text<[0-9]+>{\"" "" first_error_joined "${first_error}")
string(FIND "${first_error_joined}" "${expected}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "${SRC} failed to compile, but its first error line does not contain\n  ${expected}\n"
                      "first error line:\n  ${first_error}\ncompiler output:\n${output}")
endif()
message(STATUS "${SRC}: fails to compile with \"${expected}\" (${CXX})")
