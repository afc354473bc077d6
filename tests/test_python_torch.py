# SPDX-License-Identifier: Apache-2.0
"""The Python module with PyTorch on a GPU: tables as zero-copy CUDA tensors, lookups with torch ids
and outputs on the current stream (raw and bf16), checked against the checkpoint's bytes; every
strategy inside torch.cuda.graph, replayed with new ids written into the captured ids tensor (dead
ids counted on the GPU); torch streams and devices as arguments, clear errors. Exits 77 where
PyTorch or a GPU is missing."""
import json
import os
import struct
import subprocess
import sys
import tempfile

import pyutil

torch = pyutil.torch_cuda_or_skip()
import eht  # noqa: E402

CLI = os.environ["EHT_CLI"]


def tensor_bytes(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        b, e = h[name]["data_offsets"]
        f.seek(8 + n + b)
        return f.read(e - b)


def bf16_ref(rows):
    """CPU reference of the BF16 format: e4m3 weight x 2^(scale - 127), rounded to bf16."""
    w = rows[:, :256].contiguous().view(torch.float8_e4m3fn).to(torch.float32)
    s = rows[:, 256:264].to(torch.int32)
    scale = torch.pow(2.0, (s - 127).to(torch.float64)).to(torch.float32)
    return (w.view(-1, 8, 32) * scale.view(-1, 8, 1)).view(-1, 256).to(torch.bfloat16)


check = pyutil.Checks()


with tempfile.TemporaryDirectory() as tmp:
    ckpt = os.path.join(tmp, "ckpt")
    subprocess.run([CLI, "synth", ckpt, "--rows", "50000", "--tables", "1"], check=True, stdout=subprocess.DEVNULL)
    key = "torch-%d" % os.getpid()
    srv = subprocess.Popen([CLI, "serve", ckpt, "--key", key], stdout=subprocess.PIPE, text=True)
    try:
        for line in srv.stdout:
            if "serving under key" in line:
                break
        name = "layers.1.engram.embed"
        path = os.path.join(ckpt, "model.safetensors")
        w = torch.frombuffer(bytearray(tensor_bytes(path, name + ".weight")), dtype=torch.uint8).view(-1, 256)
        s = torch.frombuffer(bytearray(tensor_bytes(path, name + ".scale")), dtype=torch.uint8).view(-1, 8)
        ref = torch.cat([w, s], dim=1)  # packed rows, on the CPU
        with eht.attach(key, device=0, timeout=30) as c:
            t = c.tables[name]
            check(t.device_ptr != 0, "table is GPU-readable (tier %s)" % t.tier)
            gt = t.as_tensor(readonly=True)  # served: read-only (a plain as_tensor() refuses)
            check(gt.is_cuda and tuple(gt.shape) == (50000, 264), "zero-copy CUDA tensor %s" % (gt.shape,))
            check(torch.equal(gt[::997].cpu(), ref[::997]), "table tensor bytes match the checkpoint")
            ids = torch.randint(-3, 50003, (20000,), device="cuda", dtype=torch.int64)
            live = (ids >= 0) & (ids < 50000)
            want = torch.zeros(20000, 264, dtype=torch.uint8)
            want[live.cpu()] = ref[ids[live].cpu()]
            for strategy in ("direct", "sorted", "host", "auto"):
                lk = t.lookup_engine(strategy=strategy, device=0)
                out = torch.full((20000, 264), 0xAB, dtype=torch.uint8, device="cuda")
                dead = lk.run(ids, out, count_dead=True)
                torch.cuda.current_stream().synchronize()
                check(torch.equal(out.cpu(), want), "%s raw rows" % strategy)
                check(dead == int((~live).sum()), "%s dead count %d" % (strategy, dead))
                lk.close()
            # Inside torch.cuda.graph: every strategy, new ids written into the captured tensor.
            def expect(idv):
                lv = (idv >= 0) & (idv < 50000)
                wv = torch.zeros(idv.numel(), 264, dtype=torch.uint8)
                wv[lv.cpu()] = ref[idv[lv].cpu()]
                return wv, int((~lv).sum())

            for strategy in ("direct", "sorted", "host", "auto"):
                lk = t.lookup_engine(strategy=strategy, device="cuda:0")
                static_ids = torch.randint(-3, 50003, (6144,), device="cuda", dtype=torch.int32)
                static_out = torch.empty(6144, 264, dtype=torch.uint8, device="cuda")
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):  # warm-up off the default stream, as torch advises
                    lk.run(static_ids, static_out)
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                try:
                    with torch.cuda.graph(g):
                        check(lk.run(static_ids, static_out) is None, "%s: no dead count under capture" % strategy)
                except Exception as e:  # noqa: BLE001
                    check(False, "%s capture: %s" % (strategy, e))
                    lk.close()
                    continue
                for replay in range(3):
                    new = torch.randint(-3, 50003, (6144,), device="cuda", dtype=torch.int32)
                    static_ids.copy_(new)
                    g.replay()
                    torch.cuda.synchronize()
                    wv, dv = expect(new.to(torch.int64))
                    check(torch.equal(static_out.cpu(), wv), "%s graph replay %d rows" % (strategy, replay))
                    check(lk.last_dead_count() == dv, "%s graph replay %d dead %d want %d"
                          % (strategy, replay, lk.last_dead_count(), dv))
                del g
                # A torch stream and a torch.device as arguments.
                st = torch.cuda.Stream()
                st.wait_stream(torch.cuda.current_stream())
                out2 = torch.empty(6144, 264, dtype=torch.uint8, device="cuda")
                lk.run(static_ids, out2, stream=st)
                st.synchronize()
                wv, dv = expect(static_ids.to(torch.int64))
                check(torch.equal(out2.cpu(), wv), "%s on a torch stream" % strategy)
                lk.close()
            e2 = t.lookup_engine(strategy="host", device=torch.device("cuda", 0))
            for bad, exc in (((ids, torch.empty(3, device="cuda"), ), ValueError),):
                try:
                    e2.run(*bad)
                    check(False, "short output accepted")
                except exc:
                    pass
            for kw, exc in ((dict(stream="s"), TypeError), (dict(strategy="fast"), ValueError),
                            (dict(id_offset=1.5), TypeError)):
                try:
                    e2.run(ids, torch.empty(20000, 264, dtype=torch.uint8, device="cuda"), **kw)
                    check(False, "bad argument %s accepted" % kw)
                except exc:
                    pass
            try:
                ids.float()
                e2.run(ids.float(), torch.empty(20000, 264, dtype=torch.uint8, device="cuda"))
                check(False, "float ids accepted")
            except TypeError:
                pass
            for dv, exc in (("gpu0", ValueError), (1.0, TypeError)):
                try:
                    t.lookup_engine(strategy="host", device=dv)
                    check(False, "device %r accepted" % (dv,))
                except exc:
                    pass
            e2.close()
            torch.cuda.synchronize()
            lk = t.lookup_engine(strategy="auto", format="bf16", device=0)
            out = torch.empty(20000, 256, dtype=torch.bfloat16, device="cuda")
            ids32 = ids.to(torch.int32)
            lk.run(ids32, out)
            torch.cuda.synchronize()
            wantbf = torch.zeros(20000, 256, dtype=torch.bfloat16)
            wantbf[live.cpu()] = bf16_ref(ref[ids[live].cpu()])
            got = out.cpu()
            check(torch.equal(got.view(torch.int16), wantbf.view(torch.int16)), "bf16 bit-identical to the reference")
            lk.close()
    finally:
        srv.terminate()
        srv.wait()
        srv.stdout.close()
print("FAIL" if check.failures else "PASS", file=sys.stderr)
sys.exit(1 if check.failures else 0)
