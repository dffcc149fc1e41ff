"""The floor's parts as processes: nats-server, tabled daemons on simulators, the load
generator, the bridge; and the end-to-end check of what JetStream holds.

Used by ``python -m bench.floor`` and by the bridge and fault tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import zmq
from tabled_client import Chain

from bench.floor.loadgen import Control
from bench.floor.natsd import NatsServer, free_port
from daemon.ctl.keys import create_curve

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _die_with_parent(nofile: int | None = None) -> None:
    import ctypes
    import resource

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphans after a crash
    if nofile is not None:  # as systemd's LimitNOFILE= sets it: soft and hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


def _popen(
    args: list[str],
    log: Path,
    extra_env: dict[str, str] | None = None,
    nofile: int | None = None,
) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    try:
        return subprocess.Popen(
            args,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: _die_with_parent(nofile),
            env=dict(os.environ, PYTHONUNBUFFERED="1", **(extra_env or {})),
        )
    finally:
        out.close()


def wait_notify(
    sock: socket.socket, proc: subprocess.Popen[bytes] | None, timeout: float, log: Path
) -> None:
    """Block until READY=1 arrives on ``sock`` (sd_notify), the process exits, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or (proc is not None and proc.poll() is not None):
            raise AssertionError(
                f"no READY=1 from {proc and proc.args}; log:\n{log.read_text()[-3000:]}"
            )
        sock.settimeout(min(left, 1.0))  # a process that died says nothing: look each second
        try:
            msg = sock.recv(4096).decode()
        except TimeoutError:
            continue
        if "READY=1" in msg.split("\n"):
            return


