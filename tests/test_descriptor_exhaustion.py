"""Nothing that arrives on a network port, however many, stops the table (issue 28, item 7).

A real daemon whose descriptor limit is lowered (to 512: cheap to reach) gets idle TCP
connections, no key and no handshake, on every network port (publish, replay, metrics)
up to that limit, each. Before the connection caps a few hundred of them took every
descriptor and the next ``tablectl status`` made libzmq abort the process ("Too many open
files (src/ipc_listener.cpp:297)", exit 134). Now the table keeps publishing new events
to a subscriber that was there before the flood, and its control socket keeps answering.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import zmq
from daemon_harness import Daemon, Subscriber, endpoints, free_port, tablectl, write_config

from daemon.bus.fd_budget import RESERVE, BudgetError, caps

#: the daemon's RLIMIT_NOFILE, soft and hard, in these tests
LIMIT = 512
#: stops and starts in a row: make test's, and make campaign's (the same test, more chances)
ROUNDS, CAMPAIGN_ROUNDS = 3, 20

#: runs the daemon as ``tabled`` does, under a lowered descriptor limit
_LIMITED = (
    "import resource, runpy, sys; "
    "n = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "sys.argv[0] = 'tabled'; "
    "runpy.run_module('daemon.runtime.app', run_name='__main__')"
)


def limited(d: Daemon, limit: int = LIMIT) -> Daemon:
    d.command = [sys.executable, "-c", _LIMITED, str(limit)]
    return d


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def open_idle(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that never say anything (non-blocking: a refused SYN does not wait)."""
    out = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        assert rc in (0, errno.EINPROGRESS), os.strerror(rc)
        out.append(s)
    return out


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _seq_after(sub: Subscriber, seq: int, timeout: float) -> int:
    last = seq
    for _topic, ev in sub.until(lambda m: m[1].get("seq", 0) > seq, timeout):
        last = max(last, int(ev.get("seq", 0)))
    return last


def test_idle_connections_up_to_the_hard_limit_on_every_port_stop_nothing(tmp_path: Path):
    flood_every_port(tmp_path, [])


def test_the_caps_hold_under_the_units_system_call_filter(tmp_path: Path):
    """The same flood with the daemon under the shipped unit's system call filter: the socket
    filter that closes a listener at its cap (setsockopt SO_ATTACH_FILTER) is allowed there."""
    from unit_seccomp import available

    why = available()
    if why is not None:
        pytest.skip(why)
    unit = Path(__file__).resolve().parents[1] / "systemd" / "tabled@.service"
    flood_every_port(tmp_path, [str(Path(__file__).parent / "unit_seccomp.py"), str(unit), "--"])


def test_the_budget_leaves_the_reserve_and_refuses_a_limit_too_small():
    wanted = {"publish": 1000, "replay": 1000, "metrics": 8}
    backlog = {"publish": 32, "replay": 32}
    assert caps(65536, 80, wanted, backlog) == wanted
    small = caps(1024, 80, wanted, backlog)
    assert small == {"publish": 208, "replay": 208, "metrics": 8}
    assert sum(small.values()) + sum(backlog.values()) + 80 + RESERVE <= 1024
    with pytest.raises(BudgetError, match=r"limit 400 leaves .* raise LimitNOFILE"):
        caps(400, 80, wanted, backlog)


def flood_every_port(tmp_path: Path, wrapper: list[str]) -> None:
    metrics = free_port()
    cfg = write_config(tmp_path, extra=f"\n[metrics]\nport = {metrics}\n")
    pub, rep = endpoints(cfg)
    d = limited(Daemon(cfg))
    if wrapper:
        d.command = [sys.executable, *wrapper, *d.command]
    sub = Subscriber(pub, b"it.")
    flood: list[socket.socket] = []
    try:
        d.start()
        assert d.proc is not None
        seq = _seq_after(sub, 0, 15)  # the subscriber is in, events flow
        for port in (_port(pub), _port(rep), metrics):
            flood += open_idle(port, LIMIT)
        # every connection the kernel completed is accepted or refused by now
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and d.proc.poll() is None:
            r = tablectl(cfg, "status", "--json", timeout=20)
            assert r.returncode == 0, (r.returncode, r.stderr, d.log.read_text()[-3000:])
            assert json.loads(r.stdout)["table"] == "it"
            seq = _seq_after(sub, seq, 10)  # new events still reach the old subscriber
            assert descriptors(d.proc.pid) < LIMIT
        assert d.proc.poll() is None, d.log.read_text()[-3000:]
        held = descriptors(d.proc.pid)
        assert held < LIMIT - 100, f"{held} descriptors held: no reserve left"
    finally:
        for s in flood:
            s.close()
        sub.close()
        rc = d.stop() if d.proc is not None and d.proc.poll() is None else None
        d.close()
    assert rc == 0, d.log.read_text()[-3000:]


