#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu-torch-check.sh: on a GPU machine with PyTorch, build libeht, the CLI and the capture tests only,
# then run the capture tests (C), the Python torch tests (the op: eager, graphs at 130 sizes,
# torch.compile) and examples/vllm_engram.py, logs under $OUT (default ./gpu-out). Exit 1 on a failure.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
. "$(dirname "$0")/debs-env.sh"
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' 2>&1 | tee "$OUT/torch.txt"
t0=$(date +%s)
# A build carried over (the same tree built elsewhere) is used when it runs here.
if [ -n "${EHT_PREBUILT:-}" ] && build/eht --help >/dev/null 2>&1; then
  echo "prebuilt build/ used"
else
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DEHT_FIXTURES="$PWD/tests/fixtures" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$(nproc)" --target eht eht_cli test_lookup_bell test_gpu_lookup_graph \
    test_gpu_lookup_strategies >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
echo "build: $(( $(date +%s) - t0 )) s"
export EHT_CLI=$PWD/build/eht EHT_LIB=$PWD/build/libeht.so PYTHONPATH=$PWD/python EHT_SOURCE_DIR=$PWD \
  EHT_FIXTURES=$PWD/tests/fixtures
rc=0
step() { # name, command...
  local name=$1; shift
  local s=$(date +%s)
  local lim=$(eval echo "\${EHT_TIMEOUT_$name:-${EHT_STEP_TIMEOUT:-240}}")
  timeout "$lim" "$@" >"$OUT/$name.log" 2>&1
  local r=$?
  echo "== $name: exit $r ($(( $(date +%s) - s )) s)"; tail -"${EHT_TAIL:-12}" "$OUT/$name.log"
  [ $r -eq 0 ] || [ $r -eq 77 ] || rc=1
}
for t in ${EHT_TORCH_STEPS:-bell graph op torch engram shared example}; do
  case $t in
    bell) step bell build/test_lookup_bell ;;
    graph) step graph build/test_gpu_lookup_graph ;;
    strategies) step strategies build/test_gpu_lookup_strategies ;;
    op) step op python3 tests/test_python_torch_op.py ;;
    torch) step torch python3 tests/test_python_torch.py ;;
    engram) step engram python3 tests/test_python_engram.py ;;
    shared) step shared python3 tests/test_python_shared.py ;;
    example) step example python3 examples/vllm_engram.py --tp 4 --rank 1 ;;
  esac
done
exit $rc
