"""Security end to end: the real daemon process with CURVE, ZAP, signed checkpoints and tcp control.

The daemon runs as systemd would start it (READY=1 on a fake NOTIFY_SOCKET);
clients are the real ones: ``daemon.bus.subscriber.Follower`` for a backend and
``tablectl`` for people. A refused key is checked for silence while a
listed key, in the same window, is being served.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import msgspec
import pytest
import zmq
from daemon_harness import (
    ROOT,
    Daemon,
    endpoints,
    free_port,
    log_messages,
    tablectl,
    write_config,
)

from daemon.bus.subscriber import Follower
from daemon.ctl.keys import create_checkpoint, create_curve
from daemon.journal.events import Event, decode
from daemon.security import ClientCurve, read_cert, verify_checkpoint

QUIET = 1.5  # seconds a refused client is watched


class TableKeys:
    def __init__(self, root: Path) -> None:
        self.root = root
        _, self.server_secret = create_curve(root, "table")
        self.server_public = read_cert(self.server_secret).public
        self.cp_public, self.cp_secret, self.cp_id = create_checkpoint(root, "checkpoint")
        (root / "clients").mkdir()
        (root / "control").mkdir()
        self.sub1 = self._client("sub1", "clients")
        self.pit1 = self._client("pit1", "control", "supervisor")
        self.view1 = self._client("view1", "control", "viewer")
        self.outsider = self._client("outsider", None)

    def _client(self, name: str, allowed: str | None, role: str | None = None) -> Path:
        public, secret = create_curve(self.root / "private", name, role)
        if allowed is not None:
            (self.root / allowed / public.name).write_bytes(public.read_bytes())
        return secret

    def curve(self, secret: Path) -> ClientCurve:
        return ClientCurve.load(secret, self.root / "table.key")

    def config(self, control_port: int) -> str:
        return f"""
[control]
endpoint = "tcp://127.0.0.1:{control_port}"

