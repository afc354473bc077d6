# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.distributed.parallel_state: a GroupCoordinator with the attributes ENGRAM.md lists."""


class GroupCoordinator:
    def __init__(self, rank_in_group=0, world_size=1):
        self.rank_in_group, self.world_size = rank_in_group, world_size
        self.cpu_group = None

    def broadcast_object(self, obj, src=0):
        assert src == 0, "TP groups broadcast from src=0 only"
        return obj


TP = GroupCoordinator()


def get_tp_group():
    return TP
