# What `cmake --install` puts where (docs/install.md draws the layout):
#
#   the library an application links: one static libwharf.a (the target
#     wharf_lib, exported as wharf::wharf), holding the object files of
#     wharf_client and of every wharf module it links, so that applications
#     name one library instead of seven in the right order;
#   the public headers include/wharf/*.h and the generated build_info.h;
#   the programs in WHARF_INSTALL_PROGRAMS (wharf, and wharfd once
#     src/tools defines it);
#   a CMake package (find_package(wharf)) and a pkg-config file (wharf.pc);
#   for the daemon: the default config, the systemd unit and the sysusers.d
#     entry from packaging/.
#
# Included from the top-level CMakeLists.txt after every add_subdirectory of
# src/, because it walks the modules' link lists.
include(CMakePackageConfigHelpers)

# --- the combined library ---------------------------------------------------

# Collects, depth first, the wharf_* targets `target` links (itself included)
# into the list named by out_modules, and everything else it links
# (third-party targets such as fmt::fmt, or plain flags) into out_external.
function(wharf_link_closure target out_modules out_external)
  set(modules "${${out_modules}}")
  set(external "${${out_external}}")
  if(NOT target IN_LIST modules)
    list(APPEND modules ${target})
    get_target_property(deps ${target} LINK_LIBRARIES)
    if(deps)
      foreach(dep IN LISTS deps)
        if(TARGET ${dep} AND dep MATCHES "^wharf_")
          wharf_link_closure(${dep} modules external)
        elseif(NOT dep IN_LIST external)
          list(APPEND external ${dep})
        endif()
      endforeach()
    endif()
  endif()
  set(${out_modules} "${modules}" PARENT_SCOPE)
  set(${out_external} "${external}" PARENT_SCOPE)
endfunction()

set(WHARF_LIB_MODULES "")
set(WHARF_LIB_EXTERNAL "")
wharf_link_closure(wharf_client WHARF_LIB_MODULES WHARF_LIB_EXTERNAL)
# The keeper thread (client) and the waiter use std::thread.
if(NOT Threads::Threads IN_LIST WHARF_LIB_EXTERNAL)
  list(APPEND WHARF_LIB_EXTERNAL Threads::Threads)
endif()
# The package's find_dependency calls and wharf.pc are written for exactly
# these; a module that starts linking something else must be added to
# cmake/wharfConfig.cmake.in and to WHARF_PC_REQUIRES below too.
set(WHARF_LIB_KNOWN_EXTERNAL fmt::fmt spdlog::spdlog PkgConfig::LIBYAML Threads::Threads
  absl::flat_hash_map absl::flat_hash_set absl::core_headers PkgConfig::UCX)
foreach(dep IN LISTS WHARF_LIB_EXTERNAL)
  if(NOT dep IN_LIST WHARF_LIB_KNOWN_EXTERNAL)
    message(FATAL_ERROR "libwharf.a would need '${dep}', which cmake/WharfInstall.cmake does not "
                        "know how to find in an installed package: add it to "
                        "WHARF_LIB_KNOWN_EXTERNAL, cmake/wharfConfig.cmake.in and wharf.pc")
  endif()
endforeach()

set(wharf_lib_objects "")
foreach(module IN LISTS WHARF_LIB_MODULES)
  list(APPEND wharf_lib_objects $<TARGET_OBJECTS:${module}>)
endforeach()
# Reuses the modules' object files: nothing is compiled twice.
add_library(wharf_lib STATIC ${wharf_lib_objects})
add_dependencies(wharf_lib ${WHARF_LIB_MODULES})
# The executable `wharf` owns the target name; the file is still libwharf.a.
set_target_properties(wharf_lib PROPERTIES OUTPUT_NAME wharf EXPORT_NAME wharf LINKER_LANGUAGE CXX)
add_library(wharf::wharf ALIAS wharf_lib)
if(WHARF_LTO)
  # The objects are fat (CMakeLists.txt, WHARF_LTO): an application's GCC
  # would run its LTO pass over their bytecode at every link (and fail if its
  # version differs). The installed library keeps the machine code only.
  add_custom_command(TARGET wharf_lib POST_BUILD
    COMMAND ${CMAKE_OBJCOPY} --wildcard --remove-section=.gnu.lto_*
            --remove-section=.gnu.debuglto_* $<TARGET_FILE:wharf_lib>
    VERBATIM)
