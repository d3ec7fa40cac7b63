# wharf_module(NAME SOURCES ... DEPS ... [TESTS ...] [TEST_DEPS ...])
#
# Declares the static library wharf_<NAME> from an explicit source list and
# links exactly DEPS (the module's allowed dependencies, DESIGN.md §2). TESTS
# are the unit tests that sit beside the code; they become one executable,
# wharf_<NAME>_tests, registered with CTest test by test.
function(wharf_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;TESTS;TEST_DEPS" ${ARGN})
  add_library(wharf_${name} STATIC ${M_SOURCES})
  target_include_directories(wharf_${name} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(wharf_${name} PUBLIC ${M_DEPS})
  if(WHARF_BUILD_TESTS AND M_TESTS)
    wharf_test(wharf_${name}_tests SOURCES ${M_TESTS} DEPS wharf_${name} ${M_TEST_DEPS})
  endif()
endfunction()

# wharf_test(TARGET SOURCES ... DEPS ...): a GoogleTest executable whose tests
# each run under a timeout, so that a hung test fails instead of stalling CI.
function(wharf_test target)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${target} ${T_SOURCES})
  target_link_libraries(${target} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()
