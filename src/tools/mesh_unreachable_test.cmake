# WharfCli.MeshUnreachableFails (src/tools/CMakeLists.txt): `wharf mesh`
# asking a port nobody listens on exits 1 and says why on stderr.
#   cmake -DWHARF=path/to/wharf -P mesh_unreachable_test.cmake
execute_process(COMMAND ${WHARF} mesh --from http://127.0.0.1:1 --timeout 2s
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 20)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "exit ${rc}, expected 1; stdout: ${out}; stderr: ${err}")
endif()
if(NOT err MATCHES "no source answered:.*http://127.0.0.1:1/api/v1/matrix\\?window=1m: (connection refused|could not connect)")
  message(FATAL_ERROR "stderr does not say why: ${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "stdout not empty: ${out}")
endif()
message("mesh unreachable ok")
