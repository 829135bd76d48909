# SPDX-License-Identifier: Apache-2.0
# tests/cxx/header_check.cmake: compiles every public header (include/cml/*.h) alone, twice in a
# row (include guard), with one compiler, as C11 or C++17 with warnings as errors. Run by CTest:
#
#   cmake -DCOMPILER=<cc or c++> -DLANG=C|CXX -DINCLUDE_DIR=<repo>/include -DWORK_DIR=<dir>
#         -P header_check.cmake
#
# Fails naming each header that does not compile, with the compiler's messages.
foreach(var COMPILER LANG INCLUDE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "header_check: -D${var}=... is required")
  endif()
endforeach()
if(LANG STREQUAL "C")
  set(flags -std=c11 -Wall -Wextra -Werror -pedantic)
  set(ext c)
elseif(LANG STREQUAL "CXX")
  set(flags -std=c++17 -Wall -Wextra -Werror)
  set(ext cpp)
else()
  message(FATAL_ERROR "header_check: LANG must be C or CXX, not ${LANG}")
endif()
file(GLOB headers "${INCLUDE_DIR}/cml/*.h")
list(SORT headers)
list(LENGTH headers count)
if(count EQUAL 0)
  message(FATAL_ERROR "header_check: no headers in ${INCLUDE_DIR}/cml")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failed "")
foreach(header ${headers})
  get_filename_component(name "${header}" NAME_WE)
  set(src "${WORK_DIR}/${name}.${ext}")
  file(WRITE "${src}" "#include <cml/${name}.h>\n#include <cml/${name}.h>\nint main(void) { return 0; }\n")
  execute_process(COMMAND "${COMPILER}" ${flags} -I "${INCLUDE_DIR}" -fsyntax-only "${src}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(STATUS "cml/${name}.h does not compile as ${LANG} (${COMPILER} ${flags}):\n${out}")
    list(APPEND failed "cml/${name}.h")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "header_check: ${LANG} with ${COMPILER}: failed: ${failed}")
endif()
message(STATUS "header_check: ${count} headers compile as ${LANG} with ${COMPILER}")
