# SPDX-License-Identifier: Apache-2.0
# cross_tests.cmake: the tests of a cross build (cmake/aarch64-linux-gnu.cmake) under its emulator.
# CTest puts CMAKE_CROSSCOMPILING_EMULATOR in front of each test program; the programs a test starts
# itself need the same: EHT_CLI becomes a script that runs the CLI under the emulator (no binfmt_misc
# here, so the kernel cannot run an aarch64 program by itself). Tests that cannot run there get the
# label `cross-skip`, each with its reason below.
if(NOT CMAKE_CROSSCOMPILING OR NOT CMAKE_CROSSCOMPILING_EMULATOR)
  return()
endif()
string(REPLACE ";" " " EHT_EMU "${CMAKE_CROSSCOMPILING_EMULATOR}")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/eht-emu
  CONTENT "#!/bin/sh\n# the aarch64 eht under ${EHT_EMU}\nexec ${EHT_EMU} $<TARGET_FILE:eht_cli> \"$@\"\n"
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
get_property(EHT_ALL_TESTS DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY TESTS)
foreach(t ${EHT_ALL_TESTS})
  get_test_property(${t} ENVIRONMENT env)
  if(env)
    string(REPLACE "EHT_CLI=$<TARGET_FILE:eht_cli>" "EHT_CLI=${CMAKE_BINARY_DIR}/eht-emu" env "${env}")
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${env}")
  endif()
endforeach()
# test_cli_table: a shell script given the CLI's path on its command line (not through EHT_CLI).
# test_serve_net: re-executes itself through /proc/self/exe (the kernel would run the aarch64 file).
# test_region_crash: qemu-user answers /proc/self/stat itself, and a forked child gets its parent's
# start time there, so a region's creator never looks alive.
# test_region_enospc: qemu-user ignores madvise (MADV_POPULATE_WRITE succeeds without allocating),
# so a full tmpfs shows up as SIGBUS later instead of -ENOSPC at create.
foreach(t test_cli_table test_serve_net test_region_crash test_region_enospc)
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS cross-skip)
  endif()
endforeach()
