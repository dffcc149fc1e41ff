"""A real ``nats-server`` with JetStream in a temporary folder, for the floor and its tests."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import nats


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def available() -> str | None:
    """Why nats-server cannot run here, or None."""
    if shutil.which("nats-server") is None:
        return "nats-server is not installed (Debian: apt-get install nats-server; .ci/run does)"
    return None


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
        self.proc = subprocess.Popen(
            [
                "nats-server",
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