def test_a_restart_right_after_a_clean_stop_binds_every_port_again(tmp_path: Path):
    restarts_bind_every_port_again(tmp_path, ROUNDS)


@pytest.mark.campaign
def test_twenty_restarts_right_after_a_clean_stop_bind_every_port_again(tmp_path: Path):
    restarts_bind_every_port_again(tmp_path, CAMPAIGN_ROUNDS)


def restarts_bind_every_port_again(tmp_path: Path, rounds: int) -> None:
    """Stop, start at once, ``rounds`` times, with a subscriber, a replay client and a metrics
    scraper connected throughout (each reconnects on its own, as real ones do): every start
    binds publish, replay, metrics and control again; none says "address in use"."""
    metrics = free_port()
    cfg = write_config(tmp_path, extra=f"\n[metrics]\nport = {metrics}\n")
    pub, rep = endpoints(cfg)
    d = Daemon(cfg)
    sub = Subscriber(pub, b"it.")
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(rep)
    try:
        seq = 0
        for _ in range(rounds):
            d.start()
            seq = _seq_after(sub, seq, 15)
            dealer.send(json.dumps({"from": 1, "to": 1}).encode())
            assert dealer.poll(10_000), "no replay answer"
            while dealer.poll(0):
                dealer.recv()
            scrape = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10)
            assert b"tabled_journal_last_seq" in scrape.read()
            # one left open across the stop, as a scraper's keep-alive would be
            held = socket.create_connection(("127.0.0.1", metrics))
            assert d.stop() == 0, d.log.read_text()[-3000:]
            held.close()
    finally:
        dealer.close()
        ctx.term()
        sub.close()
        d.close()
    assert "in use" not in d.log.read_text()


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_idle_metrics_connections_cost_no_thread_and_a_bounded_number_of_descriptors(
    tmp_path: Path,
):
    """prometheus_client's server started a thread per connection (150 idle connections, 150
    threads); the endpoint is served on the loop now, at most 8 connections at a time."""
    metrics = free_port()
    cfg = write_config(tmp_path, extra=f"\n[metrics]\nport = {metrics}\n")
    d = Daemon(cfg)
    idle: list[socket.socket] = []
    try:
        d.start()
        assert d.proc is not None
        url = f"http://127.0.0.1:{metrics}/metrics"
        assert b"tabled_journal_last_seq" in urllib.request.urlopen(url, timeout=10).read()
        base_threads, base_fds = threads(d.proc.pid), descriptors(d.proc.pid)
        idle = open_idle(metrics, 150)
        time.sleep(0.5)  # the test waits for the daemon to take what it will (not the daemon)
        assert threads(d.proc.pid) <= base_threads + 1  # the loop's executor may start one
        assert descriptors(d.proc.pid) <= base_fds + 8 + 4
        for s in idle:  # they leave: the places free up at once
            s.close()
        idle = []
        assert b"tabled_journal_last_seq" in urllib.request.urlopen(url, timeout=10).read()
        assert urllib.request.urlopen(url.replace("/metrics", "/"), timeout=10).status == 200
        try:
            urllib.request.urlopen(url.replace("/metrics", "/nothing"), timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 404
        else:
            raise AssertionError("/nothing was served")
    finally:
        for s in idle:
            s.close()
        rc = d.stop() if d.proc is not None and d.proc.poll() is None else None
        d.close()
    assert rc == 0, d.log.read_text()[-3000:]


def _status(cfg: Path, key: Path) -> dict:
    r = tablectl(cfg, "--key", str(key), "--json", "status", timeout=20)
    assert r.returncode in (0, 1), (r.returncode, r.stderr)
    return json.loads(r.stdout)


def test_with_curve_every_listener_is_capped_and_the_handshakes_are_still_counted(
    tmp_path: Path,
):
    """CURVE on publish, replay and a tcp control socket: four network listeners flooded up to
    the limit each. A listed subscriber that was in keeps getting signed heartbeats; once the
    flood leaves, tablectl over tcp answers at once; and the handshake counters (the caps'
    monitor took the socket's one monitor over from the authenticator) still count."""
    from test_security_daemon import TableKeys

    from daemon.bus.subscriber import Follower

    keys = TableKeys(tmp_path / "keys")
    control, metrics = free_port(), free_port()
    cfg = write_config(tmp_path, extra=keys.config(control) + f"\n[metrics]\nport = {metrics}\n")
    pub, rep = endpoints(cfg)
    d = limited(Daemon(cfg), 2 * LIMIT)  # four listeners: room for more than the least cap
    f = Follower(pub, rep, table="it", curve=keys.curve(keys.sub1), ctx=zmq.Context())
    plain = Subscriber(pub)  # no CURVE: a failed handshake, counted
    flood: list[socket.socket] = []
    try:
        d.start()
        f.until(lambda e: e.type == "card.dealt", 15)
        for port in (_port(pub), _port(rep), control, metrics):
            flood += open_idle(port, 2 * LIMIT)
        assert d.proc is not None
        for _ in range(3):  # a heartbeat every 0.2 s, each after the flood came
            f.until(lambda e: e.type == "card.dealt", 10)
            # a replay is a new connection each time: it gets in past the idle flood
            assert [e.seq for e in f._replay(1, 3, 10.0)] == [1, 2, 3]
            assert descriptors(d.proc.pid) < 2 * LIMIT - 200
        # the kernel lets a flood in a backlog (32) at a time and retries the SYNs it dropped a
        # second later, so how far past its cap a listener got by now depends on the machine's
        # load (CI once saw every listener below its cap here): more idle peers on the control
        # port until a status over it shows a listener that made room (each asked once)
        for _ in range(20):
            st = _status(cfg, keys.pit1)
            if any(c["evicted"] + c["cut"] >= 1 for c in st["connections"].values()):
                break
            flood += open_idle(control, LIMIT // 4)
        conns = st["connections"]  # some listener made room past its cap
        assert any(c["evicted"] + c["cut"] >= 1 for c in conns.values()), conns
        for s in flood:
            s.close()
        flood = []
        for _ in range(20):  # a handshake is counted as its event reaches the loop: soon after
            st = _status(cfg, keys.pit1)
            counters = st["security"]["counters"]
            if (
                counters["control.handshakes"] >= 1
                and counters["publish.handshakes"] >= 1
                and counters["publish.failed_protocol"] + counters["publish.failed_other"] >= 1
            ):
                break
        assert counters["publish.handshakes"] >= 1 and counters["control.handshakes"] >= 1
        assert counters["publish.failed_protocol"] + counters["publish.failed_other"] >= 1
        assert set(st["connections"]) == {"publish", "replay", "control"}
    finally:
        for s in flood:
            s.close()
        plain.close()
        f.close()
        f.ctx.term()
        rc = d.stop() if d.proc is not None and d.proc.poll() is None else None
        d.close()
    assert rc == 0, d.log.read_text()[-3000:]


def test_a_scrape_flood_costs_the_loop_a_bounded_share():
    """Scrapes as fast as a client can ask, and connections opened and closed as fast: the
    exposition is rendered at most once per RENDER_EVERY, and at most ACCEPT_RATE connections
    are taken a second (the rest wait in the kernel), so the loop's share stays small."""
    import asyncio

    from daemon.bus import metrics_http
    from daemon.bus.metrics_http import MetricsServer

    async def main() -> tuple[dict[str, int], float]:
        server = MetricsServer(lambda: b"tabled_up 1\n", "text/plain", cap=8)
        port = server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        t0 = loop.time()

        def scrape() -> bytes:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                out = b""
                while chunk := s.recv(4096):
                    out += chunk
                return out

        for _ in range(40):
            assert (await asyncio.to_thread(scrape)).endswith(b"tabled_up 1\n")
        # a churn: connections opened and closed at once, far more than the rate
        churn = open_idle(port, 120)
        await asyncio.sleep(0.1)
        for s in churn:
            s.close()
        await asyncio.sleep(0.5)
        took = loop.time() - t0
        server.close()
        return server.counters, took

    counters, took = asyncio.run(main())
    assert counters["scrapes"] == 40
    assert counters["renders"] <= took / metrics_http.RENDER_EVERY + 1, (counters, took)
    assert counters["accepted"] <= metrics_http.ACCEPT_RATE * (int(took) + 1) + 8, counters


def test_a_port_taken_by_an_outgoing_connection_is_named_at_the_restart(tmp_path: Path):
    """Why a restart after a clean stop can say "address in use": while the daemon is
    stopped, any outgoing connection on the host may be given its port as its own (ports in
    the kernel's ephemeral range, as tests' free ports are). The start says so, and what to do,
    instead of asking whether another tabled runs."""
    cfg = write_config(tmp_path)
    with socket.socket() as s:  # a port from the kernel's ephemeral range, as port 0 gives
        s.bind(("127.0.0.1", 0))
        ephemeral = s.getsockname()[1]
    pub, _rep = endpoints(cfg)
    cfg.write_text(cfg.read_text().replace(pub, f"tcp://127.0.0.1:{ephemeral}"))
    pub, _rep = endpoints(cfg)
    d = Daemon(cfg)
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen()
    taker = socket.socket()
    try:
        d.start()
        assert d.stop() == 0
        # what the kernel does for an outgoing connection: its own port is the daemon's
        taker.bind(("127.0.0.1", _port(pub)))
        taker.connect(other.getsockname())
        with pytest.raises(AssertionError):
            d.start()  # its exit ends the wait
        assert d.proc is not None and d.proc.wait(10) == 1
        out = d.log.read_text()
        assert f"no one listens on port {_port(pub)}, but a connection uses it" in out, out[-2000:]
        assert "choose a port below it" in out, out[-2000:]
    finally:
        taker.close()
        other.close()
        d.close()


def test_the_socket_filter_closes_a_listener_and_opens_it_again():
    """What the caps put on a listening socket at its cap: no connection completes while it is
    on (the SYN is dropped: the client's connect times out), and every one does once it goes;
    a connection made before is not touched."""
    from daemon.bus.connections import _DROP_PROG, _SO_ATTACH_FILTER, _SO_DETACH_FILTER

    with socket.socket() as lst:
        lst.bind(("127.0.0.1", 0))
        lst.listen()
        before = socket.create_connection(lst.getsockname(), timeout=1)
        lst.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, _DROP_PROG)
        with pytest.raises(TimeoutError):
            socket.create_connection(lst.getsockname(), timeout=0.3)
        conn, _ = lst.accept()
        before.sendall(b"still here")
        assert conn.recv(100) == b"still here"
        lst.setsockopt(socket.SOL_SOCKET, _SO_DETACH_FILTER, 0)
        socket.create_connection(lst.getsockname(), timeout=1).close()
        before.close()
        conn.close()


def test_a_local_flood_of_the_ipc_control_socket_stops_nothing(tmp_path: Path):
    """Not a network port, but the same abort: idle connections to the ipc control socket up to
    the limit (a local user who may open it) took every descriptor, and libzmq's ipc listener
    aborts the process at EMFILE. Capped too: tablectl gets in past the idle ones (the oldest
    still in its handshake makes room) and the table keeps publishing."""
    import socket as so

    from daemon.runtime.config import load

    cfg = write_config(tmp_path)
    pub, _rep = endpoints(cfg)
    path = load(str(cfg)).control_endpoint[len("ipc://") :]
    d = limited(Daemon(cfg))
    sub = Subscriber(pub, b"it.")
    flood: list[so.socket] = []
    try:
        d.start()
        assert d.proc is not None
        seq = _seq_after(sub, 0, 15)
        deadline = time.monotonic() + 3
        while len(flood) < LIMIT and time.monotonic() < deadline:
            s = so.socket(so.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:  # the backlog is full: again, as a flood would
                s.close()
                continue
            flood.append(s)
        for _ in range(3):
            r = tablectl(cfg, "status", "--json", timeout=20)
            assert r.returncode == 0, (r.returncode, r.stderr, d.log.read_text()[-3000:])
            seq = _seq_after(sub, seq, 10)
            assert descriptors(d.proc.pid) < LIMIT - 100
        assert json.loads(r.stdout)["connections"]["control"]["cap"] >= 8
    finally:
        for s in flood:
            s.close()
        sub.close()
        rc = d.stop() if d.proc is not None and d.proc.poll() is None else None
        d.close()
    assert rc == 0, d.log.read_text()[-3000:]
