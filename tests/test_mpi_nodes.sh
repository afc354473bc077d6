#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test_mpi_nodes.sh: libeht_mpi under `mpirun -np 4` on one machine (region tier, no GPU needed):
# one node -> one copy; EHT_NODE_ID as 2 simulated nodes of 2 ranks -> two copies, one file per node;
# a fault on one node's rank -> that node fails as a whole, the other keeps its tier; a rank killed
# or stalled -> the job fails with a clear error well within the deadline (never hangs); a rank that
# comes late to eht_mpi_group_create -> the others fail at their deadline, not when it comes.
# Usage: test_mpi_nodes.sh EXAMPLE MPIRUN. Exit 0 pass, 1 fail, 77 skip (no mpirun).
set -u
ex=$1
mpirun=${2:-}
[ -n "$mpirun" ] && [ -x "$mpirun" ] || { echo "skip: no mpirun"; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
sim=$here/scripts/mpi-sim-node.sh
# Open MPI settings for a test box: root allowed, 4 ranks on 2 cores, shared memory only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mpi_yield_when_idle=1
# Under `make asan`: Open MPI's own start-up allocations are not ours to report.
# (full stacks: Open MPI's plug-ins lack frame pointers, and short stacks escape the suppressions)
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/tests/mpi_lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export EHT_NO_CUDA=1   # the CPU path everywhere, even on a GPU box (scripts/multi-node-gpu.sh tests GPUs)
log=$(mktemp -d /tmp/eht-mpi-test.XXXXXX)
# The regions of this run in a directory of their own: a drill's killed or aborted ranks leave theirs
# behind, which the next share's create must reclaim (checked at the end); nothing outlives the test.
shm=$(mktemp -d /dev/shm/eht-mpi-test.XXXXXX)
export EHT_SHM_DIR=$shm
trap 'rm -rf "$log" "$shm"' EXIT
trap 'exit 1' INT TERM HUP  # (ctest's timeout: the EXIT trap then still runs)
fails=0
run() { # name expected-rc(0|nonzero|any) max-seconds args...
  name=$1 want=$2 max=$3; shift 3
  t0=$(date +%s)
  timeout 120 "$mpirun" -np 4 "$@" >"$log/$name.log" 2>&1
  rc=$? t1=$(date +%s)
  el=$((t1 - t0))
  ok=1
  case $want in
  0) [ $rc = 0 ] || ok=0 ;;
  any) [ $rc != 124 ] || ok=0 ;; # only: no hang (mpirun's own status is not what is tested)
  *) { [ $rc != 0 ] && [ $rc != 124 ]; } || ok=0 ;;
  esac
  [ $el -le "$max" ] || ok=0
  if [ $ok = 1 ]; then echo "ok   $name (rc $rc, ${el}s)"; else
    echo "FAIL $name (rc $rc, ${el}s, wanted rc $want within ${max}s)"; cat "$log/$name.log"; fails=$((fails + 1)); fi
}
grep_log() { # name pattern
  if grep -q "$2" "$log/$1.log"; then echo "ok   $1: '$2'"; else
    echo "FAIL $1: no '$2' in:"; cat "$log/$1.log"; fails=$((fails + 1)); fi
}

# One machine, no override: one node, one copy for 4 ranks.
run one-node 0 60 "$ex" --bytes 8M --expect-copies 1 --expect-tiers region
grep_log one-node "nodes 1, ranks 4"
# Two simulated nodes of 2 ranks: two copies, not one, not four.
run two-nodes 0 60 "$sim" "$ex" --bytes 8M --expect-copies 2 --expect-tiers region,region
grep_log two-nodes "nodes 2, ranks 4, table 8388608 bytes: 2 node copies made"
# A failure on node 1's second rank: node 1 ends without a table on both its ranks, node 0 keeps
# the region tier (and its one copy).
EHT_SIM_FAULT_RANK=3 EHT_SIM_FAULT=region:rank=1 \
  run fault-node1 0 60 -x EHT_SIM_FAULT_RANK -x EHT_SIM_FAULT "$sim" "$ex" --bytes 8M --expect-copies 1 \
  --expect-tiers region,none
grep_log fault-node1 "rank 2: node 1 (sim.n1) rank 0: tier none.*injected fault"
# A rank killed (SIGKILL) before the share: mpirun ends the job with an error naming it, no hang.
run die-rank nonzero 60 "$sim" "$ex" --bytes 8M --die-rank 3 --timeout-ms 5000
grep_log die-rank "rank 3 .*exited on signal 9"
# The same where mpirun lets the others run on (--enable-recovery): eht's deadline ends them, with
# its message, after 3 s (mpirun itself may then exit 0); a hang meets the 120 s timeout.
run die-rank-recovery any 60 --enable-recovery "$sim" "$ex" --bytes 8M --die-rank 3 --timeout-ms 3000
grep_log die-rank-recovery "world rank 2: broadcast over 2 ranks did not complete within 3000 ms"
# A rank that stalls: its node's peer fails at the 3 s deadline with eht's message, then aborts.
run stall-rank nonzero 60 "$sim" "$ex" --bytes 8M --stall-rank 3 --timeout-ms 3000
grep_log stall-rank "did not complete within 3000 ms: a rank died or stalled"
# A rank that joins 60 s late against a 2 s deadline: the others give up at theirs (not when it
# comes: MPI_Comm_split_type would block until then), say so, and abort the job. The bound counts
# mpirun's start-up (up to ~25 s under ASan on a slow box), so the delay is far beyond it: waiting
# for the late rank would take over 60 s, failing the 45 s bound.
run late-rank nonzero 45 "$sim" "$ex" --bytes 8M --late-rank 3 --late-ms 60000 --timeout-ms 2000
grep_log late-rank "the arrival of every rank (a rank came late) over 4 ranks did not complete within 2000 ms"
# What the drills' dead ranks left (regions of a killed creator, ready but mapped by nobody), the next
# create of the same user removes: after one more share nothing is left in the directory.
left=$(ls -A "$shm")
run reclaim 0 60 "$ex" --bytes 8M --expect-copies 1 --expect-tiers region
if [ -z "$(ls -A "$shm")" ]; then echo "ok   reclaim: nothing left in the region directory (the drills left: ${left:-nothing})"; else
  echo "FAIL reclaim: left in $shm after the last share:"; ls -la "$shm"; fails=$((fails + 1)); fi
[ $fails = 0 ] && echo "test_mpi_nodes: all passed" && exit 0
echo "test_mpi_nodes: $fails failed"
exit 1
