# SPDX-License-Identifier: Apache-2.0
"""eht bench step's view of the GPU's clocks: nvidia-smi sampling the SM clock, the power draw and the
active clock-event (throttle) reasons beside a mode's runs, summarized. A prefill step on an H100 runs
at the GPU's power cap, and the clock the cap picks moves a synced step by milliseconds
(docs/BENCHMARKS.md, round 45): the summary says whether a run was capped. A separate process that
samples every 50 ms takes no CPU from the timed loop's thread and nothing from the GPU's streams."""
import shutil
import statistics
import subprocess
import tempfile

from .bench_step_time import pct

# nvmlClocksEventReasons bits (nvidia-smi prints the mask in hex)
IDLE = 0x1
POWER = 0x4 | 0x80            # the software power cap; the hardware power brake
THERMAL = 0x8 | 0x20 | 0x40   # hardware slowdown; software and hardware thermal slowdown
QUERY = "clocks.sm,power.draw,power.limit,clocks_throttle_reasons.active"


def gpu_id(props):
    """nvidia-smi's --id for a torch device's properties ("GPU-<uuid>"), None where torch has no UUID."""
    uuid = getattr(props, "uuid", None)
    return "GPU-%s" % uuid if uuid else None


def summarize(lines):
    """nvidia-smi's CSV lines (clock MHz, draw W, limit W, reasons hex; nounits) -> the busy samples'
    (those without the idle reason) SM clock median / p10 / p90, their median draw, the limit, and the
    fractions of them at the power cap and thermally slowed. Lines it cannot read ("[N/A]") are counted
    apart, never guessed."""
    busy, limit, unread, idle = [], None, 0, 0
    for ln in lines:
        f = [x.strip() for x in ln.split(",")]
        try:
            clock, draw, lim, reasons = int(f[0]), float(f[1]), float(f[2]), int(f[3], 16)
        except (IndexError, ValueError):
            unread += 1 if ln.strip() else 0
            continue
        limit = lim
        if reasons & IDLE:
            idle += 1
            continue
        busy.append((clock, draw, reasons))
    out = {"samples": len(busy) + idle, "busy_samples": len(busy), "unread_lines": unread, "power_limit_w": limit}
    if busy:
        clocks = [c for c, _, _ in busy]
        out.update({"sm_clock_mhz": {"median": statistics.median(clocks), "p10": pct(clocks, 0.1),
                                     "p90": pct(clocks, 0.9)},
                    "power_w": statistics.median(d for _, d, _ in busy),
                    "power_capped_fraction": sum(1 for _, _, r in busy if r & POWER) / len(busy),
                    "thermal_fraction": sum(1 for _, _, r in busy if r & THERMAL) / len(busy)})
    return out


class ClockSampler:
    """nvidia-smi -lms period_ms beside the runs, writing to a temporary file (a pipe would fill and
    stall it over a long mode); stop() ends it and summarizes, or says why nothing was measured."""

    def __init__(self, gid, period_ms=50, smi=None):
        self.proc, self.out, self.error = None, None, None
        exe = smi or shutil.which("nvidia-smi")
        if not exe or not gid:
            self.error = "no nvidia-smi" if not exe else "the GPU's UUID is unknown"
            return
        self.out = tempfile.TemporaryFile(mode="w+")
        try:
            self.proc = subprocess.Popen([exe, "--id=" + gid, "--query-gpu=" + QUERY, "--format=csv,noheader,nounits",
                                          "-lms", str(period_ms)], stdout=self.out, stderr=subprocess.DEVNULL)
        except OSError as e:
            self.error = "%s: %s" % (exe, e)
            self.out.close()
            self.out = None

    def stop(self):
        if self.proc is None:
            return {"error": self.error}
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.out.seek(0)
        res = summarize(self.out.read().splitlines())
        self.out.close()
        self.proc = self.out = None
        if res["samples"] == 0:
            res["error"] = "nvidia-smi gave no sample (exit %s)" % rc
        return res


def clocks_line(mode, workload, c):
    """One report line for a mode's clocks."""
    head = "%-8s %-7s GPU beside the runs:" % (mode, workload)
    if c.get("error"):
        return "%s not measured (%s)" % (head, c["error"])
    if not c.get("busy_samples"):
        return "%s idle in all %d samples" % (head, c["samples"])
    s = c["sm_clock_mhz"]
    return ("%s SM clock %d MHz (p10 %d, p90 %d), %.0f W of %s, at the power cap in %.0f %% of %d busy samples%s"
            % (head, s["median"], s["p10"], s["p90"], c["power_w"],
               "%.0f W" % c["power_limit_w"] if c["power_limit_w"] is not None else "?",
               100.0 * c["power_capped_fraction"], c["busy_samples"],
               ", thermally slowed in %.0f %%" % (100.0 * c["thermal_fraction"]) if c["thermal_fraction"] else ""))
