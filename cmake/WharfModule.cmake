# Headers nearly every wharf source includes (directly or through wharf's
# own headers), parsed once per target into a precompiled header instead of
# once per source (docs/testing.md, "CI"). Only system and third-party
# headers, which never change under a build. On by default with clang (CI's
# sanitizer build); off with GCC, whose version 12 stops treating the
# precompiled libstdc++ as a system header and then reports its known false
# positives (-Warray-bounds in std::string's operator+) as our errors.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  option(WHARF_PCH "Precompile the common headers of every target" ON)
else()
  option(WHARF_PCH "Precompile the common headers of every target" OFF)
endif()
set(WHARF_COMMON_PCH
    <algorithm> <array> <atomic> <chrono> <cstddef> <cstdint> <cstring> <deque>
    <functional> <map> <memory> <mutex> <optional> <span> <string> <string_view>
    <thread> <unordered_map> <utility> <vector>
    <fmt/format.h> <absl/container/flat_hash_map.h>)
set(WHARF_TEST_PCH <gtest/gtest.h> <gmock/gmock.h>)

# wharf_precompile(TARGET [HEADER ...]): the common headers and HEADERs (the
# target's own heavy ones, e.g. <nlohmann/json.hpp>) precompiled for TARGET.
function(wharf_precompile target)
  if(WHARF_PCH)
    target_precompile_headers(${target} PRIVATE ${WHARF_COMMON_PCH} ${ARGN})
  endif()
endfunction()

# wharf_module(NAME SOURCES ... DEPS ... [TESTS ...] [TEST_DEPS ...] [PCH ...])
#
# Declares the static library wharf_<NAME> from an explicit source list and
# links exactly DEPS (the module's allowed dependencies, DESIGN.md §2). TESTS
# are the unit tests that sit beside the code; they become one executable,
# wharf_<NAME>_tests, registered with CTest test by test. PCH: heavy headers
# many of the module's sources include, precompiled for both targets.
function(wharf_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;TESTS;TEST_DEPS;PCH" ${ARGN})
  add_library(wharf_${name} STATIC ${M_SOURCES})
  wharf_precompile(wharf_${name} ${M_PCH})
  target_include_directories(wharf_${name} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(wharf_${name} PUBLIC ${M_DEPS})
  if(WHARF_BUILD_TESTS AND M_TESTS)
    wharf_test(wharf_${name}_tests SOURCES ${M_TESTS} DEPS wharf_${name} ${M_TEST_DEPS} PCH ${M_PCH})
  endif()
endfunction()

# wharf_test(TARGET SOURCES ... DEPS ... [PCH ...]): a GoogleTest executable
# whose tests each run under a timeout, so that a hung test fails instead of
# stalling CI.
function(wharf_test target)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;PCH" ${ARGN})
  add_executable(${target} ${T_SOURCES})
  wharf_precompile(${target} ${WHARF_TEST_PCH} ${T_PCH})
  target_link_libraries(${target} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
endfunction()
