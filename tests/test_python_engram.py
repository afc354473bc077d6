# SPDX-License-Identifier: Apache-2.0
"""test_python_engram.py: the torch-free Python an engine needs besides the op. eht.engram: the V4.1
layout's moduli, rows and multipliers as ENGRAM.md lists them; Layout.hash bit-exact against a
reference written from ENGRAM.md (several requests, image tokens); State: decoding token by token
gives the prefill's rows; sharding with vLLM's rule (check_tp, Layout.shard, and the C call refusing
tp 7, 9, 10, 11, 13..16) and head_range. eht.disk: the disk tier in this process for a rank's head
range of a synthetic v41-small checkpoint (only that range mapped, ids outside zero rows, rows equal
to the file's bytes), a prefetch ticket serving the next lookup; the same checkpoint served by `eht
serve --tier disk` and attached by head range (vLLM's rule), by even split (SGLang's) or by a
disk_rows callback, bad ranges refused. The type stubs name everything the
modules export. Exit 0 pass, 1 fail, 77 without libeht."""
import array
import ast
import ctypes
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

import pyutil

SRC = os.environ.get("EHT_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(SRC, "python"))
check = pyutil.Checks()


def ref_hash(lay, li, tokens, starts, dead):
    """ENGRAM.md's hash, in Python integers."""
    M = lay.multipliers(li)
    mods = [lay.column(li, c) for c in range(lay.cols)]
    out = []
    for r in range(len(starts) - 1):
        a, e = starts[r], starts[r + 1]
        for p in range(a, e):
            blocked, R, row = False, 0, [0] * lay.cols
            for s in range(lay.max_ngram):
                blocked = blocked or p - s < a or bool(dead[p - s])
                v = lay.pad_id if blocked else tokens[p - s]
                R ^= v * M[s]
                if s >= 1:
                    for h in range(lay.n_heads):
                        c = (s - 1) * lay.n_heads + h
                        row[c] = R % mods[c][0] + mods[c][1]
            out.append(row)
    return out


def tensor_bytes(path, name):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        if name not in h:
            return None
        b, e = h[name]["data_offsets"]
        f.seek(8 + n + b)
        return f.read(e - b)


def main():
    os.environ.setdefault("EHT_NO_CUDA", "1")
    try:
        import eht  # noqa: PLC0415
    except OSError as exc:
        print("skip: %s" % exc)
        return 77
    E = eht.engram
    lay = E.Layout.preset("v41")
    check(lay.layer_ids == [1, 14] and lay.rows == [384006168, 384016682] and lay.cols == 24, repr(lay))
    check(lay.column(0, 0) == (16000057, 0) and lay.column(1, 23)[0] == 16000889, "moduli")
    check(lay.offsets(0)[8] == sum([16000057, 16000079, 16000081, 16000097, 16000121, 16000129, 16000133, 16000183]),
          "offsets")
    check(lay.multipliers(0) == [76632096046245, 4839876093313, 35959672319349, 73987337458391], "layer 1 multipliers")
    check(lay.multipliers(1) == [67716810739261, 51510806800915, 30921347202721, 82619226485591], "layer 14 multipliers")

    # Three requests (one of one token), image tokens included.
    seed = 12345
    toks = []
    for _ in range(40):
        seed = (seed * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        toks.append((seed >> 33) % lay.compressed_vocab)
    starts = [0, 17, 18, 40]
    dead = [1 if i in (3, 25, 26) else 0 for i in range(40)]
    rows = lay.hash(toks, starts=starts, dead=dead)
    check(len(rows) == 40 * 2 * 24, "rows length")
    for li in range(2):
        ref = ref_hash(lay, li, toks, starts, dead)
        got = [list(rows[(t * 2 + li) * 24:(t * 2 + li + 1) * 24]) for t in range(40)]
        check(got == ref, "layer index %d: hash equals the reference" % li)
    # Decoding one token at a time gives the prefill's rows.
    st = E.State(lay)
    dec = array.array("i")
    for t in range(17):
        dec.extend(st.step([7], toks[t:t + 1], dead=dead[t:t + 1]))
    check(list(dec) == list(rows[:17 * 48]), "state: decode equals prefill")
    check(st.history(7)[0] == toks[16], "history newest first")
    for bad, exc in ((lambda: lay.hash(toks, starts=[0, 5]), eht.EhtError),
                     (lambda: lay.hash(toks, dead=[0]), ValueError),
                     (lambda: lay.hash(["a"]), TypeError)):
        try:
            bad()
            check(False, "no error for a bad batch")
        except exc:
            pass

    # Sharding: vLLM's rule, in Python and in C.
    for tp in range(1, 17):
        refused = tp in (7, 9, 10, 11) or tp > 12
        try:
            E.check_tp(24, tp)
            ok = True
        except ValueError:
            ok = False
        check(ok != refused, "check_tp(24, %d)" % tp)
        if not refused:
            prev = 0
            for r in range(tp):
                a, e = lay.shard(0, tp, r)
                check(a == prev and e > a and a == lay.offsets(0)[r * E.part(24, tp)], "shard tp %d rank %d" % (tp, r))
                prev = e
            check(prev == lay.rows[0], "tp %d tiles the rows" % tp)
        a, e = ctypes.c_uint64(), ctypes.c_uint64()
        rc = E._lib().eht_engram_shard(lay._h, 0, tp, 0, ctypes.byref(a), ctypes.byref(e))
        check((rc < 0) == refused, "C eht_engram_shard tp %d: %d" % (tp, rc))
    check(lay.head_range(5, 4) == (20, 5), "head_range: rank 4 of 5 has one padded head")

    # The disk tier in this process: rank 1 of tp 4 of a v41-small checkpoint.
    small = E.Layout.preset("v41-small")
    cli = os.environ.get("EHT_CLI")
    if cli:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([cli, "synth", d, "--preset", "v41-small", "--shards", "1"], check=True,
                           stdout=subprocess.DEVNULL)
            f = [os.path.join(d, x) for x in os.listdir(d) if x.endswith(".safetensors")][0]
            w = tensor_bytes(f, "layers.14.engram.embed.weight")
            s = tensor_bytes(f, "layers.14.engram.embed.scale")
            vs, ve = small.shard(1, 4, 1)
            t = eht.disk.open(d, layer=14, tp=4, rank=1, layout=small, cache_bytes=0)
            check((t.first_row, t.local_rows, t.rows) == (vs, ve - vs, small.rows[1]), "disk head range")
            ids = array.array("q", [vs, ve - 1, vs - 1, ve, -1, (vs + ve) // 2] * 50)
            lk = t.lookup_engine(strategy="host", cpu_only=True)
            tk = eht.disk.prefetch(t, ids)
            tk.wait()
            check(tk.rows == 3, "prefetch staged the 3 distinct live rows, not %d" % tk.rows)
            out = bytearray(len(ids) * 264)
            dead = lk.run(ids, out)
            tk.release()
            check(dead == 150, "dead ids outside the range: %d" % dead)
            for i, r in enumerate(ids[:6]):
                want = w[r * 256:(r + 1) * 256] + s[r * 8:(r + 1) * 8] if vs <= r < ve else bytes(264)
                check(out[i * 264:(i + 1) * 264] == want, "disk row of id %d" % r)
            check(eht.disk.stats(t)["prefetch_hits"] > 0, "the lookup used the prefetch")
            try:
                eht.disk.open(d, layer=14, tp=7, rank=0, layout=small)
                check(False, "tp 7 accepted")
            except ValueError:
                pass
            t.close()

            # Served (eht serve --tier disk): each worker maps its head range of each layer, or the
            # even split (SGLang's rule) by rank / nranks; a disk_rows callback of one's own.
            key = "pyeng-%d" % os.getpid()
            srv = subprocess.Popen([cli, "serve", d, "--tier", "disk", "--key", key], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
            try:
                for line in srv.stdout:
                    if "serving under key" in line:
                        break
                with eht.attach(key, timeout=10, head_range=(small, 4, 1)) as c:
                    for li, lid in enumerate(small.layer_ids):
                        tt = c.tables["layers.%d.engram.embed" % lid]
                        a, e = small.shard(li, 4, 1)
                        check((tt.tier, tt.first_row, tt.local_rows) == ("disk", a, e - a),
                              "served head range of layer %d: %s %d +%d" % (lid, tt.tier, tt.first_row, tt.local_rows))
                    tt = c.tables["layers.14.engram.embed"]
                    out = bytearray(len(ids) * 264)
                    dead = tt.lookup(ids, out)
                    check(dead == 150 and out[:264] == w[vs * 256:(vs + 1) * 256] + s[vs * 8:(vs + 1) * 8],
                          "served head-range lookup")
                with eht.attach(key, timeout=10, rank=1, nranks=4) as c:
                    tt = c.tables["layers.14.engram.embed"]
                    n = small.rows[1]
                    check(tt.local_rows in (n // 4, n // 4 + 1) and tt.first_row != vs, "served even split")
                with eht.attach(key, timeout=10, disk_rows=lambda name, rows: (10, 20)) as c:
                    check(all((x.first_row, x.local_rows) == (10, 20) for x in c.tables.values()), "disk_rows")
                for bad, exc in ((lambda name, rows: (rows - 5, 6), eht.EhtError),
                                 (lambda name, rows: 1 / 0, ZeroDivisionError),
                                 (lambda name, rows: (2 ** 70, 1), OverflowError)):  # not wrapped to 0
                    try:
                        eht.attach(key, timeout=10, disk_rows=bad)
                        check(False, "a bad disk_rows was accepted")
                    except exc as e:
                        print("bad disk_rows: %s" % e)
                        check(exc is not OverflowError or ("disk_rows" in str(e) and str(2 ** 64 - 1) in str(e)),
                              "disk_rows (2^70, 1): %s" % e)
                try:
                    eht.attach(key, timeout=10, head_range=(small, 9, 0))
                    check(False, "tp 9 accepted")
                except ValueError:
                    pass
            finally:
                srv.terminate()
                srv.wait(30)

    # The stubs name every public name of the modules (eht.torch read from its source: no torch here).
    pydir = os.path.join(SRC, "python", "eht")
    for mod, pyi in (("__init__", "__init__.pyi"), ("engram", "engram.pyi"), ("disk", "disk.pyi"),
                     ("shared", "shared.pyi"), ("torch", "torch.pyi"), ("group", "group.pyi")):
        tree = ast.parse(pathlib.Path(pydir, mod + ".py").read_text())
        names = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                      and any(getattr(t, "id", "") == "__all__" for t in n.targets)), [])
        path = os.path.join(pydir, pyi)
        if not os.path.exists(path):
            check(False, "no stub %s" % pyi)
            continue
        stub = ast.parse(pathlib.Path(path).read_text())
        have = set()
        for n in ast.walk(stub):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                have.add(n.name)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                have.add(n.target.id)
            elif isinstance(n, ast.Assign):
                have.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.ImportFrom):
                have.update(a.asname or a.name for a in n.names)
            elif isinstance(n, ast.Import):
                have.update((a.asname or a.name).split(".")[0] for a in n.names)
        missing = [x for x in names if x not in have]
        check(not missing, "%s lacks %s" % (pyi, missing))
    print("PASS" if not check.failures else "FAIL: %d" % check.failures)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
