# SPDX-License-Identifier: Apache-2.0
"""The Python module with PyTorch on a GPU: tables as zero-copy CUDA tensors, lookups with torch ids
and outputs on the current stream (raw and bf16), checked against the checkpoint's bytes. Exits 77
where PyTorch or a GPU is missing."""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device", file=sys.stderr)
    sys.exit(77)
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


failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


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
            gt = t.as_tensor()
            check(gt.is_cuda and tuple(gt.shape) == (50000, 264), "zero-copy CUDA tensor %s" % (gt.shape,))
            check(torch.equal(gt[::997].cpu(), ref[::997]), "table tensor bytes match the checkpoint")
            ids = torch.randint(-3, 50003, (20000,), device="cuda", dtype=torch.int64)
            live = (ids >= 0) & (ids < 50000)
            want = torch.zeros(20000, 264, dtype=torch.uint8)
            want[live.cpu()] = ref[ids[live].cpu()]
            for strategy in ("direct", "sorted", "host", "auto"):
                lk = t.lookup_engine(strategy=strategy, device=0)
                out = torch.full((20000, 264), 0xAB, dtype=torch.uint8, device="cuda")
                dead = lk.run(ids, out)
                torch.cuda.current_stream().synchronize()
                check(torch.equal(out.cpu(), want), "%s raw rows" % strategy)
                check(dead == int((~live).sum()), "%s dead count %d" % (strategy, dead))
                lk.close()
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
print("FAIL" if failures else "PASS", file=sys.stderr)
sys.exit(1 if failures else 0)
