"""The daemon as a process, the way systemd runs it, for the benchmarks.

``tabled --config …`` with ``PYTHONUNBUFFERED=1`` and a ``NOTIFY_SOCKET``
(``systemd/tabled@.service``); readiness is its own ``READY=1``. The shoe is
a pty the benchmark owns (like ``tests/test_daemon_devices.py``'s HandShoe),
so the benchmark decides when every byte is written. CPU and memory come
from the process's own accounting in ``/proc``.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tty
from pathlib import Path
from typing import Any

from bench.session import Session

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / "results" / "cache"
TABLED = Path(sys.executable).with_name("tabled")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def workdir(prefix: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=CACHE))


class Pty:
    """The shoe's end of a pty: the benchmark writes frames on the master."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        tty.setraw(slave)
        self.path = os.ttyname(slave)
        # keep the slave open: the master never sees EIO between daemon opens
        self._slave = slave

    def write(self, data: bytes) -> None:
        n = os.write(self.master, data)
        if n != len(data):  # a pty takes a few KiB at once; frames are a few bytes
            raise RuntimeError(f"short write on the pty: {n} of {len(data)}")

    def drain(self) -> bytes:
        """Whatever the daemon wrote to the device (commands on connect), without waiting."""
        out = b""
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        return out

    def close(self) -> None:
        for fd in (self.master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def write_config(
    where: Path,
    sess: Session,
    *,
    port: str,
    journal: Path | None = None,
    table: str = "bench",
    log_level: str = "info",
    snapshot_every: int = 1000,
    extra: str = "",
) -> tuple[Path, dict[str, str]]:
    """A table config like config/demo.toml: the session's game and device on ``port``."""
    run = Path(tempfile.mkdtemp(prefix="tb-", dir="/tmp"))  # ipc paths must stay short
    ep = {
        "publish": f"tcp://127.0.0.1:{free_port()}",
        "replay": f"tcp://127.0.0.1:{free_port()}",
        "control": f"ipc://{run}/control.sock",
        "runtime": str(run),
    }
    rules = "\n".join(f"{k} = {_toml(v)}" for k, v in sess.rules.items())
    options = "\n".join(f"{k} = {_toml(v)}" for k, v in sess.options.items())
    cfg = where / "table.toml"
    cfg.write_text(
        f"""
[table]
id = "{table}"
game = "{sess.game}"
state_dir = "{where / "state"}"
runtime_dir = "{run}"

[game]
{rules}

[[devices]]
name = "{sess.device}"
driver = "{sess.driver}"
port = "{port}"
[devices.options]
{options}

[journal]
path = "{journal or (where / "state" / "journal.sqlite")}"
snapshot_every = {snapshot_every}

[bus]
publish = "{ep["publish"]}"
replay = "{ep["replay"]}"
heartbeat_interval = 1.0

[control]
# the benchmark drives the table as its dealer and supervisor through the main socket
role = "supervisor"

[log]
format = "json"
level = "{log_level}"
{extra}
"""
    )
    return cfg, ep


class DaemonProcess:
    """One tabled process: start, READY, /proc figures, stop."""

    def __init__(
        self,
        config: Path,
        *,
        log: Path | None = None,
        variant: str | None = None,
        cpus: str | None = None,
    ) -> None:
        """``variant``: run through :mod:`bench.variant` (an experiment, never the figures of
        ``make bench``); ``cpus``: pin the process to these CPUs (``taskset -c``)."""
        self.config = config
        self.log = log
        self.argv = [str(TABLED), "--config", str(config)]
        self.env: dict[str, str] = {}
        if variant is not None and "timeline" in variant:
            self.env["BENCH_TIMELINE"] = str(config.parent / "timeline.json")
        if variant == "cpu-profile":
            self.env["BENCH_CPROFILE"] = str(config.parent / "loop.prof")
        if variant in ("tracemalloc", "heap-stats"):
            (config.parent / "tracemalloc").mkdir(exist_ok=True)
            self.env["BENCH_TRACEMALLOC"] = str(config.parent / "tracemalloc")
        if variant is not None:
            self.argv = [sys.executable, "-m", "bench.variant", variant, "--config", str(config)]
        if cpus is not None:
            self.argv = ["taskset", "-c", cpus, *self.argv]
        d = Path(tempfile.mkdtemp(prefix="tn-", dir="/tmp"))
        self._notify_dir = d
        self.notify_path = d / "notify"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_seconds: float | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> float:
        """Start and wait for READY=1; returns seconds from spawn to READY."""
        env = dict(
            os.environ,
            NOTIFY_SOCKET=str(self.notify_path),
            PYTHONUNBUFFERED="1",
        )
        env.pop("WATCHDOG_USEC", None)
        env.update(self.env)
        out = self.log.open("wb") if self.log is not None else subprocess.DEVNULL
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        if self.log is not None:
            out.close()  # type: ignore[union-attr]
        deadline = t0 + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise RuntimeError(f"tabled gave no READY=1 in {timeout} s{self._tail()}")
            self.notify.settimeout(min(left, 0.5))
            try:
                msg = self.notify.recv(4096).decode()
            except TimeoutError:
                continue
            if "READY=1" in msg.split("\n"):
                self.ready_seconds = time.monotonic() - t0
                return self.ready_seconds

    def _tail(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return "; log:\n" + self.log.read_text(errors="replace")[-3000:]

    # -- the process's own accounting ---------------------------------------------------

    def cpu_seconds(self) -> float:
        """utime + stime of the whole process (all threads), from /proc/<pid>/stat."""
        return cpu_seconds(self.pid)

    def oncpu_seconds(self) -> float:
        """Time on a CPU of the process's threads, to the nanosecond (:func:`oncpu_seconds`)."""
        return oncpu_seconds(self.pid)

    def thread_cpu(self) -> dict[str, float]:
        """CPU seconds per thread of the process, by role: ``<role> cpu``, the scheduler's
        runtime (:func:`oncpu_seconds`), and ``<role> user`` / ``<role> sys`` in ticks.

        Python threads all carry the process's name, so the main thread is told
        by its id (the pid); the daemon's other Python threads (the journal's sentinel,
        a GPIO library's) wake rarely; libzmq names its own threads (ZMQbg/…).
        """
        out: dict[str, float] = {}
        for t in Path(f"/proc/{self.pid}/task").iterdir():
            with contextlib.suppress(OSError):
                comm = (t / "comm").read_text().strip()
                f = (t / "stat").read_text().rsplit(")", 1)[1].split()
                if int(t.name) == self.pid:
                    name = "main (asyncio loop)"
                elif comm.startswith("ZMQbg"):
                    name = "zmq I/O"
                else:
                    name = "other python threads"
                r = task_runtime(t)
                for kind, v in (
                    ("user", int(f[11]) / CLK_TCK),
                    ("sys", int(f[12]) / CLK_TCK),
                    *((("cpu", r),) if r is not None else ()),
                ):
                    key = f"{name} {kind}"
                    out[key] = out.get(key, 0.0) + v
        return out

    def memory(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak RSS) in KiB, and RSS's parts: RssAnon (the heaps),
        RssFile (mapped files: code, libraries), RssShmem (shared memory: SQLite's -shm)."""
        return memory(self.pid)

    def stop(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"tabled did not stop in {timeout} s after SIGTERM") from None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.notify.close()
        shutil.rmtree(self._notify_dir, ignore_errors=True)


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process's whole life, exited threads included; counted in
    scheduler ticks (``HZ``), so a window of it is exact only over many ticks."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / CLK_TCK


def task_runtime(task: Path) -> float | None:
    """One thread's time on a CPU, in seconds, from the scheduler's own clock
    (``/proc/…/schedstat``: nanoseconds), or None where the kernel does not keep it."""
    try:
        return int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def oncpu_seconds(pid: int) -> float:
    """The process's live threads' time on a CPU, to the nanosecond, for a measured window.

    Tick accounting (:func:`cpu_seconds`) charges a whole tick (4 ms at ``HZ=250``) to
    whichever thread a tick finds running: for a daemon that wakes for 100 µs at a time,
    a 2,000-card run's figure moved ±20 % from run to run. The scheduler's runtime is what
    the thread really ran. Threads that exit inside the window are not counted (the
    daemon's threads live from start to stop); falls back to ticks without schedstat.
    """
    total = 0.0
    for t in Path(f"/proc/{pid}/task").iterdir():
        r = task_runtime(t)
        if r is None:
            return cpu_seconds(pid)
        total += r
    return total


def memory(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[k] = int(v.split()[0])
    return out


def control_endpoint(ep: dict[str, str]) -> str:
    return ep["control"]


def cleanup(path: Path, ep: dict[str, Any] | None = None) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if ep is not None:
        shutil.rmtree(ep["runtime"], ignore_errors=True)
