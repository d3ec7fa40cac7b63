# UCX (WHARF_UCX, see the top-level CMakeLists.txt): finds UCX through its
# pkg-config module (Debian 12: libucx-dev, UCX 1.13) and builds src/ucx/,
# the ucx:// transport. A missing UCX turns it off visibly at configure time
# (AUTO) or fails it (ON).
set(WHARF_UCX_BUILT OFF)
if(WHARF_UCX STREQUAL "OFF")
  set(wharf_ucx_why "WHARF_UCX=OFF")
elseif(NOT WHARF_UCX MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "WHARF_UCX: expected AUTO, ON or OFF, got '${WHARF_UCX}'")
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  endif()
  if(UCX_FOUND)
    set(WHARF_UCX_BUILT ON)
  else()
    set(wharf_ucx_why "missing UCX (libucx-dev)")
    if(WHARF_UCX STREQUAL "ON")
      message(FATAL_ERROR "WHARF_UCX=ON but the UCX adapter needs ${wharf_ucx_why}")
    endif()
  endif()
endif()

# Either way there is a wharf_ucx library for the engine to link: the
# transport, or ucx_absent.cc, whose OpenUcxTransport says this build has
# none. The engine never asks which (no #ifdef).
if(WHARF_UCX_BUILT)
  message(STATUS "ucx:// (src/ucx): built, UCX ${UCX_VERSION}")
  add_subdirectory(src/ucx)
else()
  message(STATUS "ucx:// (src/ucx): not built (${wharf_ucx_why}); ucx:// addresses are refused")
  add_library(wharf_ucx STATIC ${PROJECT_SOURCE_DIR}/src/ucx/ucx_absent.cc)
  target_include_directories(wharf_ucx PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(wharf_ucx PUBLIC wharf_transport)
endif()
