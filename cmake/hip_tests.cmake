# SPDX-License-Identifier: Apache-2.0
# hip_tests.cmake: the HIP backend's host side tested in every build, without AMD hardware. Its sources
# (src/gpu/hip) are compiled into each test program ahead of libeht_internal.a, whose own backend
# objects the linker then leaves out (so a function of gpu/dev.h or gpu/vmm.h that the HIP backend
# lacks shows up as a duplicate symbol here). Each program links a fake HIP runtime
# (tests/fake_hip/fake_hip.c, built as libamdhip64.so, soname libamdhip64.so), which the backend's
# dlopen("libamdhip64.so") then finds already loaded: the full runtime, one without an optional
# entry point of each feature, one without a mandatory one. Also: the ABI check of
# src/gpu/hip/hip_types.h against hip_runtime_api.h where ROCm's headers are installed.
file(GLOB EHT_HIP_BACKEND_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/gpu/hip/*.c)
add_library(eht_hip_backend OBJECT ${EHT_HIP_BACKEND_SOURCES})
target_include_directories(eht_hip_backend PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_compile_options(eht_hip_backend PRIVATE -fvisibility=hidden)

set(EHT_FAKE_HIP_DIR ${CMAKE_SOURCE_DIR}/tests/fake_hip)
foreach(variant full minimal nocore)
  add_library(fake_hip_${variant} SHARED ${EHT_FAKE_HIP_DIR}/fake_hip.c)
  target_include_directories(fake_hip_${variant} PRIVATE ${CMAKE_SOURCE_DIR}/src ${EHT_FAKE_HIP_DIR})
  target_link_libraries(fake_hip_${variant} PRIVATE Threads::Threads)
  target_compile_options(fake_hip_${variant} PRIVATE -fvisibility=hidden)
  set_target_properties(fake_hip_${variant} PROPERTIES OUTPUT_NAME amdhip64
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake_hip/${variant} NO_SONAME ON)
  target_link_options(fake_hip_${variant} PRIVATE -Wl,-soname,libamdhip64.so)
endforeach()
target_compile_definitions(fake_hip_minimal PRIVATE FAKE_HIP_MINIMAL)
target_compile_definitions(fake_hip_nocore PRIVATE FAKE_HIP_NO_CORE)

function(eht_hip_test name src variant)
  add_executable(${name} ${src} $<TARGET_OBJECTS:eht_hip_backend>)
  target_include_directories(${name} PRIVATE ${EHT_FAKE_HIP_DIR})
  # --no-as-needed: the backend reaches the fake through dlopen; the test's own calls need it linked.
  target_link_libraries(${name} PRIVATE -Wl,--no-as-needed fake_hip_${variant} -Wl,--as-needed eht_testutil)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "unit;threads;hip")
endfunction()
eht_hip_test(test_hip_dev ${EHT_FAKE_HIP_DIR}/test_hip_dev.c full)
eht_hip_test(test_hip_share ${EHT_FAKE_HIP_DIR}/test_hip_share.c full)
eht_hip_test(test_hip_optional ${EHT_FAKE_HIP_DIR}/test_hip_optional.c minimal)
eht_hip_test(test_hip_nocore ${EHT_FAKE_HIP_DIR}/test_hip_optional.c nocore)
target_compile_definitions(test_hip_nocore PRIVATE FAKE_HIP_NO_CORE)

# hip_types.h against ROCm's header (skips without it).
find_path(EHT_HIP_INCLUDE hip/hip_runtime_api.h HINTS /opt/rocm/include)
add_executable(test_hip_abi ${EHT_FAKE_HIP_DIR}/test_hip_abi.c ${EHT_FAKE_HIP_DIR}/hip_abi_eht.c)
target_include_directories(test_hip_abi PRIVATE ${CMAKE_SOURCE_DIR}/src ${EHT_FAKE_HIP_DIR})
if(EHT_HIP_INCLUDE)
  set_source_files_properties(${EHT_FAKE_HIP_DIR}/test_hip_abi.c PROPERTIES
    INCLUDE_DIRECTORIES ${EHT_HIP_INCLUDE} COMPILE_DEFINITIONS "EHT_HAVE_HIP_H;__HIP_PLATFORM_AMD__")
endif()
add_test(NAME test_hip_abi COMMAND test_hip_abi)
set_tests_properties(test_hip_abi PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS "unit;hip")

# A HIP build's kernel images hold code for every architecture asked for (hipcc drops none silently).
if(EHT_GPU_BACKEND STREQUAL "hip" AND EHT_HIP_IMAGES)
  find_program(EHT_OFFLOAD_BUNDLER NAMES clang-offload-bundler clang-offload-bundler-17 clang-offload-bundler-16
    clang-offload-bundler-15 HINTS /opt/rocm/llvm/bin)
  if(EHT_OFFLOAD_BUNDLER)
    add_test(NAME test_hip_images COMMAND ${CMAKE_SOURCE_DIR}/tests/fake_hip/test_hip_images.sh
      ${EHT_OFFLOAD_BUNDLER} "${EHT_HIP_ARCHS}" ${EHT_HIP_IMAGES})
    set_tests_properties(test_hip_images PROPERTIES TIMEOUT 60 LABELS "unit;hip")
  endif()
endif()
