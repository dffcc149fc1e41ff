"""Run the real daemon as a process for end-to-end tests.

Readiness is taken from the daemon's own ``READY=1`` on a fake
``NOTIFY_SOCKET`` (what systemd would see), never from a sleep.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zmq

from daemon.journal.events import Event, decode

ROOT = Path(__file__).resolve().parents[1]


def _die_with_parent() -> None:
    """A test killed half-way must not leave daemons behind (PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def free_port() -> int:
    """A free TCP port below the kernel's range for outgoing connections: one from inside it
    (what binding port 0 gives) may be taken by any outgoing connection on the host while a
    daemon under test is stopped, and its restart then fails with "address in use"
    (``tests/test_descriptor_exhaustion.py``)."""
    import random

    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.SystemRandom()
    for _ in range(100):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # a host whose low ports are all taken: any free one
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(
    tmp: Path,
    *,
    port: str = "sim",
    sim: str = "seed = 3\npace = 0.005\n",
    game: str = "",
    table: str = "it",
    extra: str = "",
) -> Path:
    pub, rep = free_port(), free_port()
    if "[control]" not in extra:
        # the tests drive every role through the main socket; the default role is viewer
        extra += '\n[control]\nrole = "supervisor"\n'

    # a short runtime dir: unix socket paths are limited to ~100 bytes
    run = Path(tempfile.mkdtemp(prefix="td-", dir="/tmp"))
    cfg = tmp / "table.toml"
    cfg.write_text(
        f"""
[table]
id = "{table}"
game = "baccarat"
state_dir = "{tmp / "state"}"
runtime_dir = "{run}"

[game]
start_burn = "first-card"
betting_seconds = 0.05
settle_seconds = 0.01
auto_new_shoe = true
{game}

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "{port}"
[devices.options]
encoding = "rank-suit"
[devices.sim]
{sim}

[bus]
publish = "tcp://127.0.0.1:{pub}"
replay = "tcp://127.0.0.1:{rep}"
heartbeat_interval = 0.2

[journal]
snapshot_every = 50

[log]
format = "json"
level = "info"
{extra}
"""
    )
    return cfg


def log_messages(out: str) -> str:
    """The text of the daemon's JSON log lines (off a terminal every line is JSON).

    Each line's ``event``, ``error`` and ``problems``, one per line, so a test can
    look for a message without caring about the JSON around it; a line that is not
    JSON fails the test.
    """
    texts: list[str] = []
    for line in out.splitlines():
        obj = json.loads(line)
        texts += [obj["event"], str(obj.get("error", "")), *obj.get("problems", [])]
    return "\n".join(texts)


def fast_copy(name: str, tmp: Path, keys: dict[str, str | None], sim: str) -> Path:
    """``config/<name>`` with its own state, free ports, changed ``keys`` (None: removed)
    and the simulator section replaced by ``sim``."""
    text = (ROOT / "config" / name).read_text()
    run = Path(tempfile.mkdtemp(prefix="td-", dir="/tmp"))  # unix socket paths are short
    keys = keys | {
        "publish": f'"tcp://127.0.0.1:{free_port()}"',
        "replay": f'"tcp://127.0.0.1:{free_port()}"',
        "heartbeat_interval": "0.2",
        "format": '"json"',
    }
    for key, value in keys.items():
        line = re.compile(rf"^{re.escape(key)}\s*=.*\n", re.M)
        assert line.search(text), f"{name} has no {key}"
        text = line.sub("" if value is None else f"{key} = {value}\n", text, count=1)
    text = re.sub(
        r"^\[table\]\n",
        f'[table]\nstate_dir = "{tmp / "state"}"\nruntime_dir = "{run}"\n',
        text,
        flags=re.M,
    )
    text = re.sub(
        r"^\[devices\.sim\]\n(?:(?!\[).*\n)*", f"[devices.sim]\n{sim}\n", text, flags=re.M
    )
    cfg = tmp / name
    cfg.write_text(text)
    assert tablectl(cfg, "config", "check", str(cfg)).returncode == 0
    return cfg


class Daemon:
    """One tabled process on a config; start, wait for READY, stop or kill."""

    def __init__(self, config: Path, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.notify_path = Path(tempfile.mkdtemp(prefix="tn-", dir="/tmp")) / "notify"
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.log = config.parent / "daemon.log"
        #: how the daemon is run (``--config`` follows): ``tabled`` as its console script does
        self.command = [sys.executable, "-m", "daemon.runtime.app"]

    def start(self, timeout: float = 15.0) -> None:
        env = dict(
            os.environ, NOTIFY_SOCKET=str(self.notify_path), PYTHONUNBUFFERED="1", **self.env
        )
        self._out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [*self.command, "--config", str(self.config)],
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        self.wait_notify("READY=1", timeout)

    def wait_notify(self, what: str, timeout: float) -> str:
        """The first notification carrying ``what``; an exit ends the wait at once (the process's
        pidfd wakes the poll), so a start that fails costs its exit, not the whole timeout."""
        deadline = time.monotonic() + timeout
        poller = select.poll()
        poller.register(self.notify, select.POLLIN)
        pidfd = os.pidfd_open(self.proc.pid) if self.proc is not None else None
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        try:
            while True:
                left = deadline - time.monotonic()
                if left > 0 and poller.poll(left * 1000) and self._notified():
                    msg = self.notify.recv(4096).decode()
                    if what in msg.split("\n"):
                        return msg
                    continue
                if left <= 0 or (self.proc is not None and self.proc.poll() is not None):
                    log = self.log.read_text()[-3000:]
                    raise AssertionError(f"no {what} from tabled; log:\n{log}")
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _notified(self) -> bool:
        """A notification waits (what was sent before the exit is read before the exit counts)."""
        r, _w, _x = select.select([self.notify], [], [], 0)
        return bool(r)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout: float = 10.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.notify.close()


def tablectl(config: Path, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.ctl.cli", "--config", str(config), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def endpoints(config: Path) -> tuple[str, str]:
    import tomllib

    bus = tomllib.loads(config.read_text())["bus"]
    return bus["publish"], bus["replay"]


class Subscriber:
    """A plain pyzmq SUB, the way a backend would write one."""

    def __init__(self, endpoint: str, prefix: bytes = b"") -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SUBSCRIBE, prefix)
        self.sock.connect(endpoint)

    def recv(self, timeout: float) -> tuple[bytes, dict[str, Any]] | None:
        if not self.sock.poll(int(timeout * 1000)):
            return None
        topic, body = self.sock.recv_multipart()
        return topic, json.loads(body)

    def until(self, pred: Any, timeout: float) -> Iterator[tuple[bytes, dict[str, Any]]]:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            m = self.recv(left)
            if m is None:
                break
            yield m
            if pred(m):
                return
        raise AssertionError("condition not met in time")

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


def replay(
    endpoint: str, start: int, stop: int | None = None, timeout: float = 20.0
) -> tuple[list[Event], dict[str, Any]]:
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    req: dict[str, Any] = {"from": start}
    if stop is not None:
        req["to"] = stop
    s.send(json.dumps(req).encode())
    events: list[Event] = []
    try:
        while True:
            if not s.poll(int(timeout * 1000)):
                raise AssertionError("replay timed out")
            frame = s.recv()
            obj = json.loads(frame)
            if "end" in obj or "error" in obj:
                return events, obj
            events.append(decode(frame))
    finally:
        s.close()
        ctx.term()