endif()
target_include_directories(wharf_lib INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The public headers use std::span and concepts.
target_compile_features(wharf_lib INTERFACE cxx_std_20)
# No public header includes a third-party header, so these are link-only
# ($<LINK_ONLY:...> in the exported target).
target_link_libraries(wharf_lib PRIVATE ${WHARF_LIB_EXTERNAL})
list(JOIN WHARF_LIB_MODULES " " wharf_lib_modules_text)
message(STATUS "libwharf.a combines: ${wharf_lib_modules_text}")

# --- headers, library, programs --------------------------------------------

# Where the CMake package and wharf.pc go: under the libdir unless given
# (-DWHARF_INSTALL_CMAKEDIR=...). Not cache entries of their own, so that they
# follow CMAKE_INSTALL_LIBDIR when a reconfigure changes it.
if(NOT DEFINED WHARF_INSTALL_CMAKEDIR)
  set(WHARF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/wharf")
endif()
if(NOT DEFINED WHARF_INSTALL_PKGCONFIGDIR)
  set(WHARF_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
set(WHARF_INSTALL_SYSTEMDUNITDIR "lib/systemd/system" CACHE STRING
    "Where wharfd.service goes, relative to the prefix (or absolute)")
set(WHARF_INSTALL_SYSUSERSDIR "lib/sysusers.d" CACHE STRING
    "Where the sysusers.d entry (wharf.conf) goes, relative to the prefix (or absolute)")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/wharf
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT Development
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/generated/wharf/build_info.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wharf
        COMPONENT Development)
install(TARGETS wharf_lib EXPORT wharfTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)

# The programs: every target named here that exists. wharf-grpc-node exists
# only when gRPC was found (cmake/WharfGrpc.cmake); it goes beside wharf,
# where `wharf bench cluster --proto grpc` looks for it.
set(WHARF_INSTALL_PROGRAMS wharf wharfd wharf-grpc-node)
set(WHARF_INSTALLED_PROGRAMS "")
foreach(program IN LISTS WHARF_INSTALL_PROGRAMS)
  if(TARGET ${program})
    install(TARGETS ${program} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
    list(APPEND WHARF_INSTALLED_PROGRAMS ${program})
  endif()
endforeach()

# protoc-gen-wharf (cmake/WharfProto.cmake), when built: in the export set,
# so that the package knows it as wharf::protoc-gen-wharf, which
# wharf_generate_proto (installed beside the package) runs.
if(TARGET protoc-gen-wharf)
  install(TARGETS protoc-gen-wharf EXPORT wharfTargets
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Development)
  list(APPEND WHARF_INSTALLED_PROGRAMS protoc-gen-wharf)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/wharfGenerateProto.cmake
          DESTINATION ${WHARF_INSTALL_CMAKEDIR}
          COMPONENT Development)
  set(WHARF_PACKAGE_HAS_PROTO ON)
else()
  set(WHARF_PACKAGE_HAS_PROTO OFF)
endif()

# --- CMake package ----------------------------------------------------------

install(EXPORT wharfTargets
        NAMESPACE wharf::
        DESTINATION ${WHARF_INSTALL_CMAKEDIR}
        COMPONENT Development)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/wharfConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/wharfConfig.cmake
  INSTALL_DESTINATION ${WHARF_INSTALL_CMAKEDIR})
# 0.x: a new minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/package/wharfConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/wharfConfig.cmake
              ${PROJECT_BINARY_DIR}/package/wharfConfigVersion.cmake
        DESTINATION ${WHARF_INSTALL_CMAKEDIR}
        COMPONENT Development)

