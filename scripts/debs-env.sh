# SPDX-License-Identifier: Apache-2.0
# debs-env.sh: sourced by the GPU-machine scripts (gpu-check.sh, gpu-disk.sh). Where jansson or
# liburing is missing and no package manager can reach a mirror, the Debian packages placed in .debs/
# (apt-get download libjansson-dev libjansson4 liburing-dev liburing2) are unpacked into a private
# prefix, and pkg-config and the loader are pointed there.
if { ! pkg-config --exists jansson 2>/dev/null || ! pkg-config --exists liburing 2>/dev/null; } &&
  ls .debs/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/eht-deps
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/eht-deps; done
  export PKG_CONFIG_SYSROOT_DIR=/tmp/eht-deps
  export PKG_CONFIG_PATH=/tmp/eht-deps/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=/tmp/eht-deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
