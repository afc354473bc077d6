# SPDX-License-Identifier: Apache-2.0
"""test_python_torch_group.py: eht.Group.from_torch over torch.distributed (gloo), 4 ranks as 2
simulated nodes of 2 (EHT_NODE_ID): one table copy per node, each node reading its own bytes from
the CPU view and, where the tier is GPU-readable, from the GPU view; a vLLM-shaped GroupCoordinator
(cpu_group, broadcast_object with src=0 only) through Group.from_coordinator and the seed's
eht.share_host_table (views on every rank or None on every rank). Skipped (77) without torch.

Standalone it spawns 4 ranks itself (file:// rendezvous). Under torchrun it is one rank:
    torchrun --nproc_per_node 4 tests/test_python_torch_group.py
with EHT_SIM_RANKS_PER_NODE=2 (default here) making 2 nodes of 2; EHT_SIM_RANKS_PER_NODE=0 keeps
the real node identity. EHT_EXPECT_TIER (e.g. host-numa) checks the tier. Exit 0 pass, 1 fail."""
import os
import subprocess
import sys
import tempfile

BYTES = 16 << 20


def worker(rank, world, init_method):
    import torch  # noqa: PLC0415
    import torch.distributed as dist  # noqa: PLC0415
    per_node = int(os.environ.get("EHT_SIM_RANKS_PER_NODE", "2"))
    if per_node:
        os.environ["EHT_NODE_ID"] = "t%d" % (rank // per_node)
    device = -1
    if torch.cuda.is_available() and os.environ.get("EHT_NO_CUDA") != "1":
        device = int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count()
        torch.cuda.set_device(device)
    import eht  # noqa: PLC0415
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    try:
        g = eht.Group.from_torch(timeout=60)
        st = g.share_table(BYTES, row_bytes=256, device=device, name="torchgroup")
        assert st is not None, "no tier on node %s" % g.node_id
        want = os.environ.get("EHT_EXPECT_TIER")
        assert want is None or st.tier == want, (st.tier, want)
        mark = 0x50 + g.node_index
        if g.rank == 0:
            st.cpu[0], st.cpu[BYTES - 1] = mark, mark
        g.barrier()
        assert int(st.cpu[0]) == mark and int(st.cpu[BYTES - 1]) == mark, (rank, int(st.cpu[0]))
        if st.gpu is not None:
            assert int(st.gpu[BYTES - 1].item()) == mark, "GPU view disagrees"
        # One distinct table per node: the nodes' first ranks hold different host addresses or files.
        rows = [None] * world
        dist.all_gather_object(rows, (g.node_index, g.node_count, st.tier, int(st.cpu[0])))
        nodes = {r[0] for r in rows}
        assert len(nodes) == (world // per_node if per_node else 1), rows
        assert all(r[3] == 0x50 + r[0] for r in rows), rows
        if rank == 0:
            print("torch group: %d ranks, %d nodes, tiers %s" % (world, len(nodes), sorted({r[2] for r in rows})))
        st.close()

        class Coordinator:
            """vLLM's GroupCoordinator as eht sees it: rank_in_group, world_size, its gloo cpu_group,
            no all_gather_object, broadcast_object that takes src=0 only (unused: cpu_group gathers)."""
            rank_in_group, world_size, cpu_group = rank, world, dist.group.WORLD

            def broadcast_object(self, obj=None, src=0):
                raise AssertionError("eht should gather over cpu_group, not call broadcast_object")

        gc = eht.Group.from_coordinator(Coordinator(), timeout=60)
        assert (gc.node_index, gc.node_count, gc.rank) == (g.node_index, g.node_count, g.rank), (gc, g)
        gc.close()
        views = eht.share_host_table(1 << 21, Coordinator())  # the seed's call: views or None everywhere
        assert views is None or int(views[0].numel()) == 1 << 21, views
        got = [None] * world
        dist.all_gather_object(got, views is None)
        assert len(set(got)) == 1, got
        del views
        g.close()
    finally:
        dist.destroy_process_group()
    return 0


def _spawned(rank, world, init_method, q):
    try:
        q.put((rank, worker(rank, world, init_method)))
    except Exception as exc:  # noqa: BLE001
        import traceback  # noqa: PLC0415
        traceback.print_exc()
        q.put((rank, repr(exc)))


def main():
    try:
        import torch.distributed as dist  # noqa: PLC0415
        if not dist.is_available():
            raise ImportError("torch.distributed unavailable")
    except ImportError as exc:
        # The system's interpreter may have Debian's python3-torch where a virtual one has not.
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system) and \
                subprocess.run([system, "-c", "import torch.distributed"], capture_output=True).returncode == 0:
            return subprocess.run([system] + sys.argv).returncode
        print("skip: %s" % exc)
        return 77
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # under torchrun
        return worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), "env://")
    import multiprocessing as mp  # noqa: PLC0415
    ctx = mp.get_context("spawn")
    world = 4
    with tempfile.TemporaryDirectory() as d:
        init = "file://" + os.path.join(d, "rendezvous")
        q = ctx.Queue()
        procs = [ctx.Process(target=_spawned, args=(r, world, init, q)) for r in range(world)]
        for p in procs:
            p.start()
        results = {}
        for _ in range(world):
            try:
                r, res = q.get(timeout=180)
            except Exception:  # noqa: BLE001
                break
            results[r] = res
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    ok = len(results) == world and all(v == 0 for v in results.values())
    print("%s: %s" % ("ok" if ok else "FAIL", results))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