# --- pkg-config -------------------------------------------------------------

# libwharf.a is static only, so what it links is in Requires.private and
# Libs.private: `pkg-config --static --libs wharf`.
set(WHARF_PC_REQUIRES "spdlog fmt yaml-0.1 absl_flat_hash_map absl_flat_hash_set absl_core_headers")
# ucx:// (cmake/WharfUcx.cmake): libwharf.a then links UCX's ucp.
if(WHARF_UCX_BUILT)
  string(APPEND WHARF_PC_REQUIRES " ucx")
endif()
set(WHARF_PC_LIBS_PRIVATE "-pthread")
foreach(var LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${var}}")
    set(WHARF_PC_${var} "${CMAKE_INSTALL_${var}}")
  else()
    set(WHARF_PC_${var} "\${prefix}/${CMAKE_INSTALL_${var}}")
  endif()
endforeach()
# The prefix is known only when installing (`cmake --install --prefix P`
# overrides the configured one), so wharf.pc is made in two steps: now,
# everything but the prefix; at install time, the prefix.
set(WHARF_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/wharf.pc.in ${PROJECT_BINARY_DIR}/package/wharf.pc.in @ONLY)
if(IS_ABSOLUTE "${WHARF_INSTALL_PKGCONFIGDIR}")
  set(wharf_pc_dir "${WHARF_INSTALL_PKGCONFIGDIR}")
else()
  set(wharf_pc_dir "\${CMAKE_INSTALL_PREFIX}/${WHARF_INSTALL_PKGCONFIGDIR}")
endif()
install(CODE "
  set(wharf_pc \"\$ENV{DESTDIR}${wharf_pc_dir}/wharf.pc\")
  message(STATUS \"Installing: \${wharf_pc}\")
  configure_file(\"${PROJECT_BINARY_DIR}/package/wharf.pc.in\" \"\${wharf_pc}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${wharf_pc}\")
  " COMPONENT Development)

# --- the daemon's files -----------------------------------------------------

# The unit names the programs and the config by their full paths; packaging/
# holds them for prefix /usr and sysconfdir /etc, and other prefixes get
# theirs here (a later `--prefix` does not change them: see docs/install.md).
file(READ ${PROJECT_SOURCE_DIR}/packaging/wharfd.service wharf_unit)
string(REPLACE "/usr/bin/wharfd" "${CMAKE_INSTALL_FULL_BINDIR}/wharfd" wharf_unit "${wharf_unit}")
string(REPLACE "/etc/wharf/" "${CMAKE_INSTALL_FULL_SYSCONFDIR}/wharf/" wharf_unit "${wharf_unit}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/package/wharfd.service CONTENT "${wharf_unit}" @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/packaging/wharfd.service)

# GNUInstallDirs puts the configuration of prefix /usr in /etc (and of
# /opt/X in /etc/opt/X), as the unit expects; other prefixes keep theirs
# inside the prefix, so that `--prefix P` moves it too.
if(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}")
  set(WHARF_INSTALL_CONFDIR "${CMAKE_INSTALL_SYSCONFDIR}/wharf")
else()
  set(WHARF_INSTALL_CONFDIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/wharf")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/packaging/wharfd.yaml
        DESTINATION ${WHARF_INSTALL_CONFDIR}
        COMPONENT Daemon)
install(FILES ${PROJECT_BINARY_DIR}/package/wharfd.service
        DESTINATION ${WHARF_INSTALL_SYSTEMDUNITDIR}
        COMPONENT Daemon)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/wharf.sysusers
        DESTINATION ${WHARF_INSTALL_SYSUSERSDIR}
        RENAME wharf.conf
        COMPONENT Daemon)
