"""A blackjack daemon with one control socket per role, and a raw client for the tests of
issue 28 items 2, 3 and 8 (``tests/test_command_integrity.py``, ``tests/fault_campaign.py``).

The raw client sends any bytes (``1e400`` is not something :class:`ControlClient`
can encode) with the id the test chooses, from a fresh connection when asked: a retry
after a reconnect is what a real game server does.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path
from typing import Any

import msgspec
import zmq
from daemon_harness import fast_copy

from daemon.runtime.config import load

ROLES = ("viewer", "dealer", "supervisor", "technician")


def role_config(name: str, tmp: Path, keys: dict[str, str | None], sim: str) -> Path:
    """``config/<name>`` as ``fast_copy`` makes it, with a socket per role and the main
    socket a viewer's."""
    cfg = fast_copy(name, tmp, keys, sim)
    text = re.sub(r"^roles = .*\n", "", cfg.read_text(), flags=re.M)
    roles = ", ".join(f'{r} = ""' for r in ROLES)
    assert 'role = "supervisor"\n' in text
    cfg.write_text(
        text.replace('role = "supervisor"\n', f'role = "viewer"\nroles = {{ {roles} }}\n')
    )
    return cfg


def blackjack_config(tmp: Path, pace: str = "0.002") -> Path:
    """``config/blackjack.toml`` without its virtual players (the test is the game server)."""
    keys: dict[str, str | None] = {
        "virtual_players": None,
        "settle_seconds": "0.02",
        "decision_seconds": "60.0",
        "insurance_seconds": "60.0",
    }
    return role_config("blackjack.toml", tmp, keys, f"seed = 5\npace = {pace}\nerror_every = 0")


#: each game's demo config, made fast and busy: (file, keys, simulator)
GAME_CONFIGS: dict[str, tuple[str, dict[str, str | None], str]] = {
    "baccarat": (
        "demo.toml",
        {"betting_seconds": "0.15", "settle_seconds": "0.02"},
        "seed = 3\npace = 0.003\nerror_every = 4",
    ),
    "dragon-tiger": (
        "dragon-tiger.toml",
        {"betting_seconds": "0.15", "settle_seconds": "0.02"},
        "seed = 3\npace = 0.003\nerror_every = 4",
    ),
    "blackjack": (
        "blackjack.toml",
        {"settle_seconds": "0.05", "decision_seconds": "0.4", "insurance_seconds": "0.3"},
        "seed = 3\npace = 0.003\nerror_every = 3",
    ),
    "paigow": (
        "paigow.toml",
        {"betting_seconds": "0.15", "settle_seconds": "0.02"},
        "seed = 3\npace = 0.01\nerror_every = 4",
    ),
    "sicbo": (
        "sicbo.toml",
        {"betting_seconds": "0.15", "settle_seconds": "0.02"},
        "seed = 3\npace = 0.05\nerror_every = 4",
    ),
    "roulette": ("roulette.toml", {}, "seed = 3\nperiod = 0.05\nfault_every = 4"),
}


def game_config(game: str, tmp: Path) -> Path:
    name, keys, sim = GAME_CONFIGS[game]
    return role_config(name, tmp, keys, sim)


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """An arbitrary JSON value: nulls, nesting, huge and odd numbers, long and unicode text."""
    k = rng.randrange(12 if depth < 3 else 8)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.choice([0, 1, -1, 7, 2**63 - 1, 2**63, -(2**64), 10**30, 3])
    if k == 3:
        return rng.choice([0.5, 1e308, -1e-308, 2.0, 1.0000001, -0.0])
    if k == 4:
        return rng.choice(["", " ", "1", "1,3,5", "KD", "9D", "yes", "no", "all", "A1", "2p"])
    if k == 5:
        return rng.choice(["x" * rng.choice([100, 600, 1100, 5000]), "\u0000\u202e", "🂡" * 3])
    if k == 6:
        return "".join(chr(rng.randrange(0x20, 0x2FFF)) for _ in range(rng.randrange(1, 12)))
    if k == 7:
        return str(rng.randrange(-3, 12))
    if k in (8, 9):
        return [json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        rng.choice(["box", "a", "card", "", "💥"]): json_value(rng, depth + 1)
        for _ in range(rng.randrange(3))
    }


#: a value each argument might well have, so that some fuzzed commands are committed
PLAUSIBLE: dict[str, list[Any]] = {
    "box": ["1", "2", "3", 4, "7"],
    "boxes": ["1,3", "2", [1, 2, 3], "1,2,3,4,5,6,7"],
    "card": ["KD", "9D", "AS", "2C"],
    "take": ["yes", "no"],
    "turn": ["1", "2", "3", 4],
    "reason": ["fuzz", "misread"],
    "id": ["all", "A1", "A2"],
    "die1": [1, 3, 6],
    "die2": [2, 4],
    "die3": [5, 6],
    "tile": ["9p", "wd", "1p"],
    "device": ["shoe", "wheel", "dice", "tiles"],
    "command": ["status", "version"],
    "player": ["p1"],
}


def fuzz_args(rng: random.Random, names: list[str]) -> dict[str, Any]:
    """Arguments for a command that takes ``names``: mostly those, now and then another;
    half the values plausible, half arbitrary JSON."""
    keys = [n for n in names if rng.random() < 0.8]
    if rng.random() < 0.15:
        keys.append(rng.choice(["x", "player", "boxes", "reason", "id", "", "die1"]))
    return {
        k: rng.choice(PLAUSIBLE[k]) if k in PLAUSIBLE and rng.random() < 0.5 else json_value(rng)
        for k in keys
    }


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


def open_betting(dealer: Raw, viewer: Raw, timeout: float = 20.0) -> None:
    """A new shoe, its burn done (betting opened before it voids the hand: seed 002), then
    betting open."""
    until_ok(dealer, cmd("shoe.new"))
    deadline = time.monotonic() + timeout
    while phase(viewer) in ("no-shoe", "burning"):
        assert time.monotonic() < deadline, "the shoe never burnt its card"
        time.sleep(0.02)
    until_ok(dealer, cmd("betting.open"))
    assert phase(viewer) == "betting"


def phase(viewer: Raw) -> str:
    r = viewer.call(cmd("status"))
    assert r["ok"], r
    return str(r["result"]["state"].get("phase"))
