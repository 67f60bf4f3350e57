# Driver for the consumer tests, run as  cmake -DMODE=... -P run_consumer.cmake
#   MODE=find_package     : configure bf16emu alone, install it into WORK_DIR/prefix, then build
#                           tests/consumer/find_package against that prefix and run it
#   MODE=add_subdirectory : build tests/consumer/add_subdirectory, which vendors SOURCE_DIR
# Inputs: SOURCE_DIR, WORK_DIR, MODE, GENERATOR, CXX.
foreach(v SOURCE_DIR WORK_DIR MODE GENERATOR CXX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "FAILED (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(common -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)

if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib-build ${common} -DBF16EMU_INSTALL=ON
      -DBF16EMU_BUILD_TESTS=OFF -DBF16EMU_BUILD_CLI=OFF -DBF16EMU_BUILD_BENCH=OFF -DBF16EMU_BUILD_EXAMPLES=OFF
      -DBF16EMU_BUILD_FUZZERS=OFF -DBF16EMU_ENABLE_CUDA=OFF -DBF16EMU_BUILD_PYTHON=OFF)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib-build --prefix ${WORK_DIR}/prefix)
  foreach(f include/bf16emu/core.hpp include/bf16emu/core/format.hpp share/cmake/bf16emu/bf16emuConfig.cmake
          share/cmake/bf16emu/bf16emuConfigVersion.cmake share/cmake/bf16emu/bf16emuTargets.cmake)
    if(NOT EXISTS ${WORK_DIR}/prefix/${f})
      message(FATAL_ERROR "not installed: ${f}")
    endif()
  endforeach()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/find_package -B ${WORK_DIR}/consumer-build ${common}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "add_subdirectory")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/add_subdirectory -B ${WORK_DIR}/consumer-build ${common}
      -DBF16EMU_SOURCE_DIR=${SOURCE_DIR})
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()

run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
run(${WORK_DIR}/consumer-build/bf16emu_consumer)
message(STATUS "${last_output}")
if(NOT last_output MATCHES "fp32 0xC0968717 bf16 0xC097 guard 1 sticky 1")
  message(FATAL_ERROR "unexpected consumer output: ${last_output}")
endif()