@dataclass
class RealTable:
    """One tabled daemon on a simulated shoe (baccarat)."""

    id: str
    folder: Path
    publish: str
    replay: str
    curve: bool = False
    proc: subprocess.Popen[bytes] | None = None

    def config(self, pace: float, keys: Path | None) -> Path:
        sec = ""
        if keys is not None:
            sec = f'\n[security]\nserver_key = "{keys / "table.key_secret"}"\nclients = "{keys / "clients"}"\n'
        cfg = self.folder / "table.toml"
        run = Path(tempfile.mkdtemp(prefix="fl-", dir="/tmp"))
        cfg.write_text(
            f"""
[table]
id = "{self.id}"
game = "baccarat"
state_dir = "{self.folder / "state"}"
runtime_dir = "{run}"

[game]
start_burn = "first-card"
betting_seconds = 0.2
settle_seconds = 0.1
auto_new_shoe = true

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "sim"
[devices.options]
encoding = "rank-suit"
[devices.sim]
seed = {abs(hash(self.id)) % 1000}
pace = {pace}

[bus]
publish = "{self.publish}"
replay = "{self.replay}"
heartbeat_interval = 1.0

[log]
format = "json"
level = "warning"
{sec}"""
        )
        return cfg

    def start(self) -> None:
        """Launch it; :meth:`wait_ready` waits for its READY=1 (what systemd waits for)."""
        path = Path(tempfile.mkdtemp(prefix="fn-", dir="/tmp")) / "notify"
        self._notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._notify.bind(str(path))
        self.proc = _popen(
            [sys.executable, "-m", "daemon.runtime.app", "--config", str(self.folder / "table.toml")],
            self.folder / "daemon.log",
            extra_env={"NOTIFY_SOCKET": str(path)},
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        try:
            wait_notify(self._notify, self.proc, timeout, self.folder / "daemon.log")
        finally:
            self._notify.close()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(15)
        self.proc = None

    def last_seq(self, curve: tuple[bytes, bytes, bytes] | None = None) -> tuple[str, int]:
        """The table's own head, from its replay socket's end marker."""
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        if curve is not None:
            s.setsockopt(zmq.CURVE_PUBLICKEY, curve[0])
            s.setsockopt(zmq.CURVE_SECRETKEY, curve[1])
            s.setsockopt(zmq.CURVE_SERVERKEY, curve[2])
        s.connect(self.replay)
        try:
            s.send(b'{"from": 1000000000}')
            if not s.poll(20_000):
                raise TimeoutError(f"{self.id}: no replay answer")
            end = json.loads(s.recv())
            return end["journal_id"], int(end["last_seq"])
        finally:
            s.close()


@dataclass
class Floor:
    """A floor in a temporary folder. ``start()`` brings up everything but the bridge."""

    folder: Path
    real: int = 2
    fake: int = 10
    pace: float = 0.05
    interval: float = 0.5
    curve_tables: int = 0
    tables: list[RealTable] = field(default_factory=list)
    nats: NatsServer | None = None
    loadgen: subprocess.Popen[bytes] | None = None
    control: Control | None = None
    bridge: subprocess.Popen[bytes] | None = None
    fake_endpoints: dict[str, list[str]] = field(default_factory=dict)
    keys: Path | None = None
    metrics_port: int = 0
    #: extra nats-server config (TLS, authorization) and the bridge's [nats] lines for it
    nats_conf: str = ""
    nats_lines: list[str] = field(default_factory=list)
    #: a NATS cluster the caller started and stops (instead of one server of the floor's own)
    cluster: list[NatsServer] = field(default_factory=list)
    #: the fake tables' ids: <table_prefix>-001 … (unique across the sites of a group)
    table_prefix: str = "lg"
    #: more [bridge] lines (behind_after = 2, ...)
    bridge_lines: list[str] = field(default_factory=list)
    #: the fake tables sign their heartbeats' checkpoints with this Ed25519 key (PEM, 0600)
    checkpoint_key: Path | None = None

    @property
    def bridge_config(self) -> Path:
        return self.folder / "bridge.toml"

    def start(self, *, deal: bool = True) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.cluster:  # started by the caller: the bridge lists them all
            self.nats = self.cluster[0]
        else:
            self.nats = NatsServer(self.folder / "nats", conf=self.nats_conf)
            self.nats.start()
        if self.curve_tables:
            self.keys = self.folder / "keys"
            create_curve(self.keys, "table")
            pub, _ = create_curve(self.keys / "private", "bridge")
            (self.keys / "clients").mkdir()
            (self.keys / "clients" / pub.name).write_bytes(pub.read_bytes())
            create_curve(self.keys / "private", "stranger")  # a key no table lists
        for i in range(1, self.real + 1):
            t = RealTable(
                f"real-{i:02d}",
                self.folder / f"real-{i:02d}",
                f"tcp://127.0.0.1:{free_port()}",
                f"tcp://127.0.0.1:{free_port()}",
                curve=i <= self.curve_tables,
            )
            t.folder.mkdir(parents=True, exist_ok=True)
            t.config(self.pace, self.keys if t.curve else None)
            t.start()
            self.tables.append(t)
        for t in self.tables:  # started together, waited for together
            for attempt in range(3):
                try:
                    t.wait_ready()
                    break
                except AssertionError:
                    # a port picked free was taken meanwhile (by another process here): new ones
                    if (
                        attempt == 2
                        or "Address already in use" not in (t.folder / "daemon.log").read_text()
                    ):
                        raise
                    t.publish = f"tcp://127.0.0.1:{free_port()}"
                    t.replay = f"tcp://127.0.0.1:{free_port()}"
                    t.config(self.pace, self.keys if t.curve else None)
                    t.start()
        if self.fake:
            ctl = f"ipc://{self.folder}/loadgen.ctl"
            args = [
                sys.executable,
                "-m",
                "bench.floor.loadgen",
                "--tables",
                str(self.fake),
                "--control",
                ctl,
                "--interval",
                str(self.interval),
                "--prefix",
                self.table_prefix,
            ]
            if not deal:
                args.append("--no-deal")
            if self.checkpoint_key is not None:
                args += ["--checkpoint-key", str(self.checkpoint_key)]
            # a fake table holds ~8 fds (two sockets, their listeners, the bridge's connections)
            nofile = None
            if self.fake > 500:  # as many as this process may give (not raised past hard)
                import resource

                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                want = 8 * self.fake + 1024
                nofile = want if hard == resource.RLIM_INFINITY else min(want, hard)
            self.loadgen = _popen(args, self.folder / "loadgen.log", nofile=nofile)
            self.control = Control(ctl, timeout=60)
            self.fake_endpoints = self.control("endpoints")
        self.write_bridge_config()

    def write_bridge_config(self, *, wrong_key_for: str | None = None) -> None:
        assert self.nats is not None
        self.metrics_port = self.metrics_port or free_port()
        lines = [
            "[nats]",
            "servers = ["
            + ", ".join(f'"{n.url}"' for n in (self.cluster or [self.nats]))
            + "]",
            "publish_timeout = 2.0",
            *self.nats_lines,
            "",
            "[bridge]",
            f'listen = "127.0.0.1:{self.metrics_port}"',
            "stale_after = 3.0",
            "replay_timeout = 5.0",
            *self.bridge_lines,
        ]
        if self.keys is not None:
            lines.append(f'client_key = "{self.keys / "private" / "bridge.key_secret"}"')
        for t in self.tables:
            lines += [
                "",
                "[[tables]]",
                f'id = "{t.id}"',
                f'publish = "{t.publish}"',
                f'replay = "{t.replay}"',
            ]
            if t.curve:
                assert self.keys is not None
                lines.append(f'server_key = "{self.keys / "table.key"}"')
                if t.id == wrong_key_for:
                    lines.append(f'client_key = "{self.keys / "private" / "stranger.key_secret"}"')
        for tid, (pub, rep) in self.fake_endpoints.items():
            lines += ["", "[[tables]]", f'id = "{tid}"', f'publish = "{pub}"', f'replay = "{rep}"']
        self.bridge_config.write_text("\n".join(lines) + "\n")

    def start_bridge(
        self, timeout: float = 60.0, *, wrap: list[str] | None = None, nofile: int | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``tabled-bridge`` as installed; ready when it says READY=1 (as to systemd).
        ``wrap``: a command it runs under (the unit's system call filter); ``nofile``: its
        open-file limit, as the unit's ``LimitNOFILE=``."""
        path = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp")) / "notify"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(str(path))
            self.bridge = _popen(
                [*(wrap or []), str(BIN / "tabled-bridge"), "--config", str(self.bridge_config)],
                self.folder / "bridge.log",
                extra_env={"NOTIFY_SOCKET": str(path)},
                nofile=nofile,
            )
            wait_notify(sock, self.bridge, timeout, self.folder / "bridge.log")
        path.unlink()
        return self.bridge

    def start_other_bridge(
        self, name: str, timeout: float = 60.0
    ) -> tuple[subprocess.Popen[bytes], int]:
        """Another ``tabled-bridge`` on the same tables and stream (active-active), with its own
        status port, config ``<name>.toml`` and log ``<name>.log``; returns it and its port.
        The caller stops it."""
        port = free_port()
        cfg = self.folder / f"{name}.toml"
        cfg.write_text(
            self.bridge_config.read_text().replace(
                f'listen = "127.0.0.1:{self.metrics_port}"', f'listen = "127.0.0.1:{port}"'
            )
        )
        path = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp")) / "notify"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(str(path))
            proc = _popen(
                [str(BIN / "tabled-bridge"), "--config", str(cfg)],
                self.folder / f"{name}.log",
                extra_env={"NOTIFY_SOCKET": str(path)},
            )
            wait_notify(sock, proc, timeout, self.folder / f"{name}.log")
        path.unlink()
        return proc, port

    def kill_bridge(self, sig: int = signal.SIGKILL) -> int:
        assert self.bridge is not None
        self.bridge.send_signal(sig)
        rc = self.bridge.wait(30)
        self.bridge = None
        return rc

    def curve_of(self, t: RealTable) -> tuple[bytes, bytes, bytes] | None:
        if not t.curve:
            return None
        from daemon.security import ClientCurve

        assert self.keys is not None
        c = ClientCurve.load(self.keys / "private" / "bridge.key_secret", self.keys / "table.key")
        return c.public, c.secret, c.server

    def heads(self) -> dict[str, tuple[str, int]]:
        """Every table's own (journal id, last seq) now."""
        out = {t.id: t.last_seq(self.curve_of(t)) for t in self.tables if t.proc is not None}
        if self.control is not None:
            out.update({k: (j, s) for k, (j, s, _h) in self.control("heads").items()})
        return out

    def close(self) -> None:
        if self.bridge is not None and self.bridge.poll() is None:
            self.bridge.kill()
            self.bridge.wait(10)
        if self.control is not None:
            try:
                self.control("stop")
            except Exception:
                pass
            self.control.close()
        if self.loadgen is not None:
            try:
                self.loadgen.wait(10)
            except subprocess.TimeoutExpired:
                self.loadgen.kill()
                self.loadgen.wait()
        for t in self.tables:
            t.kill(signal.SIGTERM)
        if self.nats is not None and not self.cluster:
            self.nats.stop()


class Mismatch(AssertionError):
    pass


async def verify(
    url: str,
    want: dict[str, tuple[str, int]],
    timeout: float = 60.0,
    stream: str = "TABLES",
    **connect: Any,
) -> dict[str, int]:
    """Wait until JetStream holds every table's events up to ``want``, then check them all.

    For each table: each (journal, seq) exactly once, seqs 1, 2, 3 … in stream order per
    journal, each message id ``<table>:<journal>:<seq>``, and the hash chain verifies from
    seq 1 with the client's check. Returns events per table. Raises :class:`Mismatch`.
    ``connect``: nats-py's options for a server with TLS or a login.
    """
    nc = await nats.connect(url, **connect)
    got: dict[str, list[tuple[dict[str, str], bytes]]] = {}
    try:
        js = nc.jetstream()
        sub = await js.subscribe(">", ordered_consumer=True, stream=stream)
        held: dict[str, tuple[str, int]] = {}
        deadline = time.monotonic() + timeout
        missing = dict(want)
        while missing:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Mismatch(
                    f"JetStream does not hold every event in {timeout} s: "
                    + ", ".join(
                        f"{t} has {held.get(t)} of {w}" for t, w in list(missing.items())[:8]
                    )
                )
            try:
                msg = await sub.next_msg(timeout=min(left, 5.0))
            except nats.errors.TimeoutError:
                continue
            table = msg.subject.split(".")[1]
            hdr = dict(msg.headers or {})
            got.setdefault(table, []).append((hdr, msg.data))
            held[table] = (hdr["Tabled-Journal"], int(hdr["Tabled-Seq"]))
            w = missing.get(table)
            if w is not None and held[table][0] == w[0] and held[table][1] >= w[1]:
                del missing[table]
        await sub.unsubscribe()
    finally:
        await nc.close()
    counts = {}
    for table, msgs in got.items():
        chain = Chain(table)
        ids: set[str] = set()
        for hdr, raw in msgs:
            jid, seq = hdr["Tabled-Journal"], int(hdr["Tabled-Seq"])
            mid = f"{table}:{jid}:{seq}"
            if hdr.get("Nats-Msg-Id") != mid:
                raise Mismatch(f"{table}: message id {hdr.get('Nats-Msg-Id')!r}, expected {mid!r}")
            if mid in ids:
                raise Mismatch(f"{table}: {mid} stored twice")
            ids.add(mid)
            try:
                f = chain.check(raw, journal_id=jid)
            except Exception as e:
                raise Mismatch(f"{table}: {e}") from None
            if (
                f["seq"] != seq
                or hdr["Tabled-Hash"] != f["hash"]
                or hdr["Tabled-Prev"] != f["prev"]
            ):
                raise Mismatch(f"{table} seq {seq}: headers do not match the event")
        counts[table] = len(msgs)
    for table in want:
        if table not in counts:
            raise Mismatch(f"{table}: nothing in JetStream")
    return counts


def run(coro: Any) -> Any:
    return asyncio.run(coro)
