# SPDX-License-Identifier: Apache-2.0
# wheel.cmake: libeht and the eht tool as the Python wheel carries them (make wheel: -DEHT_WHEEL=ON).
# liburing's static archive (position-independent in Debian) is linked in; Debian's libjansson.a is
# not position-independent, so jansson's shared library travels in the wheel beside libeht (as
# auditwheel does) and both ELF files find it through RUNPATH $ORIGIN. eht_build.py checks the result:
# every DT_NEEDED glibc's or the wheel's own, and the manylinux tag from the glibc versions needed.
if(URING_FOUND)
  # Beside the shared library pkg-config found (a private prefix too: scripts/debs-env.sh), then the
  # system's directories.
  set(_eht_uring_dirs ${URING_LIBRARY_DIRS})
  foreach(_lib ${URING_LINK_LIBRARIES})
    get_filename_component(_dir "${_lib}" DIRECTORY)
    list(APPEND _eht_uring_dirs "${_dir}")
  endforeach()
  find_library(EHT_URING_STATIC NAMES liburing.a HINTS ${_eht_uring_dirs})
  if(EHT_URING_STATIC)
    set_target_properties(PkgConfig::URING PROPERTIES INTERFACE_LINK_LIBRARIES "${EHT_URING_STATIC}")
    message(STATUS "eht: wheel build: ${EHT_URING_STATIC} linked in")
  endif()
endif()
set_target_properties(eht eht_cli PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN")
target_link_options(eht PRIVATE -Wl,--enable-new-dtags)
target_link_options(eht_cli PRIVATE -Wl,--enable-new-dtags)
