"""A blackjack daemon with one control socket per role, and a raw client for the tests of
issue 28 items 2, 3 and 8 (``tests/test_command_integrity.py``, ``tests/fault_campaign.py``).

The raw client sends any bytes (``1e400`` is not something :class:`ControlClient`
can encode) with the id the test chooses, from a fresh connection when asked: a retry
after a reconnect is what a real game server does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec
import zmq
from daemon_harness import fast_copy

from daemon.config import load

ROLES = ("viewer", "dealer", "supervisor", "technician")


def blackjack_config(tmp: Path, pace: str = "0.002") -> Path:
    """``config/blackjack.toml`` without its virtual players (the test is the game server),
    a socket per role, the main socket a viewer's."""
    cfg = fast_copy(
        "blackjack.toml",
        tmp,
        {
            "virtual_players": None,
            "settle_seconds": "0.02",
            "decision_seconds": "60.0",
            "insurance_seconds": "60.0",
        },
        f"seed = 5\npace = {pace}\nerror_every = 0",
    )
    text = cfg.read_text()
    roles = ", ".join(f'{r} = ""' for r in ROLES)
    assert 'role = "supervisor"\n' in text
    cfg.write_text(
        text.replace('role = "supervisor"\n', f'role = "viewer"\nroles = {{ {roles} }}\n')
    )
    return cfg


def role_endpoints(cfg: Path) -> dict[str, str]:
    return dict(load(cfg).role_endpoints)


class Raw:
    """One DEALER on a control endpoint: a request as bytes or an object, its reply."""

    def __init__(self, endpoint: str, timeout: float = 5.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.ctx = zmq.Context()
        self.sock: zmq.Socket | None = None

    def _socket(self) -> zmq.Socket:
        if self.sock is None:
            self.sock = self.ctx.socket(zmq.DEALER)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.connect(self.endpoint)
        return self.sock

    def reconnect(self) -> None:
        if self.sock is not None:
            self.sock.close(linger=0)
            self.sock = None

    def send(self, req: dict[str, Any] | bytes) -> None:
        self._socket().send(req if isinstance(req, bytes) else msgspec.json.encode(req))

    def recv(self) -> dict[str, Any]:
        sock = self._socket()
        if not sock.poll(self.timeout * 1000):
            raise TimeoutError(f"no reply from {self.endpoint} within {self.timeout} s")
        reply = msgspec.json.decode(sock.recv())
        assert isinstance(reply, dict)
        return reply

    def call(self, req: dict[str, Any] | bytes) -> dict[str, Any]:
        self.send(req)
        return self.recv()

    def close(self) -> None:
        self.reconnect()
        self.ctx.term()


def cmd(name: str, req_id: str | int | None = None, **args: Any) -> dict[str, Any]:
    req: dict[str, Any] = {"cmd": name, "args": args}
    if req_id is not None:
        req["id"] = req_id
    return req


def until_ok(client: Raw, req: dict[str, Any], timeout: float = 20.0) -> dict[str, Any]:
    """``req`` sent until it is accepted (the table gets there by itself: a burn, a deal)."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.call(req)
        if r["ok"]:
            return r
        if time.monotonic() > deadline:
            raise AssertionError(f"{req['cmd']} never accepted: {r['error']}")
        time.sleep(0.02)


def phase(viewer: Raw) -> str:
    r = viewer.call(cmd("status"))
    assert r["ok"], r
    return str(r["result"]["state"].get("phase"))
