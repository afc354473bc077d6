# SPDX-License-Identifier: Apache-2.0
"""test_python_shared.py: eht.ECSharedRegion (memoryviews without torch, int8 tensors with it), as the seed's encoder cache
uses it: four processes start at once (three TP workers and a scheduler that is no torch.distributed
rank), exactly one creates, the others wait for the full region; every process writes its own blocks
and reads the others'; pin_memory() is a no-op without a GPU; a process opening it with another size
fails naming both; cleanup() unlinks the file (creator only), tolerates a second call and an already
removed file, and a view still held after cleanup reads the bytes without crashing. Exit 0 pass, 1 fail."""
import multiprocessing as mp
import os
import sys
import tempfile
import traceback

import pyutil

BLOCKS, BLOCK = 64, 4096
N = 4


def child(rank, d, engine, barrier, q):
    try:
        import eht  # noqa: PLC0415
        r = eht.ECSharedRegion(engine, BLOCKS, BLOCK, dir=d, timeout=20)
        b = r.blocks
        if isinstance(b, memoryview):  # no torch here
            assert b.shape == (BLOCKS, BLOCK) and b.format == "b", (b.shape, b.format)
        else:  # torch is installed: an int8 tensor over the same bytes
            import torch  # noqa: PLC0415
            assert b.dtype == torch.int8 and tuple(b.shape) == (BLOCKS, BLOCK), (b.dtype, b.shape)
        r.pin_memory()  # no GPU: no-op, no error
        for k in range(rank, BLOCKS, N):
            b[k, 0] = rank + 1
            b[k, BLOCK - 1] = -(rank + 1)
        barrier.wait(30)
        for k in range(BLOCKS):
            o = k % N
            got = (int(b[k, 0]), int(b[k, BLOCK - 1]))
            assert got == (o + 1, -(o + 1)), (k, got)
        barrier.wait(30)
        creator = r.is_creator
        keep = r.blocks
        r.cleanup()
        r.cleanup()  # twice: no error
        assert int(keep[rank, 0]) == rank + 1  # the view keeps the mapping
        del keep
        barrier.wait(30)
        code = 0
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        creator, code = "error", 1
    q.put((rank, creator))
    q.close()
    q.join_thread()  # flushed before os._exit
    os._exit(code)


def main():
    eht = pyutil.import_eht_cpu()
    if eht is None:
        return 77
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        engine = "t%d" % os.getpid()
        ctx = mp.get_context("fork")
        barrier, q = ctx.Barrier(N), ctx.Queue()
        procs = [ctx.Process(target=child, args=(r, d, engine, barrier, q)) for r in range(N)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        codes = [p.exitcode for p in procs]
        got = sorted(q.get(timeout=5) for _ in range(N))
        creators = [r for r, c in got if c is True]
        print("exit codes %s, creators %s" % (codes, creators))
        if codes != [0] * N or len(creators) != 1:
            fails += 1
        left = [f for f in os.listdir(d) if engine in f]
        if left:
            print("FAIL: files left after cleanup: %s" % left)
            fails += 1
        # Another size than the creator's: refused, naming both.
        r = eht.ECSharedRegion(engine, BLOCKS, BLOCK, dir=d)
        try:
            eht.ECSharedRegion(engine, BLOCKS * 2, BLOCK, dir=d, timeout=2)
            print("FAIL: a region of another size opened")
            fails += 1
        except eht.EhtError as exc:
            print("another size: %s" % exc)
            if str(BLOCKS * BLOCK) not in str(exc):
                fails += 1
        # The file removed behind its back: cleanup logs, never raises; the view stays readable.
        os.unlink(os.path.join(d, [f for f in os.listdir(d) if engine in f][0]))
        v = r.blocks
        v[3, 3] = 9
        r.cleanup()
        if v[3, 3] != 9:
            fails += 1
        del v, r
        for bad in ((0, BLOCK), (BLOCKS, -1)):
            try:
                eht.ECSharedRegion(engine, *bad, dir=d)
                fails += 1
            except ValueError as exc:
                print("refused %s: %s" % (bad, exc))
        try:
            eht.ECSharedRegion(engine, 1.5, BLOCK, dir=d)
            fails += 1
        except TypeError:
            pass
    print("PASS" if not fails else "FAIL: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
