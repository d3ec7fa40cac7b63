# wharf_generate_proto: typed wharf RPCs from .proto files (docs/rpc.md).
# Installed with the CMake package, so that an application needs two lines:
#
#   find_package(wharf REQUIRED)   # brings this function and protobuf
#   wharf_generate_proto(TARGET app PROTOS kv.proto)
#
# For each foo.proto, protoc writes foo.pb.h/.cc (messages) and
# protoc-gen-wharf foo.wharf.h/.cc (the services' Stub and Service) into
# OUT_DIR (default: <binary dir>/wharf_proto/<target>), which is added to
# TARGET's include path; the sources are compiled into TARGET, which links
# protobuf and WHARF_LIBRARY (default wharf::wharf). A proto is named by
# its file name: foo.proto includes as "foo.wharf.h". IMPORT_DIRS: further
# -I directories for imports.
#
#   wharf_generate_proto(TARGET <target> PROTOS <file>...
#                        [IMPORT_DIRS <dir>...] [OUT_DIR <dir>] [WHARF_LIBRARY <target>])
function(wharf_generate_proto)
  cmake_parse_arguments(G "" "TARGET;OUT_DIR;WHARF_LIBRARY" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT G_TARGET OR NOT G_PROTOS)
    message(FATAL_ERROR "wharf_generate_proto: TARGET and PROTOS are required")
  endif()
  if(G_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "wharf_generate_proto: unknown arguments '${G_UNPARSED_ARGUMENTS}' "
                        "(expected TARGET, PROTOS, IMPORT_DIRS, OUT_DIR, WHARF_LIBRARY)")
  endif()
  if(NOT TARGET ${G_TARGET})
    message(FATAL_ERROR "wharf_generate_proto: '${G_TARGET}' is not a target (add_executable or "
                        "add_library it first)")
  endif()
  foreach(needed wharf::protoc-gen-wharf protobuf::protoc protobuf::libprotobuf)
    if(NOT TARGET ${needed})
      message(FATAL_ERROR "wharf_generate_proto: no ${needed} (Debian: protobuf-compiler, "
                          "libprotobuf-dev; wharf built with WHARF_PROTO=ON)")
    endif()
  endforeach()
  if(NOT G_OUT_DIR)
    set(G_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/wharf_proto/${G_TARGET}")
  endif()
  if(NOT G_WHARF_LIBRARY)
    set(G_WHARF_LIBRARY wharf::wharf)
  endif()
  set(import_flags "")
  foreach(dir IN LISTS G_IMPORT_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND import_flags "-I${dir}")
  endforeach()
  foreach(proto IN LISTS G_PROTOS)
    get_filename_component(path "${proto}" ABSOLUTE)
    get_filename_component(dir "${path}" DIRECTORY)
    get_filename_component(stem "${path}" NAME_WLE)
    set(outputs "${G_OUT_DIR}/${stem}.pb.h" "${G_OUT_DIR}/${stem}.pb.cc"
                "${G_OUT_DIR}/${stem}.wharf.h" "${G_OUT_DIR}/${stem}.wharf.cc")
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory "${G_OUT_DIR}"
      COMMAND protobuf::protoc "-I${dir}" ${import_flags} "--cpp_out=${G_OUT_DIR}"
              "--plugin=protoc-gen-wharf=$<TARGET_FILE:wharf::protoc-gen-wharf>"
              "--wharf_out=${G_OUT_DIR}" "${path}"
      DEPENDS "${path}" wharf::protoc-gen-wharf
      COMMENT "protoc-gen-wharf ${proto}"
      VERBATIM)
    target_sources(${G_TARGET} PRIVATE ${outputs})
  endforeach()
  target_include_directories(${G_TARGET} PUBLIC "${G_OUT_DIR}")
  # Appended to the properties rather than through target_link_libraries,
  # whose keyword and plain forms may not be mixed on one target: the
  # caller's own call may use either.
  set_property(TARGET ${G_TARGET} APPEND PROPERTY LINK_LIBRARIES
               protobuf::libprotobuf ${G_WHARF_LIBRARY})
  get_target_property(type ${G_TARGET} TYPE)
  if(NOT type STREQUAL "EXECUTABLE")
    set_property(TARGET ${G_TARGET} APPEND PROPERTY INTERFACE_LINK_LIBRARIES
                 protobuf::libprotobuf ${G_WHARF_LIBRARY})
  endif()
endfunction()
