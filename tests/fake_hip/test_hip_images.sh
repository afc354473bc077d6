#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_hip_images.sh BUNDLER "ARCH;ARCH" IMAGE...: each HIP kernel image (a clang offload bundle built
# by hipcc --genco) holds code for every architecture of EHT_HIP_ARCHS.
bundler=$1 archs=$2
shift 2
bad=0
for image in "$@"; do
  have=$("$bundler" --list --type=o --input="$image") || { echo "FAIL: cannot read $image"; exit 1; }
  for arch in $(echo "$archs" | tr ';' ' '); do
    echo "$have" | grep -q -- "--$arch\$" || { echo "FAIL: $image has no code for $arch (has: $have)"; bad=1; }
  done
done
[ $bad = 0 ] && echo "PASS: $# images, each for $archs"
exit $bad
