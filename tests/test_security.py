"""CURVE + ZAP on the bus and control sockets, key files, signed checkpoints, hostile control input.

Real ZeroMQ sockets on loopback with random ports. A refused CURVE client
gets no error, only silence, so "receives nothing" is always checked
against a client with the right key on the same socket in the same window:
the silence is then the key's doing, not a slow joiner's. Every wait is
bounded; nothing is measured.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zmq
import zmq.asyncio
import zmq.auth
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.bus.bus import Bus
from daemon.bus.control import ControlError, ControlServer, Peer
from daemon.bus.replay_server import ReplayError
from daemon.bus.subscriber import replay
from daemon.ctl import cli
from daemon.ctl.control_client import ControlClient, DaemonUnreachable
from daemon.ctl.keys import KeyExists, create_checkpoint, create_curve
from daemon.journal import Batch, Journal
from daemon.journal.events import Draft
from daemon.runtime.config import load
from daemon.security import (
    BUS_DOMAIN,
    CONTROL_DOMAIN,
    ZAP_ENDPOINT,
    Authenticator,
    Checkpointer,
    ClientCurve,
    Security,
    SecurityError,
    ServerCurve,
    check_secret_file,
    checkpoint_message,
    load_clients,
    read_cert,
    verify_checkpoint,
)

TCP = "tcp://127.0.0.1:*"
TIME = "2026-01-01T00:00:00.000Z"
LIMIT = 20.0  # seconds: a hang guard, never a measurement
QUIET = 1.0  # seconds a refused client is watched for anything arriving


# -- keys ---------------------------------------------------------------------------------------


class Keys:
    """A table key, subscriber keys (``bus/``) and control keys with roles (``control/``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.private = root / "private"
        self.bus_dir = root / "bus"
        self.control_dir = root / "control"
        self.server_public_path, self.server_secret_path = create_curve(root, "table")
        self.server = read_cert(self.server_secret_path)
        self.sub1 = self._client("sub1", self.bus_dir)
        self.pit1 = self._client("pit1", self.control_dir, "supervisor")
        self.view1 = self._client("view1", self.control_dir, "viewer")
        self.outsider = self._client("outsider", None)

    def _client(self, name: str, allowed: Path | None, role: str | None = None) -> ClientCurve:
        public, secret = create_curve(self.private, name, role)
        if allowed is not None:
            allowed.mkdir(exist_ok=True)
            shutil.copy(public, allowed / public.name)
        cert = read_cert(secret)
        assert cert.secret is not None
        return ClientCurve(cert.public, cert.secret, self.server.public)

    def secret_path(self, name: str) -> Path:
        return self.private / f"{name}.key_secret"


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return Keys(tmp_path / "keys")


@pytest.fixture
async def ctx() -> AsyncIterator[zmq.asyncio.Context]:
    c = zmq.asyncio.Context()
    yield c
    c.destroy(linger=0)


@pytest.fixture
async def auth(ctx: zmq.asyncio.Context, keys: Keys) -> AsyncIterator[Authenticator]:
    a = Authenticator(
        {
            BUS_DOMAIN: load_clients(keys.bus_dir),
            CONTROL_DOMAIN: load_clients(keys.control_dir, need_role=True),
        }
    )
    a.start(ctx)
    yield a
    await a.close()


def server_curve(keys: Keys, auth: Authenticator, domain: str) -> ServerCurve:
    assert keys.server.secret is not None
    return ServerCurve(keys.server.public, keys.server.secret, domain, auth)


@pytest.fixture
def journal_path(tmp_path: Path) -> Iterator[tuple[str, Journal]]:
    path = str(tmp_path / "journal.db")
    j = Journal(path, "t1")
    j.append(
        [Batch(drafts=[Draft("test.tick", {"n": i}) for i in range(20)], time=TIME, mono=None)]
    )
    yield path, j
    j.close()


@pytest.fixture
async def curve_bus(
    ctx: zmq.asyncio.Context, journal_path: tuple[str, Journal], keys: Keys, auth: Authenticator
) -> AsyncIterator[Bus]:
    path, j = journal_path
    b = Bus(
        ctx,
        table="t1",
        publish=TCP,
        replay=TCP,
        journal_path=path,
        journal_id=j.journal_id,
        curve=server_curve(keys, auth, BUS_DOMAIN),
    )
    await b.start()
    yield b
    await b.close()


def _sub(ctx: zmq.asyncio.Context, endpoint: str, curve: ClientCurve | None) -> zmq.asyncio.Socket:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    s.subscribe(b"")
    if curve is not None:
        curve.apply(s)
    s.connect(endpoint)
    return s


async def until(cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Wait (bounded) for something another task or libzmq's I/O thread does; the bound only
    ends a hang (every use waits for something that must come)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


# -- key files and their modes -------------------------------------------------------------------


def test_curve_keys_are_certificates_with_the_right_modes(tmp_path):
    public, secret = create_curve(tmp_path / "k", "pit1", "dealer")
    assert (public.name, secret.name) == ("pit1.key", "pit1.key_secret")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o644
    pub_z85, none = zmq.auth.load_certificate(public)  # pyzmq reads them as its own
    pub2, sec = zmq.auth.load_certificate(secret)
    assert none is None and pub_z85 == pub2 and zmq.curve_public(sec) == pub_z85
    assert read_cert(public).metadata == {"role": "dealer"}
    assert "secret-key" not in public.read_text()
    with pytest.raises(KeyExists, match="refusing to overwrite"):
        create_curve(tmp_path / "k", "pit1")
    assert zmq.auth.load_certificate(secret) == (pub2, sec), "the old pair is untouched"


def test_secret_mode_is_0600_whatever_the_umask(tmp_path):
    old = os.umask(0o000)
    try:
        _, secret = create_curve(tmp_path, "a")
        _, cp_secret, _ = create_checkpoint(tmp_path, "cp")
    finally:
        os.umask(old)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(cp_secret.stat().st_mode) == 0o600


def test_checkpoint_keys_are_pem_with_the_right_modes(tmp_path):
    public, secret, kid = create_checkpoint(tmp_path, "cp")
    assert (public.name, secret.name) == ("cp.ed25519.pub", "cp.ed25519")
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o644
    key = serialization.load_pem_private_key(secret.read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)
    assert Checkpointer.load(secret).key_id == kid
    with pytest.raises(KeyExists):
        create_checkpoint(tmp_path, "cp")


def test_tablectl_keys_prints_the_public_key_and_config_lines(tmp_path, capsys):
    assert cli.main(["keys", "table", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    public = read_cert(tmp_path / "table.key").public.decode()
    assert f"public key: {public}" in out
    assert f'server_key = "{tmp_path / "table.key_secret"}"' in out
    assert cli.main(["keys", "pit1", "--dir", str(tmp_path), "--role", "supervisor"]) == 0
    out = capsys.readouterr().out
    assert f'client_key = "{tmp_path / "pit1.key_secret"}"' in out
    assert read_cert(tmp_path / "pit1.key").metadata["role"] == "supervisor"
    assert cli.main(["keys", "cp", "--checkpoint", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f'checkpoint_key = "{tmp_path / "cp.ed25519"}"' in out
    assert cli.main(["keys", "pit1", "--dir", str(tmp_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o602])
def test_a_secret_key_others_can_touch_is_refused(tmp_path, mode):
    _, secret = create_curve(tmp_path, "table")
    os.chmod(secret, mode)
    with pytest.raises(SecurityError) as e:
        check_secret_file(secret)
    assert str(secret) in str(e.value)
    assert f"mode {mode:04o}" in str(e.value)
    assert f"chmod 600 {secret}" in str(e.value)


def test_missing_and_mismatched_keys_are_named(tmp_path):
    with pytest.raises(SecurityError, match="does not exist"):
        check_secret_file(tmp_path / "none.key_secret")
    _, secret = create_curve(tmp_path, "a")
    other_public, _ = zmq.curve_keypair()
    text = secret.read_text()
    bad = tmp_path / "bad.key_secret"
    bad.write_text(text.replace(read_cert(secret).public.decode(), other_public.decode()))
    with pytest.raises(SecurityError, match="does not belong to the secret key"):
        read_cert(bad)
    short = tmp_path / "short.key"
    short.write_text('curve\n    public-key = "abc"\n')
    with pytest.raises(SecurityError, match=r"short\.key: public-key is not a 40-character"):
        read_cert(short)


def test_control_clients_need_a_role(tmp_path):
    d = tmp_path / "control"
    create_curve(d, "norole")
    with pytest.raises(SecurityError, match="no role for control client 'norole'"):
        load_clients(d, need_role=True)
    assert load_clients(d, roles={"norole": "dealer"}, need_role=True).popitem()[1].role == "dealer"
    with pytest.raises(SecurityError, match=r"security\.roles names ghost"):
        load_clients(d, roles={"norole": "dealer", "ghost": "viewer"})


def test_a_world_writable_client_directory_is_refused(tmp_path):
    d = tmp_path / "clients"
    create_curve(d, "sub")
    os.chmod(d, 0o777)
    with pytest.raises(SecurityError, match="anyone may change it"):
        load_clients(d)


# -- CURVE on the bus ------------------------------------------------------------------------------


async def test_only_a_listed_key_receives_the_publish_stream(ctx, curve_bus, keys, auth):
    known = _sub(ctx, curve_bus.publish_endpoint, keys.sub1)
    unknown = _sub(ctx, curve_bus.publish_endpoint, keys.outsider)
    plain = _sub(ctx, curve_bus.publish_endpoint, None)
    wrong_server = _sub(
        ctx,
        curve_bus.publish_endpoint,
        ClientCurve(keys.sub1.public, keys.sub1.secret, keys.outsider.public),
    )
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT
        while not await known.poll(20, zmq.POLLIN):  # the slow joiner: publish until heard
            assert loop.time() < deadline, "the listed key never received a heartbeat"
            curve_bus.heartbeat({"last_seq": 20}, TIME, 0.0)
        await known.recv_multipart()
        # the others, watched while the same heartbeats reach the listed key
        end = loop.time() + QUIET
        heard = 0
        while loop.time() < end:
            curve_bus.heartbeat({"last_seq": 20}, TIME, 0.0)
            while await known.poll(0, zmq.POLLIN):
                await known.recv_multipart()
                heard += 1
            for s in (unknown, plain, wrong_server):
                assert not await s.poll(20, zmq.POLLIN), "a refused client received a message"
        assert heard > 0
        assert await until(lambda: auth.counters["zap.denied"] >= 1)
        assert await until(lambda: auth.counters["publish.failed_auth"] >= 1)
        assert await until(  # the plain client and the one with the wrong server key
            lambda: (
                auth.counters["publish.failed_protocol"] + auth.counters["publish.failed_other"]
                >= 1
            )
        )
        assert auth.counters["publish.handshakes"] >= 1
        assert auth.failures >= 2
    finally:
        for s in (known, unknown, plain, wrong_server):
            s.close(linger=0)


async def test_only_a_listed_key_gets_a_replay(ctx, curve_bus, keys):
    frames, end = await asyncio.wait_for(
        replay(ctx, curve_bus.replay_endpoint, 1, curve=keys.sub1), LIMIT
    )
    assert len(frames) == 20 and end["last_seq"] == 20
    as_tuple = (keys.sub1.public, keys.sub1.secret, keys.sub1.server)
    frames, _ = await replay(ctx, curve_bus.replay_endpoint, 5, 6, curve=as_tuple)
    assert len(frames) == 2
    for curve in (keys.outsider, None):
        with pytest.raises(ReplayError, match="no answer"):
            await replay(ctx, curve_bus.replay_endpoint, 1, timeout=QUIET, curve=curve)


async def test_a_bus_key_is_not_a_control_key(ctx, keys, auth):
    """Domains keep the allow-lists apart: a subscriber's key opens no control socket."""
    server = ControlServer(ctx, TCP, _echo, curve=server_curve(keys, auth, CONTROL_DOMAIN))
    await server.start()
    try:
        endpoint = server._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        with pytest.raises(DaemonUnreachable):
            await _call(endpoint, "echo", curve=keys.sub1, timeout=QUIET)
        assert auth.counters["control.denied"] >= 1
    finally:
        await server.close()


async def test_curve_without_a_running_authenticator_refuses_to_bind(ctx, keys, journal_path):
    auth = Authenticator({BUS_DOMAIN: {}})  # never started
    b = Bus(
        ctx,
        table="t1",
        publish=TCP,
        replay=TCP,
        journal_path=journal_path[0],
        curve=server_curve(keys, auth, BUS_DOMAIN),
    )
    with pytest.raises(SecurityError, match="ZAP authenticator is not running"):
        await b.start()
    assert b.pub._pub is None and b.replay._router is None
    await b.close()


async def test_the_authenticator_refuses_to_start_when_it_cannot_bind(ctx):
    squatter = ctx.socket(zmq.REP)
    squatter.bind(ZAP_ENDPOINT)
    try:
        a = Authenticator({BUS_DOMAIN: {}})
        with pytest.raises(SecurityError, match="cannot start the ZAP authenticator"):
            a.start(ctx)
        assert not a.running
        await a.close()
    finally:
        squatter.close(linger=0)


def test_zap_decisions():
    key = ClientKeyFactory.make("pit1", "supervisor")
    a = Authenticator({CONTROL_DOMAIN: {key.public: key}})
    raw = zmq.utils.z85.decode(key.public)
    ok = a.decide([b"1.0", b"7", b"control", b"10.0.0.9", b"", b"CURVE", raw])
    assert ok[2] == b"200" and ok[4] == b"pit1" and b"X-Role" in ok[5] and b"supervisor" in ok[5]
    other = zmq.utils.z85.decode(zmq.curve_keypair()[0])
    assert a.decide([b"1.0", b"8", b"control", b"10.0.0.9", b"", b"CURVE", other])[2] == b"400"
    assert a.decide([b"1.0", b"9", b"control", b"10.0.0.9", b"", b"NULL"])[2] == b"400"
    assert a.decide([b"1.0", b"9", b"other", b"", b"", b"NULL"])[2] == b"200"  # not ours
    assert a.decide([b"2.0", b"9", b"control", b"", b"", b"CURVE", raw])[2] == b"400"
    assert a.decide([b"1.0"])[2] == b"400"
    assert a.counters["zap.allowed"] == 1 and a.counters["zap.denied"] == 2


class ClientKeyFactory:
    @staticmethod
    def make(name: str, role: str | None) -> Any:
        from daemon.security import ClientKey

        return ClientKey(name, zmq.curve_keypair()[0], role)


# -- CURVE on the control socket -------------------------------------------------------------------


async def _echo(req: dict[str, Any], peer: Peer) -> dict[str, Any]:
    if req["cmd"] != "echo":
        raise ControlError(f"unknown command {req['cmd']!r}")
    return {"user": peer.user, "role": peer.role, "actor": peer.actor(req.get("actor"))}


async def _call(
    endpoint: str,
    cmd: str,
    *,
    curve: Any = None,
    timeout: float = LIMIT / 2,  # an answer that must come (a refusal's wait passes its own)
    actor: str | None = None,
    **args: Any,
) -> dict[str, Any]:
    def blocking() -> dict[str, Any]:
        with ControlClient(endpoint, timeout=timeout, actor=actor, curve=curve) as c:
            return c.call(cmd, **args)

    return await asyncio.wait_for(asyncio.to_thread(blocking), LIMIT)


async def test_control_over_curve_knows_who_and_what_role(ctx, keys, auth):
    server = ControlServer(ctx, TCP, _echo, curve=server_curve(keys, auth, CONTROL_DOMAIN))
    await server.start()
    try:
        endpoint = server._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        assert await _call(endpoint, "echo", curve=keys.pit1) == {
            "user": "pit1",
            "role": "supervisor",
            "actor": "pit1",
        }
        got = await _call(endpoint, "echo", curve=keys.view1, actor="alice")
        assert got == {"user": "view1", "role": "viewer", "actor": "view1/alice"}
        for curve in (keys.outsider, None):
            with pytest.raises(DaemonUnreachable, match="no answer") as e:
                await _call(endpoint, "echo", curve=curve, timeout=QUIET)
        assert "CURVE" not in str(e.value)  # the plain client was not told about keys
        with pytest.raises(DaemonUnreachable, match="is this key in the table's"):
            await _call(endpoint, "echo", curve=keys.outsider, timeout=0.3)
        assert await until(lambda: auth.counters["control.failed_auth"] >= 2)
        # the plain client: a protocol error, or "no detail" when it leaves mid-handshake
        assert await until(
            lambda: (
                auth.counters["control.failed_protocol"] + auth.counters["control.failed_other"]
                >= 1
            )
        )
    finally:
        await server.close()


# -- signed checkpoints ------------------------------------------------------------------------------


@pytest.fixture
def signer(tmp_path: Path) -> tuple[Checkpointer, Path]:
    public, secret, _ = create_checkpoint(tmp_path, "cp")
    return Checkpointer.load(secret), public


def test_a_checkpoint_verifies_and_fails_when_anything_is_altered(signer):
    cp_signer, public = signer
    cp = cp_signer("t1", "j-1", 42, "ab" * 32)
    assert cp_signer("t1", "j-1", 42, "ab" * 32) is cp, "signed once per head"
    hb = {"type": "heartbeat", "data": {"last_seq": 42, "checkpoint": cp}}
    pem = public.read_bytes()
    raw = serialization.load_pem_public_key(pem).public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    for key in (public, str(public), pem, pem.decode(), raw, base64.b64encode(raw).decode()):
        assert verify_checkpoint(key, hb)
    assert verify_checkpoint(public, hb["data"]) and verify_checkpoint(public, cp)
    for field, value in [
        ("seq", 43),
        ("seq", 41),
        ("hash", "ac" + "ab" * 31),
        ("table", "t2"),
        ("journal_id", "j-2"),
        ("sig", base64.b64encode(b"\0" * 64).decode()),
        ("sig", "not base64!"),
        ("v", "v2"),
        ("seq", "42"),
        ("seq", True),
    ]:
        assert not verify_checkpoint(public, {**cp, field: value}), field
    other = Ed25519PrivateKey.generate().public_key()
    assert not verify_checkpoint(other, cp)
    for junk in ({}, {"data": {}}, {"checkpoint": None}, {"checkpoint": {"v": "v1"}}):
        assert not verify_checkpoint(public, junk)
    assert not verify_checkpoint(b"short", cp)
    assert checkpoint_message("t1", "j-1", 42, "ab") == b"tabled-checkpoint:v1:t1:j-1:42:ab"


def _pkcs8(key: Any, password: bytes | None = None) -> bytes:
    enc = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def _key_forms() -> dict[str, bytes]:
    """PEM files a checkpoint key might be: the form ``tablectl keys`` writes, altered ones."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed448

    pem = _pkcs8(Ed25519PrivateKey.generate())
    body = pem.splitlines()[1]
    return {
        "as written": pem,
        "CRLF": pem.replace(b"\n", b"\r\n"),
        "text before it": b"the table's checkpoint key\n" + pem,
        "no final newline": pem.rstrip(),
        "a seed byte changed": pem.replace(
            body, body[:-6] + (b"A" if body[-6:-5] != b"A" else b"B") + body[-5:]
        ),
        "one byte short": pem.replace(body, base64.b64encode(base64.b64decode(body)[:-1])),
        "not base64": pem.replace(body, body[:-4] + b"!!!!"),
        "encrypted": _pkcs8(Ed25519PrivateKey.generate(), b"pw"),
        "an EC key": _pkcs8(ec.generate_private_key(ec.SECP256R1())),
        "an Ed448 key": _pkcs8(ed448.Ed448PrivateKey.generate()),
        "empty": b"",
        # the review found these taken by the shortcut and refused by cryptography
        "a blank line before the footer": pem.replace(b"\n-----END", b"\n\n-----END"),
        "a blank line in the body": pem.replace(body, body[:32] + b"\n\n" + body[32:]),
        "spaces around the body": pem.replace(body, b"  " + body + b"  "),
    }


@pytest.mark.parametrize("form", sorted(_key_forms()))
def test_a_checkpoint_key_loads_as_cryptographys_parser_reads_it(tmp_path, form):
    """Checkpointer.load reads the form tablectl writes itself (daemon/security/checkpoints.py
    ``_pem_seed``, to spare a keyed start cryptography's serialization imports): every PEM
    gives the key cryptography's parser gives, or is refused where that is not an Ed25519 key."""
    pem = _key_forms()[form]
    path = tmp_path / "cp.ed25519"
    path.write_bytes(pem)
    path.chmod(0o600)
    try:
        want = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        want = None
    if not isinstance(want, Ed25519PrivateKey):
        with pytest.raises(SecurityError):
            Checkpointer.load(path)
        return
    got = Checkpointer.load(path)
    assert got._key.private_bytes_raw() == want.private_bytes_raw()
    public = want.public_key()
    assert verify_checkpoint(public, got("t1", "j-1", 7, "ab" * 32))
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert got.key_id == hashlib.sha256(raw).hexdigest()[:16]


async def test_heartbeats_carry_a_signed_checkpoint(ctx, journal_path, signer):
    path, j = journal_path
    cp_signer, public = signer
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path, signer=cp_signer)
    await b.start()
    sub = _sub(ctx, b.publish_endpoint, None)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LIMIT
        data = {"last_seq": j.last_seq, "last_hash": j.last_hash, "journal_id": j.journal_id}
        while not await sub.poll(20, zmq.POLLIN):
            assert loop.time() < deadline
            b.heartbeat(data, TIME, 0.0)
        _, body = await sub.recv_multipart()
        hb = msgspec.json.decode(body)
        cp = hb["data"]["checkpoint"]
        assert (cp["seq"], cp["hash"], cp["journal_id"], cp["table"]) == (
            j.last_seq,
            j.last_hash,
            j.journal_id,
            "t1",
        )
        assert cp["key_id"] == cp_signer.key_id
        assert verify_checkpoint(public, hb)
    finally:
        sub.close(linger=0)
        await b.close()


# -- hostile control messages --------------------------------------------------------------------------


class Recorder:
    """A handler that counts what it applied: hostile input must never reach it."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if req["cmd"] != "apply":
            raise ControlError(f"unknown command {req['cmd']!r} (known: apply)")
        self.applied.append(req)
        if self.gate is not None:
            await self.gate.wait()
        return {"n": len(self.applied)}


@pytest.fixture
def rundir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="ts", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
async def recorded(ctx, rundir) -> AsyncIterator[tuple[ControlServer, Recorder]]:
    rec = Recorder()
    s = ControlServer(ctx, f"ipc://{rundir}/control.sock", rec, max_message=4096)
    await s.start()
    yield s, rec
    await s.close()


async def _raw(
    ctx: zmq.asyncio.Context, endpoint: str, *messages: list[bytes], timeout: float = 5.0
) -> list[dict[str, Any] | None]:
    """Send each message on one DEALER; the decoded reply to each (None: none came)."""
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(endpoint)
    out: list[dict[str, Any] | None] = []
    try:
        for frames in messages:
            await d.send_multipart(frames)
            if await d.poll(timeout * 1000, zmq.POLLIN):
                out.append(msgspec.json.decode(await d.recv()))
            else:
                out.append(None)
    finally:
        d.close(linger=0)
    return out


HOSTILE = [
    (b'{"cmd": "apply", "args": {"pad": "' + b"x" * 4100 + b'"}}', "request too large"),
    (b"[" * 1500 + b"]" * 1500, "nested too deeply"),
    (b'{"cmd": "apply", "args": {"a": ' + b"[" * 1200 + b"]" * 1200 + b"}}", "nested too deeply"),
    (b"\x00\xff garbage", "not JSON"),
    (b'{"cmd": "apply", "id": [1]}', '"id" must be a string or an integer'),
    (b'{"cmd": "apply", "id": true}', '"id" must be a string or an integer'),
    (b'{"cmd": "apply", "id": 1e400}', "not JSON"),
    (b'{"cmd": "apply", "id": 100000000000000000000}', '"id" is out of range'),
    (b'{"cmd": "apply", "id": "' + b"i" * 129 + b'"}', '"id" is longer than 128'),
    (b'{"cmd": "apply", "actor": "' + b"a" * 129 + b'"}', '"actor" is longer than 128'),
    (b'{"cmd": "' + b"c" * 65 + b'"}', '"cmd" is longer than 64'),
    (b'{"cmd": {"apply": 1}}', '"cmd" must be a string'),
    (b'{"cmd": "apply", "args": 5}', '"args" must be an object'),
    (b'{"cmd": "apply", "sudo": true}', "unknown key(s) in request: sudo"),
    (b'{"cmd": "rm -rf /"}', "unknown command 'rm -rf /'"),
]


async def test_hostile_requests_get_an_error_and_change_nothing(ctx, recorded):
    server, rec = recorded
    replies = await _raw(ctx, server.endpoint, *([frame] for frame, _ in HOSTILE))
    for (frame, expected), reply in zip(HOSTILE, replies, strict=True):
        assert reply is not None, frame[:60]
        assert reply["ok"] is False and expected in reply["error"], (frame[:60], reply)
    assert rec.applied == []
    assert server.counters["too_large"] == 1
    # and the server still works
    assert (await _raw(ctx, server.endpoint, [b'{"cmd": "apply", "id": 1}']))[0]["ok"] is True


async def test_a_huge_request_is_cut_by_libzmq_and_the_server_goes_on(ctx, recorded):
    server, rec = recorded
    huge = b'{"cmd": "apply", "args": {"pad": "' + b"x" * 9000 + b'"}}'
    assert await _raw(ctx, server.endpoint, [huge], timeout=0.5) == [None]
    assert rec.applied == []
    assert (await _raw(ctx, server.endpoint, [b'{"cmd": "apply"}']))[0]["ok"] is True


async def test_a_replayed_command_is_answered_but_not_applied_again(ctx, recorded):
    server, rec = recorded
    req = b'{"cmd": "apply", "args": {"x": 1}, "id": "abc", "actor": "pit"}'
    first, again = await _raw(ctx, server.endpoint, [req], [req])
    assert first == again == {"ok": True, "result": {"n": 1}, "id": "abc"}
    # the same request from another connection: still the same peer? no: per connection
    # without CURVE, so a new connection's "abc" is its own request
    (other,) = await _raw(ctx, server.endpoint, [req])
    assert other == {"ok": True, "result": {"n": 2}, "id": "abc"}
    assert len(rec.applied) == 2
    assert server.counters["replayed"] == 1


async def test_a_reused_id_with_another_request_is_refused(ctx, recorded):
    server, rec = recorded
    a = b'{"cmd": "apply", "args": {"x": 1}, "id": 7}'
    b = b'{"cmd": "apply", "args": {"x": 2}, "id": 7}'
    first, second = await _raw(ctx, server.endpoint, [a], [b])
    assert first["ok"] is True
    assert second["ok"] is False and "already used for another request" in second["error"]
    assert len(rec.applied) == 1


async def test_key_order_does_not_make_a_replay_new(ctx, recorded):
    server, rec = recorded
    a = b'{"cmd": "apply", "args": {"x": 1, "y": 2}, "id": "k"}'
    b = b'{"id": "k", "args": {"y": 2, "x": 1}, "cmd": "apply"}'
    first, second = await _raw(ctx, server.endpoint, [a], [b])
    assert first == second and len(rec.applied) == 1


async def test_a_duplicate_while_the_first_still_runs_is_not_applied(ctx, recorded):
    server, rec = recorded
    rec.gate = asyncio.Event()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(server.endpoint)
    try:
        req = b'{"cmd": "apply", "id": "slow"}'
        await d.send(req)
        assert await until(lambda: len(rec.applied) == 1)
        await d.send(req)
        assert not await d.poll(200, zmq.POLLIN)  # both wait for the one run
        rec.gate.set()
        replies = [msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT)) for _ in range(2)]
        assert replies[0] == replies[1] == {"ok": True, "result": {"n": 1}, "id": "slow"}
        assert len(rec.applied) == 1
    finally:
        d.close(linger=0)


async def test_over_curve_a_replay_is_caught_across_connections(ctx, keys, auth):
    rec = Recorder()
    server = ControlServer(ctx, TCP, rec, curve=server_curve(keys, auth, CONTROL_DOMAIN))
    await server.start()
    try:
        endpoint = server._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        req = [b'{"cmd": "apply", "id": "once"}']

        def connect() -> zmq.asyncio.Socket:
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.LINGER, 0)
            keys.pit1.apply(d)
            d.connect(endpoint)
            return d

        replies = []
        for _ in range(2):  # two connections, the same key: the same peer
            d = connect()
            try:
                await d.send_multipart(req)
                replies.append(msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT)))
            finally:
                d.close(linger=0)
        assert replies[0] == replies[1] and len(rec.applied) == 1
    finally:
        await server.close()


async def test_control_client_ids_are_unique_across_clients(ctx, recorded):
    server, rec = recorded
    for _ in range(3):
        assert (await _call(server.endpoint, "apply"))["n"] == len(rec.applied)
    assert len({r["id"] for r in rec.applied}) == 3


async def test_a_hostile_replay_request_does_not_end_the_replay_server(ctx, journal_path):
    path, _ = journal_path
    b = Bus(ctx, table="t1", publish=TCP, replay=TCP, journal_path=path)
    await b.start()
    try:
        d = ctx.socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 0)
        d.connect(b.replay_endpoint)
        try:
            await d.send(b"[" * 1500 + b"]" * 1500)
            reply = msgspec.json.decode(await asyncio.wait_for(d.recv(), LIMIT))
            assert "nested too deeply" in reply["error"]
        finally:
            d.close(linger=0)
        frames, _ = await asyncio.wait_for(replay(ctx, b.replay_endpoint, 1), LIMIT)
        assert len(frames) == 20
    finally:
        await b.close()


@pytest.mark.parametrize("mode", [0o600, 0o660, 0o666])
async def test_the_ipc_socket_is_never_more_open_than_configured(ctx, rundir, mode):
    path = f"{rundir}/control.sock"
    old = os.umask(0o000)  # the worst umask: the file must still get exactly ``mode``
    try:
        s = ControlServer(ctx, f"ipc://{path}", Recorder(), ipc_mode=mode)
        await s.start()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == mode
        assert os.umask(old) == old, "the process umask is restored"
    finally:
        await s.close()


# -- the daemon's security, from its config ----------------------------------------------------------


def _config(tmp: Path, security: str, control: str = "") -> Path:
    cfg = tmp / "table.toml"
    cfg.write_text(
        f"""
[table]
id = "t1"
game = "baccarat"
state_dir = "{tmp / "state"}"
{control}
[security]
{security}
"""
    )
    return cfg


def test_security_paths_resolve_relative_to_the_config(tmp_path, keys):
    shutil.copytree(keys.root, tmp_path / "conf" / "keys")
    (tmp_path / "conf").chmod(0o755)
    cfg = _config(
        tmp_path / "conf",
        'server_key = "keys/table.key_secret"\nclients = "keys/bus"\n'
        'control_clients = "keys/control"\nroles = { pit1 = "dealer" }\n',
        '[control]\nendpoint = "tcp://127.0.0.1:7799"\n',
    )
    sec = Security.from_settings(load(cfg))
    assert sec.server is not None and sec.server.public == keys.server.public
    assert {k.name for k in sec.bus_clients.values()} == {"sub1"}
    assert sec.control_clients is not None
    assert {k.name: k.role for k in sec.control_clients.values()} == {
        "pit1": "dealer",  # the config's roles table wins over the certificate
        "view1": "viewer",
    }
    assert sec.bus_curve is not None and sec.control_curve is not None
    assert sec.status()["curve"] is True


def test_ipc_control_stays_plain_and_keeps_its_role(tmp_path, keys):
    cfg = _config(
        tmp_path,
        f'server_key = "{keys.server_secret_path}"\nclients = "{keys.bus_dir}"\n',
    )
    sec = Security.from_settings(load(cfg))
    assert sec.bus_curve is not None and sec.control_curve is None


def test_tcp_control_with_curve_needs_control_clients(tmp_path, keys):
    cfg = _config(
        tmp_path,
        f'server_key = "{keys.server_secret_path}"\nclients = "{keys.bus_dir}"\n',
        '[control]\nendpoint = "tcp://127.0.0.1:7799"\n',
    )
    with pytest.raises(SecurityError, match=r"security\.control_clients must list"):
        Security.from_settings(load(cfg))


def test_a_world_writable_config_naming_keys_is_refused(tmp_path, keys):
    cfg = _config(
        tmp_path, f'server_key = "{keys.server_secret_path}"\nclients = "{keys.bus_dir}"\n'
    )
    cfg.chmod(0o666)
    with pytest.raises(SecurityError, match=r"config file .* mode 0666"):
        Security.from_settings(load(cfg))


def test_config_errors_name_the_missing_half(tmp_path, keys):
    from daemon.runtime.config import ConfigError

    cfg = _config(tmp_path, f'server_key = "{keys.server_secret_path}"\n')
    with pytest.raises(ConfigError, match="server_key needs clients"):
        load(cfg)
    cfg = _config(tmp_path, 'clients = "x"\n')
    with pytest.raises(ConfigError, match="need server_key"):
        load(cfg)
    cfg = _config(tmp_path, 'server_kee = "x"\n')
    with pytest.raises(ConfigError, match=r"security\.server_kee: unknown key"):
        load(cfg)


def test_stored_events_are_proven_by_a_later_checkpoint(journal_path, signer):
    from daemon import journal as journal_mod
    from daemon.security import prove_events

    path, j = journal_path
    cp_signer, public = signer
    cp = cp_signer("t1", j.journal_id, j.last_seq, j.last_hash)
    db = journal_mod.connect(path, readonly=True)
    try:
        stored = [raw for _, raw in journal_mod.read_raw(db, 5, None)]
    finally:
        db.close()
    assert prove_events(public, {"data": {"checkpoint": cp}}, stored) is None
    assert prove_events(public, cp, stored[-1:]) is None
    altered = stored[3].replace(b'"n":7', b'"n":8')
    assert altered != stored[3]
    why = prove_events(public, cp, [*stored[:3], altered, *stored[4:]])
    assert why is not None and "event 4" in why
    assert "end at seq 19" in (prove_events(public, cp, stored[:-1]) or "")
    assert "event 2" in (prove_events(public, cp, [stored[0], *stored[2:]]) or "")  # a gap
    other = cp_signer("t2", j.journal_id, j.last_seq, j.last_hash)
    assert "table 't1'" in (prove_events(public, other, stored) or "")
    forged = {**cp, "hash": "00" * 32}
    assert "signature" in (prove_events(public, forged, stored) or "")
