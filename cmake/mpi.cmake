# SPDX-License-Identifier: Apache-2.0
# adapters/mpi: libeht_mpi, its example and its mpirun tests: built only where MPI's C headers are found (Debian:
# libopenmpi-dev), so that libeht itself never depends on MPI.
find_package(MPI COMPONENTS C QUIET)
if(NOT MPI_C_FOUND)
  message(STATUS "eht: MPI not found: no libeht_mpi (apt-get install libopenmpi-dev openmpi-bin)")
  return()
endif()
message(STATUS "eht: MPI found (${MPI_C_LIBRARIES}): building libeht_mpi")
add_library(eht_mpi SHARED ${CMAKE_SOURCE_DIR}/adapters/mpi/eht_mpi.c)
target_include_directories(eht_mpi PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/adapters/mpi>
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(eht_mpi PUBLIC eht MPI::MPI_C)
add_executable(example_mpi_share ${CMAKE_SOURCE_DIR}/examples/mpi/mpi_share.c)
target_link_libraries(example_mpi_share PRIVATE eht_mpi)
find_program(EHT_MPIRUN NAMES mpirun mpiexec)
add_test(NAME test_mpi_nodes COMMAND sh ${CMAKE_SOURCE_DIR}/tests/test_mpi_nodes.sh
  $<TARGET_FILE:example_mpi_share> "${EHT_MPIRUN}")
set_tests_properties(test_mpi_nodes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "unit;mpi"
  ENVIRONMENT "EHT_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# Installed beside libeht (the header next to eht.h), only where it was built.
set_target_properties(eht_mpi PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
install(TARGETS eht_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/adapters/mpi/eht_mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# eht_mpi.pc finds its prefix from where it lies, as eht.pc does (EHT_PC_UP); MPI's own flags come
# from the compiler wrapper (mpicc), which differs between MPI implementations.
configure_file(${CMAKE_SOURCE_DIR}/adapters/mpi/eht_mpi.pc.in ${CMAKE_BINARY_DIR}/eht_mpi.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/eht_mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
