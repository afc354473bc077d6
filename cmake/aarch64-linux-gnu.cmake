# SPDX-License-Identifier: Apache-2.0
# aarch64-linux-gnu.cmake: cross-builds eht for 64-bit Arm Linux (Grace, DGX Spark, Graviton) with
# Debian's cross toolchain (gcc-aarch64-linux-gnu), jansson and liburing taken from Debian's arm64
# packages unpacked into EHT_AARCH64_SYSROOT (scripts/deps.sh aarch64 DIR), and every test run under
# qemu-user: `make check-aarch64`, or by hand:
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DEHT_AARCH64_SYSROOT=$PWD/build/aarch64-sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EHT_CROSS aarch64-linux-gnu)
find_program(CMAKE_C_COMPILER ${EHT_CROSS}-gcc REQUIRED)
set(CMAKE_ASM_COMPILER ${CMAKE_C_COMPILER})

# The unpacked arm64 packages (usr/include, usr/lib/aarch64-linux-gnu). Not CMAKE_SYSROOT: libc and
# the loader come from the cross toolchain's own folder (/usr/aarch64-linux-gnu).
set(EHT_AARCH64_SYSROOT "${CMAKE_SOURCE_DIR}/build/aarch64-sysroot" CACHE PATH "arm64 packages unpacked (scripts/deps.sh aarch64 DIR)")
# try_compile projects see only the variables named here.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES EHT_AARCH64_SYSROOT)
# pkg-config reads only the arm64 .pc files, and puts the sysroot in front of their paths; the
# system include and library folders are not dropped from its output (here they are the sysroot's).
set(ENV{PKG_CONFIG_LIBDIR} "${EHT_AARCH64_SYSROOT}/usr/lib/${EHT_CROSS}/pkgconfig:${EHT_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${EHT_AARCH64_SYSROOT}")
set(ENV{PKG_CONFIG_SYSTEM_INCLUDE_PATH} "/nonexistent")
set(ENV{PKG_CONFIG_SYSTEM_LIBRARY_PATH} "/nonexistent")
set(ENV{PKG_CONFIG_ALLOW_SYSTEM_CFLAGS} "1")
set(ENV{PKG_CONFIG_ALLOW_SYSTEM_LIBS} "1")
set(CMAKE_FIND_ROOT_PATH /usr/${EHT_CROSS} ${EHT_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The arm64 shared libraries at run time (qemu's -L prefix holds only libc): RPATH in every program.
set(CMAKE_BUILD_RPATH "${EHT_AARCH64_SYSROOT}/usr/lib/${EHT_CROSS}")

# CTest runs every test program through qemu-user, with the toolchain's libc and loader
# (no binfmt_misc needed: qemu is named on each command line).
find_program(EHT_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${EHT_QEMU_AARCH64} -L /usr/${EHT_CROSS})
