# SPDX-License-Identifier: Apache-2.0
# gpu_backend.cmake: which GPU backend libeht is built with, chosen at configure time:
#   -DEHT_GPU_BACKEND=cuda (default): src/gpu/cuda, kernels by nvcc (CMakeLists.txt)
#   -DEHT_GPU_BACKEND=hip: src/gpu/hip (the ROCm runtime, dlopen-ed), kernels by hipcc from the same
#     src/gpu/kernels/*.cu through src/gpu/kernels/compat.h, one code-object bundle per file for every
#     architecture of EHT_HIP_ARCHS, embedded as the CUDA images are (src/gpu/fatbin.h).
# Both backends implement src/gpu/dev.h and src/gpu/vmm.h; one is linked. Included once
# EHT_SOURCES is globbed and before libeht's objects are declared.
set(EHT_GPU_BACKEND "cuda" CACHE STRING "GPU backend: cuda or hip")
set_property(CACHE EHT_GPU_BACKEND PROPERTY STRINGS cuda hip)
if(NOT EHT_GPU_BACKEND MATCHES "^(cuda|hip)$")
  message(FATAL_ERROR "eht: EHT_GPU_BACKEND must be cuda or hip, not '${EHT_GPU_BACKEND}'")
endif()
if(EHT_GPU_BACKEND STREQUAL "hip")
  list(FILTER EHT_SOURCES EXCLUDE REGEX "/src/gpu/cuda/")
else()
  list(FILTER EHT_SOURCES EXCLUDE REGEX "/src/gpu/hip/")
endif()
# The runtime library the HIP backend dlopens first (then the sonames of ROCm 7, 6, 5).
set(EHT_HIP_RUNTIME "libamdhip64.so" CACHE STRING "HIP runtime library the HIP backend loads first")
# MI200 (gfx90a, wave64) and RDNA2 (gfx1030, wave32) with Debian's hipcc 5.2; MI300 is gfx942,
# Strix Halo APUs gfx1151 (a ROCm whose hipcc knows it: EHT_HIPCC=/opt/rocm/bin/hipcc).
set(EHT_HIP_ARCHS "gfx90a;gfx1030" CACHE STRING "AMD GPU architectures of the HIP kernel images")
set(EHT_HIPCC "" CACHE FILEPATH "hipcc (found on PATH and /opt/rocm/bin when empty)")

if(NOT EHT_GPU_BACKEND STREQUAL "hip")
  return()
endif()
add_compile_definitions(EHT_HIP_RUNTIME="${EHT_HIP_RUNTIME}")
if(NOT EHT_HIPCC)
  find_program(EHT_HIPCC_FOUND hipcc HINTS /opt/rocm/bin ENV ROCM_PATH PATH_SUFFIXES bin)
  set(EHT_HIPCC_USE ${EHT_HIPCC_FOUND})
else()
  set(EHT_HIPCC_USE ${EHT_HIPCC})
endif()
if(NOT EHT_HIPCC_USE OR NOT EHT_CU_SOURCES)
  message(STATUS "eht: HIP backend without kernels: hipcc not found (scripts/deps.sh hip installs Debian's); "
    "GPU strategies report -ENOTSUP")
  return()
endif()
set(EHT_HIP_OFFLOAD "")
foreach(arch ${EHT_HIP_ARCHS})
  list(APPEND EHT_HIP_OFFLOAD --offload-arch=${arch})
endforeach()
string(REPLACE ";" ", " EHT_HIP_ARCH_LIST "${EHT_HIP_ARCHS}")
message(STATUS "eht: HIP backend, hipcc found (${EHT_HIPCC_USE}): building GPU kernels for ${EHT_HIP_ARCH_LIST}")
set(EHT_HIP_ASM "")
set(EHT_HIP_DECLS "")
set(EHT_HIP_TABLE "")
set(EHT_HIP_IMAGES "")
foreach(cu ${EHT_CU_SOURCES})
  get_filename_component(stem ${cu} NAME_WE)
  set(co ${CMAKE_BINARY_DIR}/kernels/${stem}.hipfb)
  # -Wno-pass-failed: "loop not unrolled" for the row movers' loops that break early (as nvcc does
  # silently); -x hip: the sources are .cu files. hipcc leaves its per-architecture temporary folders
  # (<stem>-xxxxxx) behind in TMPDIR: it gets a folder of the build tree, removed once it is done.
  set(hiptmp ${CMAKE_BINARY_DIR}/kernels/hipcc-tmp-${stem})
  add_custom_command(OUTPUT ${co}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/kernels ${hiptmp}
    COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${hiptmp}
      ${EHT_HIPCC_USE} --genco -x hip -O3 -std=c++17 -Wno-pass-failed -I${CMAKE_SOURCE_DIR}/src
      ${EHT_HIP_OFFLOAD} -o ${co} ${cu}
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${hiptmp}
    DEPENDS ${cu} ${EHT_CU_DEPS}
    COMMENT "hipcc ${stem}.cu -> code objects (${EHT_HIP_ARCH_LIST})")
  list(APPEND EHT_HIP_IMAGES ${co})
  eht_embed_image(EHT_HIP ${stem} ${co})
endforeach()
eht_write_image_asm(EHT_HIP hip_images.S "${EHT_HIP_IMAGES}")
eht_write_image_table(EHT_HIP hip_table.c "HIP kernel images")
# These replace the (empty) CUDA image table.
set(EHT_GEN_SOURCES ${CMAKE_BINARY_DIR}/gen/hip_images.S ${CMAKE_BINARY_DIR}/gen/hip_table.c)
