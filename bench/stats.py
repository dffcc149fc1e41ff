"""Percentiles and the machine a run was made on."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an already sorted list (p in 0..100)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values) - 1e-9) - 1))
    return sorted_values[k]


def summary_ms(ns: list[int]) -> dict[str, Any]:
    """p50 / p99 / p99.9 / max (and mean) in milliseconds of nanosecond samples."""
    v = sorted(ns)
    ms = [x / 1e6 for x in v]
    return {
        "n": len(v),
        "p50": round(percentile(ms, 50), 3),
        "p99": round(percentile(ms, 99), 3),
        "p99_9": round(percentile(ms, 99.9), 3),
        "max": round(ms[-1], 3) if ms else None,
        "mean": round(sum(ms) / len(ms), 3) if ms else None,
    }


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    import msgspec
    import serial
    import zmq

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            timeout=5,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "mem_mib": mem_kib // 1024,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "pyzmq": zmq.__version__,
        "libzmq": zmq.zmq_version(),
        "sqlite": __import__("sqlite3").sqlite_version,
        "msgspec": msgspec.__version__,
        "pyserial": serial.__version__,
        "commit": commit + ("+dirty" if dirty else ""),
    }


def _jiffies() -> tuple[int, int, int]:
    """(busy, steal, total) jiffies of the whole machine, from /proc/stat."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    steal = f[7] if len(f) > 7 else 0
    total = sum(f[:8])
    return total - idle - steal, steal, total


def _proc_jiffies(pid: int) -> int:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    except (OSError, IndexError):
        return 0


class Load:
    """How busy the machine was with *other* work while a benchmark ran.

    The machine is shared (other people's test runs on the same 2 cores); a
    figure taken while another process held a core says so in its result.
    """

    def __init__(self, pids: list[int]) -> None:
        self.pids = [os.getpid(), *pids]
        self.t0 = _jiffies()
        self.p0 = {p: _proc_jiffies(p) for p in self.pids}
        self.w0 = __import__("time").monotonic()

    def add(self, pid: int) -> None:
        self.pids.append(pid)
        self.p0[pid] = _proc_jiffies(pid)

    def result(self) -> dict[str, float]:
        busy1, steal1, _ = _jiffies()
        seconds = __import__("time").monotonic() - self.w0
        hz = os.sysconf("SC_CLK_TCK")
        ours = sum(_proc_jiffies(p) - self.p0[p] for p in self.pids)
        other = (busy1 - self.t0[0]) - ours
        return {
            "other_cores": round(max(0, other) / hz / max(seconds, 1e-9), 2),
            "steal_cores": round((steal1 - self.t0[1]) / hz / max(seconds, 1e-9), 2),
            "loadavg_1m": float(Path("/proc/loadavg").read_text().split()[0]),
        }
