#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# mpi-sim-node.sh: run under mpirun to simulate several nodes on one machine:
#   mpirun -np 4 scripts/mpi-sim-node.sh PROGRAM ARGS...
# sets EHT_NODE_ID=n<k> with k = world rank / EHT_SIM_RANKS_PER_NODE (default 2), and, on world rank
# EHT_SIM_FAULT_RANK only, EHT_TEST_FAULT=$EHT_SIM_FAULT (a failure on one node's rank). With
# EHT_SIM_GPUS=G, CUDA_VISIBLE_DEVICES = (world rank % G): one GPU per rank of a node.
set -eu
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}
EHT_NODE_ID=n$((r / ${EHT_SIM_RANKS_PER_NODE:-2}))
export EHT_NODE_ID
if [ -n "${EHT_SIM_FAULT_RANK:-}" ] && [ "$r" = "$EHT_SIM_FAULT_RANK" ]; then
  EHT_TEST_FAULT=${EHT_SIM_FAULT:?EHT_SIM_FAULT names the step, e.g. map:rank=1}
  export EHT_TEST_FAULT
fi
if [ -n "${EHT_SIM_GPUS:-}" ]; then
  CUDA_VISIBLE_DEVICES=$((r % EHT_SIM_GPUS))
  export CUDA_VISIBLE_DEVICES
fi
exec "$@"