[security]
server_key = "{self.server_secret}"
clients = "{self.root / "clients"}"
control_clients = "{self.root / "control"}"
checkpoint_key = "{self.cp_secret}"
"""


@pytest.fixture
def daemons():
    made: list[Daemon] = []

    def make(config: Path) -> Daemon:
        d = Daemon(config)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()


@pytest.fixture
def secured(tmp_path, daemons) -> tuple[Path, TableKeys, Daemon]:
    keys = TableKeys(tmp_path / "keys")
    cfg = write_config(tmp_path, extra=keys.config(free_port()))
    d = daemons(cfg)
    d.start()
    return cfg, keys, d


def _first_heartbeat(f: Follower, timeout: float) -> dict | None:
    for item in f.events(timeout=timeout, heartbeats=True):
        if isinstance(item, dict):
            return item
    return None


def test_a_listed_subscriber_gets_signed_heartbeats_and_replay(secured):
    cfg, keys, d = secured
    pub, rep = endpoints(cfg)
    f = Follower(pub, rep, table="it", curve=keys.curve(keys.sub1), ctx=zmq.Context())
    outsider = Follower(pub, rep, table="it", curve=keys.curve(keys.outsider), ctx=zmq.Context())
    try:
        hb = _first_heartbeat(f, 10.0)
        assert hb is not None, "the listed key got no heartbeat"
        assert f.last_seq >= 1, "the first heartbeat's replay brought the journal so far"
        cp = hb["data"]["checkpoint"]
        assert cp["key_id"] == keys.cp_id and cp["table"] == "it"
        assert verify_checkpoint(keys.cp_public, hb)
        assert not verify_checkpoint(keys.cp_public, {**cp, "seq": cp["seq"] + 1})
        # the outsider, watched while the listed key keeps receiving
        assert _first_heartbeat(outsider, QUIET) is None
        assert _first_heartbeat(f, 5.0) is not None
    finally:
        f.close()
        outsider.close()
        f.ctx.term()
        outsider.ctx.term()
    st = tablectl(cfg, "--key", str(keys.pit1), "--json", "status")
    assert st.returncode in (0, 1), st.stderr
    sec = json.loads(st.stdout)["security"]
    assert sec["curve"] is True and sec["control_curve"] is True
    assert sec["checkpoints"] == keys.cp_id
    assert sec["auth_failures"] >= 1 and sec["counters"]["zap.denied"] >= 1
    assert "client refused" in d.log.read_text()
    assert d.stop() == 0


def test_tablectl_roles_come_from_the_key(secured):
    cfg, keys, d = secured
    r = tablectl(cfg, "--key", str(keys.view1), "status")
    assert r.returncode in (0, 1), r.stderr  # a viewer may look
    r = tablectl(cfg, "--key", str(keys.view1), "betting", "open")
    assert r.returncode == 1
    assert "betting.open needs the dealer or supervisor role; you are viewer" in r.stderr
    r = tablectl(cfg, "--key", str(keys.pit1), "--actor", "alice", "face-up")
    assert r.returncode == 0, r.stderr
    r = tablectl(cfg, "status")
    assert r.returncode == 2 and "needs a CURVE client key" in r.stderr
    r = tablectl(cfg, "--key", str(keys.outsider), "--timeout", "1", "status")
    assert r.returncode == 3 and "is this key in the table's" in r.stderr
    commands = [
        e.data
        for e in _replay(cfg, keys.curve(keys.sub1))
        if e.type == "operator.command" and e.data["source"] == "control"
    ]
    assert [(c["name"], c["actor"], c["role"]) for c in commands] == [
        ("card.face-up", "pit1/alice", "supervisor")
    ]
    assert d.stop() == 0


def test_hostile_and_replayed_control_requests_change_nothing(secured):
    cfg, keys, d = secured
    endpoint = tomllib.loads(cfg.read_text())["control"]["endpoint"]
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    keys.curve(keys.pit1).apply(s)
    s.connect(endpoint)

    def ask(frame: bytes) -> dict:
        s.send(frame)
        assert s.poll(10_000), f"no reply to {frame[:60]!r}"
        return msgspec.json.decode(s.recv())

    try:
        hostile = [
            b"not json",
            b"[" * 2000 + b"]" * 2000,
            b'{"cmd": "card.face-up", "args": []}',
            b'{"cmd": "card.face-up", "id": {"x": 1}}',
            b'{"cmd": "card.face-up", "actor": ["root"]}',
            b'{"cmd": "card.face-up", "role": "technician"}',  # no role from the request
            b'{"cmd": "shutdown"}',
            b'{"cmd": "card.face-up", "args": {"pad": "' + b"x" * 70_000 + b'"}}',
        ]
        for frame in hostile:
            reply = ask(frame)
            assert reply["ok"] is False, (frame[:60], reply)
        once = b'{"cmd": "card.face-up", "id": "req-1", "actor": "bob"}'
        first, again = ask(once), ask(once)
        assert first["ok"] is True and again == first
        reused = ask(b'{"cmd": "card.face-up", "id": "req-1", "actor": "eve"}')
        assert reused["ok"] is False and "already used" in reused["error"]
    finally:
        s.close()
        ctx.term()
    commands = [
        e.data
        for e in _replay(cfg, keys.curve(keys.sub1))
        if e.type == "operator.command" and e.data["source"] == "control"
    ]
    assert [(c["name"], c["actor"]) for c in commands] == [("card.face-up", "pit1/bob")]
    assert d.stop() == 0


def _replay(cfg: Path, curve: ClientCurve) -> list[Event]:
    _, rep = endpoints(cfg)
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    curve.apply(s)
    s.connect(rep)
    out: list[Event] = []
    try:
        s.send(b'{"from": 1}')
        while True:
            assert s.poll(20_000), "replay timed out"
            frame = s.recv()
            obj = json.loads(frame)
            if "end" in obj:
                return out
            assert "error" not in obj, obj
            out.append(decode(frame))
    finally:
        s.close()
        ctx.term()


def _start_fails(cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.runtime.app", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("which", ["server", "checkpoint"])
def test_the_daemon_refuses_a_secret_key_others_can_read(tmp_path, which):
    keys = TableKeys(tmp_path / "keys")
    secret = keys.server_secret if which == "server" else keys.cp_secret
    secret.chmod(0o644)
    cfg = write_config(tmp_path, extra=keys.config(free_port()))
    r = _start_fails(cfg)
    assert r.returncode == 1, r.stderr
    said = log_messages(r.stdout + r.stderr)
    assert f"secret key file {secret} has mode 0644" in said
    assert f"chmod 600 {secret}" in said
    assert not (tmp_path / "state" / "journal.sqlite").exists(), "refused before opening anything"


def test_the_daemon_refuses_an_unlisted_control_role(tmp_path):
    keys = TableKeys(tmp_path / "keys")
    create_curve(keys.root / "control", "norole")
    cfg = write_config(tmp_path, extra=keys.config(free_port()))
    r = _start_fails(cfg)
    assert r.returncode == 1 and "no role for control client 'norole'" in log_messages(r.stdout)


@pytest.mark.parametrize("mode", [0o600, 0o660])
def test_the_ipc_control_socket_has_the_configured_mode(tmp_path, daemons, mode):
    cfg = write_config(tmp_path, extra=f"[control]\nmode = 0o{mode:o}\n")
    d = daemons(cfg)
    d.start()
    sock = Path(tomllib.loads(cfg.read_text())["table"]["runtime_dir"]) / "control.sock"
    st = os.stat(sock)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == mode
    r = tablectl(cfg, "--json", "status")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["security"]["curve"] is False
    assert d.stop() == 0
