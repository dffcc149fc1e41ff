"""CURVE revocation without a restart (docs/security.md, "Revoking a client").

Real CURVE sockets on loopback: the daemon's Bus and ControlServer behind a
real Authenticator, whose allow-lists follow their key directories through
inotify (:class:`daemon.security.revoke.Revocation`). Each client watches its
own socket monitor, so the test waits for what libzmq did (the connection
cut, the next handshake refused) instead of for the clock; LIMIT only guards
against a hang.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import test_security
import zmq
import zmq.asyncio
from daemon_harness import Daemon, free_port, tablectl, write_config
from test_security import LIMIT, TCP, TIME, Keys, _call, _echo, _sub, server_curve
from zmq.utils.monitor import parse_monitor_message

from daemon.bus.bus import Bus
from daemon.bus.control import ControlServer
from daemon.ctl.control_client import ControlClient, DaemonUnreachable
from daemon.ctl.keys import create_curve
from daemon.security import BUS_DOMAIN, CONTROL_DOMAIN, Authenticator, ClientCurve, read_cert
from daemon.security.revoke import KeySource, Revocation

# test_security's fixtures, used here as they are (``keys`` is this module's: it adds sub2)
ctx = test_security.ctx
auth = test_security.auth
journal_path = test_security.journal_path
curve_bus = test_security.curve_bus

CLIENT_EVENTS = (
    zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    k = Keys(tmp_path / "keys")
    public, secret = create_curve(k.private, "sub2")
    shutil.copy(public, k.bus_dir / public.name)
    cert = read_cert(secret)
    assert cert.secret is not None
    k.sub2 = ClientCurve(cert.public, cert.secret, k.server.public)  # type: ignore[attr-defined]
    return k


@pytest.fixture
async def rev(auth: Authenticator, keys: Keys) -> AsyncIterator[Revocation]:
    """test_security's authenticator, its allow-lists following their key directories."""
    rev = Revocation(
        auth,
        {
            BUS_DOMAIN: KeySource(keys.bus_dir),
            CONTROL_DOMAIN: KeySource(keys.control_dir, need_role=True),
        },
    )
    rev.start()
    yield rev
    rev.close()


async def _until_event(mon: zmq.asyncio.Socket, wanted: int) -> None:
    """The client's next monitor event of kind ``wanted`` (others are skipped)."""

    async def wait() -> None:
        while parse_monitor_message(await mon.recv_multipart())["event"] != wanted:
            pass

    await asyncio.wait_for(wait(), LIMIT)


async def _hear(bus: Bus, sub: zmq.asyncio.Socket, mark: int) -> None:
    """Publish heartbeats marked ``mark`` until ``sub`` receives one (the slow joiner)."""

    async def until_heard() -> None:
        while True:
            bus.heartbeat({"last_seq": mark}, TIME, 0.0)
            if await sub.poll(20, zmq.POLLIN):
                while await sub.poll(0, zmq.POLLIN):
                    frames = await sub.recv_multipart()
                    if json.loads(frames[-1])["data"]["last_seq"] == mark:
                        return

    await asyncio.wait_for(until_heard(), LIMIT)


async def _drain(sub: zmq.asyncio.Socket) -> list[int]:
    marks = []
    while await sub.poll(0, zmq.POLLIN):
        marks.append(json.loads((await sub.recv_multipart())[-1])["data"]["last_seq"])
    return marks


