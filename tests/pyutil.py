# SPDX-License-Identifier: Apache-2.0
"""pyutil: what the Python test scripts share (they run as scripts, so tests/ is on sys.path): a
failure-counting check, eht imported for a CPU-only run or a skip, torch with CUDA or a skip, `eht
serve` of a synthetic checkpoint until it says it serves, and a recording stand-in of
eht.torch.EngramLayer for the engine adapters' tests."""
import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import types


class Checks:
    """check(cond, what) prints FAIL: what to stderr and counts it in check.failures."""

    def __init__(self):
        self.failures = 0

    def __call__(self, cond, what):
        if not cond:
            self.failures += 1
            print("FAIL:", what, file=sys.stderr)

    def raises(self, exc, what, fn):
        """fn() raises exc with `what` in its message (a failure otherwise)."""
        try:
            fn()
        except exc as e:
            self(what in str(e), "error %r names %r" % (str(e), what))
            return
        self(False, "no %s for %s" % (exc.__name__, what))


def import_eht_cpu():
    """eht, with EHT_NO_CUDA=1 and EHT_LOG=error unless set; None (after printing skip) when libeht
    does not load."""
    os.environ.setdefault("EHT_NO_CUDA", "1")
    os.environ.setdefault("EHT_LOG", "error")
    try:
        import eht  # noqa: PLC0415
    except OSError as exc:
        print("skip: %s" % exc)
        return None
    return eht


def cli_or_skip():
    """The eht tool's path (EHT_CLI, set by CTest); exits 77 (skip) where it is not set."""
    cli = os.environ.get("EHT_CLI")
    if not cli:
        print("SKIP: EHT_CLI is not set")
        sys.exit(77)
    return cli


def torch_cuda_or_skip(custom_op=False):
    """torch for a test that needs CUDA, with the repository's python/ first on sys.path (for eht);
    exits 77 (skip) without PyTorch, without torch.library.custom_op where custom_op (torch >= 2.4),
    or without a CUDA device."""
    sys.path.insert(0, os.path.join(os.environ.get("EHT_SOURCE_DIR", "."), "python"))
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        print("SKIP: PyTorch is not installed", file=sys.stderr)
        sys.exit(77)
    if custom_op and not hasattr(torch.library, "custom_op"):
        print("SKIP: torch %s has no torch.library.custom_op (2.4 or later)" % torch.__version__, file=sys.stderr)
        sys.exit(77)
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device", file=sys.stderr)
        sys.exit(77)
    return torch


def engine_fakes_eht():
    """For the engine adapters' tests: tests/fakes (small fakes of vLLM's and SGLang's modules) first
    on sys.path, then eht as import_eht_cpu gives it, and a Checks. Exits 77 (skip) when libeht does
    not load. Returns (eht, check)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fakes"))
    eht = import_eht_cpu()
    if eht is None:
        sys.exit(77)
    return eht, Checks()


class RecordingLayer:
    """eht.torch.EngramLayer's stand-in: records each layer made (made) and each lookup (calls)."""
    made = []

    def __init__(self, table, **kw):
        self.table, self.kw, self.calls = table, kw, []
        RecordingLayer.made.append(self)

    def lookup(self, indices, out, background=False):
        self.calls.append((indices, out, background))
        return out

    def lookup_start(self, indices, out):
        self.calls.append(("start", indices, out))
        return out

    def lookup_wait(self, out):
        self.calls.append(("wait", out))
        return out


def stand_in_engram_layer():
    """Installs a stand-in eht.torch module whose EngramLayer is RecordingLayer (no torch needed), for
    the engine adapters' tests to import eht.vllm / eht.sglang after; returns RecordingLayer."""
    sys.modules["eht.torch"] = types.SimpleNamespace(EngramLayer=RecordingLayer)
    return RecordingLayer


class LogRecords:
    """The messages logged to the "eht" logger (from INFO on) while a test runs: log_records()."""

    def __init__(self):
        self.messages = []


def log_records():
    """Starts recording what eht logs (logger "eht", INFO and up) and returns the LogRecords whose
    messages list fills as it logs."""
    rec = LogRecords()

    class _Handler(logging.Handler):
        def emit(self, record):
            rec.messages.append(record.getMessage())

    logging.getLogger("eht").addHandler(_Handler())
    logging.getLogger("eht").setLevel(logging.INFO)
    return rec


@contextlib.contextmanager
def serve_synth(cli, key, rows):
    """`eht synth --rows rows` served under key as region tables (EHT_SHM_DIR: a fresh temporary
    directory; the server not under LD_PRELOAD: it need not run under ASan); the with block starts
    once the server says it serves, and the server is killed after it."""
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, shm = os.path.join(tmp, "ckpt"), os.path.join(tmp, "shm")
        os.mkdir(shm)
        subprocess.run([cli, "synth", ckpt, "--rows", str(rows)], check=True, stdout=subprocess.DEVNULL)
        env = dict(os.environ, EHT_SHM_DIR=shm)
        env.pop("LD_PRELOAD", None)
        srv = subprocess.Popen([cli, "serve", ckpt, "--key", key, "--tier", "region"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            for line in srv.stdout:
                if "serving under key" in line:
                    break
            yield srv
        finally:
            srv.kill()
            srv.wait()
            srv.stdout.close()


@contextlib.contextmanager
def vllm_served_key(cli, ev, ps, tag):
    """For eht.vllm's tests: a 3000-row synthetic checkpoint served under a fresh key (serve_synth),
    VLLM_EHT_KEY set to it and vLLM's (fake) tensor-parallel group one rank; after the block the
    plug-in's clients are dropped and the variable unset. ev: eht.vllm, ps: the fake parallel_state."""
    key = "%s-%d" % (tag, os.getpid())
    with serve_synth(cli, key, 3000):
        os.environ["VLLM_EHT_KEY"] = key
        ps.TP = ps.GroupCoordinator(rank_in_group=0, world_size=1)
        try:
            yield key
        finally:
            ev._clients.clear()
            os.environ.pop("VLLM_EHT_KEY", None)
