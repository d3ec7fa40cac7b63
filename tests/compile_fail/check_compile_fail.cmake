# cmake -DCOMPILER=clang++ -DSOURCE=file.cc -DINCLUDE_DIR=src -P check_compile_fail.cmake
#
# Passes only if SOURCE fails to compile with -Wthread-safety -Werror and the
# compiler says why in thread-safety terms, and compiles once
# WHARF_TAKE_THE_LOCK is defined (the same file, the lock taken): proof that
# clang's lock analysis is on and rejects an unguarded access, not that the
# file is broken some other way.
foreach(var COMPILER SOURCE INCLUDE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile_fail.cmake: -D${var}=... is required")
  endif()
endforeach()
set(flags -std=c++20 -fsyntax-only -Wall -Wthread-safety -Werror -I${INCLUDE_DIR})

execute_process(COMMAND ${COMPILER} ${flags} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it reads a GUARDED_BY field without the lock: "
                      "clang's -Wthread-safety is not checking wharf's Mutex")
endif()
if(NOT err MATCHES "requires holding mutex 'mu_'" OR NOT err MATCHES "-Wthread-safety")
  message(FATAL_ERROR "${SOURCE} failed to compile, but not with the expected thread-safety "
                      "error:\n${out}${err}")
endif()
message(STATUS "rejected as it must be:\n${err}")

execute_process(COMMAND ${COMPILER} ${flags} -DWHARF_TAKE_THE_LOCK ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} with the lock taken (WHARF_TAKE_THE_LOCK) must compile:\n"
                      "${out}${err}")
endif()
message(STATUS "with the lock taken it compiles")