async def test_a_removed_key_is_cut_off_and_refused_while_the_others_go_on(
    ctx, keys, auth, rev, curve_bus
):
    bus = curve_bus
    revoked = _sub(ctx, bus.publish_endpoint, keys.sub1)
    kept = _sub(ctx, bus.publish_endpoint, keys.sub2)  # type: ignore[attr-defined]
    r_mon = revoked.get_monitor_socket(CLIENT_EVENTS)
    k_mon = kept.get_monitor_socket(CLIENT_EVENTS)
    later = None
    try:
        await _hear(bus, revoked, 1)
        await _hear(bus, kept, 1)

        (keys.bus_dir / "sub1.key").unlink()  # the technician's whole act: no restart

        # the revoked client's connection is cut, and its reconnect is refused by ZAP
        await _until_event(r_mon, zmq.EVENT_DISCONNECTED)
        await _until_event(r_mon, zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        # the other subscriber was cut too (no connection can be tied to its key) and is back
        await _until_event(k_mon, zmq.EVENT_DISCONNECTED)
        await _until_event(k_mon, zmq.EVENT_HANDSHAKE_SUCCEEDED)
        await _hear(bus, kept, 2)
        assert 2 not in await _drain(revoked), "a revoked key received what came after"

        # a new connection with the revoked key is refused too
        later = _sub(ctx, bus.publish_endpoint, keys.sub1)
        l_mon = later.get_monitor_socket(CLIENT_EVENTS)
        await _until_event(l_mon, zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        await _hear(bus, kept, 3)
        assert 3 not in await _drain(later) + await _drain(revoked)

        assert rev.counters["revoked"] == 1
        assert rev.counters["connections_cut"] >= 2
        assert list(c.name for c in auth.domains[BUS_DOMAIN].values()) == ["sub2"]

        # putting the key back admits it again, still without a restart: libzmq does not
        # retry a handshake ZAP refused, so the client connects anew
        shutil.copy(keys.private / "sub1.key", keys.bus_dir / "sub1.key")
        await asyncio.wait_for(rev.next_reload(), LIMIT)
        assert auth.counters["zap.denied"] == 2, "a refused client does not hammer"
        again = _sub(ctx, bus.publish_endpoint, keys.sub1)
        await _hear(bus, again, 4)
        again.close(linger=0)
    finally:
        for s in (revoked, kept, later):
            if s is not None:
                s.disable_monitor()
                s.close(linger=0)


async def test_a_revoked_control_key_loses_its_connection_and_the_others_do_not(
    ctx, keys, auth, rev
):
    server = ControlServer(ctx, TCP, _echo, curve=server_curve(keys, auth, CONTROL_DOMAIN))
    await server.start()
    endpoint = server._sock.getsockopt_string(zmq.LAST_ENDPOINT)
    pit = ControlClient(endpoint, timeout=1.0, curve=keys.pit1)  # 1 s: the refusals' wait
    try:
        answer: dict = {}
        for _ in range(20):  # the first handshake may take over 1 s on a loaded machine: again
            try:
                answer = await asyncio.to_thread(pit.call, "echo")
                break
            except DaemonUnreachable:
                continue
        assert answer.get("role") == "supervisor", "the admitted key was never answered"
        reloaded = rev.next_reload()
        (keys.control_dir / "pit1.key").unlink()
        assert await asyncio.wait_for(reloaded, LIMIT) == CONTROL_DOMAIN
        with pytest.raises(DaemonUnreachable, match="no answer"):  # the same client, connected
            await asyncio.to_thread(pit.call, "echo")
        assert (await _call(endpoint, "echo", curve=keys.view1))["role"] == "viewer"
        with pytest.raises(DaemonUnreachable, match="no answer"):  # and a new connection
            await _call(endpoint, "echo", curve=keys.pit1, timeout=1.0)
    finally:
        pit.close()
        await server.close()


async def test_a_half_copied_key_is_skipped_and_an_unusable_directory_admits_no_one(
    keys, auth, rev
):

    async def change(act) -> None:
        reloaded = rev.next_reload()
        act()
        await asyncio.wait_for(reloaded, LIMIT)

    names = lambda: sorted(c.name for c in auth.domains[BUS_DOMAIN].values())  # noqa: E731
    await change(lambda: (keys.bus_dir / "new.key").write_text('curve\n    public-key = "x"\n'))
    assert names() == ["sub1", "sub2"], "a bad file admits no one and removes no one"
    await change(lambda: keys.bus_dir.chmod(0o777))  # anyone could let themselves in now
    assert names() == [], "fail closed"
    assert rev.counters["revoked"] == 2 and rev.counters["connections_cut"] == 0, "none connected"
    await change(lambda: keys.bus_dir.chmod(0o755))
    assert names() == ["sub1", "sub2"]


# -- the daemon, as installed ----------------------------------------------------------------------


def test_the_daemon_stops_answering_a_key_removed_from_control_clients(tmp_path):
    """``tablectl`` with a removed key is refused by the running daemon; another key still works."""
    from test_security_daemon import TableKeys

    keys = TableKeys(tmp_path / "keys")
    cfg = write_config(tmp_path, extra=keys.config(free_port()))
    d = Daemon(cfg)
    try:
        d.start()
        assert tablectl(cfg, "--key", str(keys.pit1), "status").returncode in (0, 1)
        (keys.root / "control" / "pit1.key").unlink()
        r = tablectl(cfg, "--key", str(keys.pit1), "--timeout", "2", "status")
        assert r.returncode not in (0, 1) and "no answer" in r.stderr, r.stderr
        st = tablectl(cfg, "--key", str(keys.view1), "--json", "status")
        assert st.returncode in (0, 1), st.stderr
        counters = json.loads(st.stdout)["security"]["counters"]
        assert counters["keys.revoked"] == 1
        assert "client keys revoked" in d.log.read_text()
        assert d.stop() == 0
    finally:
        d.close()


async def test_a_key_directory_replaced_whole_is_watched_again(keys, auth, rev):
    """Deploy tools replace a directory (rename, symlink swap): the new one is read and watched."""
    import os

    async def change(act) -> None:
        reloaded = rev.next_reload()
        act()
        await asyncio.wait_for(reloaded, LIMIT)

    names = lambda: sorted(c.name for c in auth.domains[BUS_DOMAIN].values())  # noqa: E731
    old = keys.bus_dir.with_name("bus.old")
    await change(lambda: keys.bus_dir.rename(old))  # gone: no one is admitted
    assert names() == []
    v2 = keys.root / "bus.v2"
    v2.mkdir()
    shutil.copy(old / "sub2.key", v2 / "sub2.key")
    await change(lambda: os.symlink(v2, keys.bus_dir))  # back, as a symlink to a new one
    assert names() == ["sub2"]
    await change(lambda: (v2 / "sub2.key").unlink())  # and the new one is watched
    assert names() == []
    v3 = keys.root / "bus.v3"
    v3.mkdir()
    shutil.copy(old / "sub1.key", v3 / "sub1.key")
    tmp = keys.root / "bus.tmp"
    os.symlink(v3, tmp)
    await change(lambda: tmp.replace(keys.bus_dir))  # the atomic symlink swap
    assert names() == ["sub1"]
    await change(lambda: shutil.copy(old / "sub2.key", v3 / "sub2.key"))
    assert names() == ["sub1", "sub2"]
