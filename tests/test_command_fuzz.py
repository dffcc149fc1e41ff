"""Issue 28's fuzz test for item 2: every command of every game, from every role, with
arbitrary JSON arguments (nulls, nesting, huge numbers, NaN, long strings, unicode).

Two levels. On the table: at states along every capture, every command's decide takes
any arguments without raising (a raise would be a refusal with a ``decide-failed`` alarm,
never a stop, but it would still be a bug). On a running daemon of each game, through
its role sockets: it keeps running, every reply is a commit with its seq or a refusal
with its reason, and after a SIGKILL in the middle of a burst every command it answered
as committed is in the journal, at the seq it said. ``make campaign`` runs the long
variant (more requests, several kills, each game).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from command_harness import ROLES, Raw, fuzz_args, game_config, role_endpoints
from daemon_harness import Daemon

from daemon import games
from daemon.journal import Journal, read_events
from daemon.pipeline.capture import load as load_capture
from daemon.pipeline.replay import Replayer
from daemon.runtime.app import DAEMON_COMMANDS
from daemon.runtime.config import load
from daemon.table import Command, Input, Table

ROOT = Path(__file__).resolve().parents[1]
GAMES = games.games()
CAPTURES = sorted((ROOT / "tests" / "captures").glob("*/*.log"))
#: bytes a JSON encoder would not make: each must get a refusal, not a stop
RAW = [
    b'{"cmd":"betting.close","id":"r1","args":{"boxes":[NaN]}}',
    b'{"cmd":"betting.close","id":"r2","args":{"boxes":[1e400]}}',
    b'{"cmd":"box.hit","id":"r3","args":{"box":' + b"[" * 200 + b"]" * 200 + b"}}",
    b'{"cmd":"shoe.new","id":"r4","args":{"x":"\\ud800"}}',
    b'{"cmd":"betting.open","id":"r5","args":{"reason":Infinity}}',
]


class _Fuzz(Replayer):
    """A capture's replay that, at about ``states`` states, tries every command with random
    arguments from a role that may send it: decide must not raise."""

    every = 1
    tries = 4
    rng = random.Random(0)
    probed = 0

    def _decide(self, inp: Input, when: float) -> None:
        self.seen = getattr(self, "seen", 0) + 1
        if self.seen % self.every == 0:
            self.probe()
        super()._decide(inp, when)

    def probe(self) -> None:
        for name, sp in self.table.all_commands.items():
            names = [a.name for a in (*sp.args, *sp.more)]
            for _ in range(self.tries):
                args = fuzz_args(self.rng, names)
                role = self.rng.choice(sorted(sp.roles))
                self.table.decide(self.state, Command(name, args, "fuzz", role))
                self.probed += 1


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_decide_takes_any_arguments_at_states_of_every_capture(path):
    cap = load_capture(path)
    r = _Fuzz.for_capture(cap)
    r.__class__ = _Fuzz
    r.rng = random.Random(path.name)
    r.every = max(1, len(cap.lines) // 60)
    r.feed(cap)
    r.probe()
    assert r.probed > 0


def _commands(game: str) -> list[tuple[str, list[str], list[str]]]:
    """Each command of ``game``: its name, its arguments' names, the roles it allows."""
    cls = GAMES[game]
    specs = {**DAEMON_COMMANDS, **Table.commands, **cls.commands}
    return [
        (n, [a.name for a in (*sp.args, *sp.more)], sorted(sp.roles)) for n, sp in specs.items()
    ]


def fuzz_daemon(tmp: Path, game: str, requests: int, kills: int, seed: int) -> dict[str, int]:
    """``requests`` random commands per run against ``game``'s daemon, ``kills`` runs each
    ended by a SIGKILL in a burst; every answer checked, every commit found in the journal."""
    cfg = game_config(game, tmp)
    eps = role_endpoints(cfg)
    rng = random.Random(seed)
    commands = [*_commands(game), ("no.such", ["x"], ["viewer"])]
    acked: dict[str, tuple[int, str]] = {}
    counts = {"requests": 0, "committed": 0, "refused": 0, "kills": 0}

    def check(req: dict[str, Any], reply: dict[str, Any]) -> None:
        counts["requests"] += 1
        assert reply.get("id") == req["id"], (req, reply)
        if not reply["ok"]:
            assert isinstance(reply["error"], str) and reply["error"].strip(), reply
            counts["refused"] += 1
            return
        res = reply["result"]
        if req["cmd"] in DAEMON_COMMANDS:
            return
        if res.get("events"):
            assert isinstance(res["seq"], int) and res["last_seq"] >= res["seq"], res
            assert res["events"][0] == "operator.command", res
            acked[req["id"]] = (res["seq"], req["cmd"])
            counts["committed"] += 1
        else:  # nothing to journal (alarm clear all, no alarms): said so
            assert res.get("note"), res

    def request(i: int, run: int) -> tuple[Raw, dict[str, Any]]:
        name, names, roles = rng.choice(commands)
        req = {"cmd": name, "args": fuzz_args(rng, names), "id": f"{run}-{i}"}
        return clients[rng.choice(roles if rng.random() < 0.6 else ROLES)], req

    for run in range(kills):
        d = Daemon(cfg)
        d.start()
        clients = {role: Raw(eps[role], timeout=10.0) for role in ROLES}
        try:
            for i in range(requests):
                client, req = request(i, run)
                check(req, client.call(msgspec.json.encode(req)))
                if i % 50 == 0:
                    raw = rng.choice(RAW)
                    r = clients["dealer"].call(raw.replace(b'"r', f'"{run}-{i}-r'.encode(), 1))
                    assert r["ok"] is False and r["error"], r
                assert d.proc is not None and d.proc.poll() is None, "the daemon stopped"
            # a burst, then a SIGKILL while some of it is answered and some is not
            burst = [request(requests + k, run) for k in range(8)]
            for client, req in burst:
                client.send(msgspec.json.encode(req))
            sent = {req["id"]: req for _, req in burst}
            for client, _ in burst[: rng.randrange(len(burst))]:
                reply = client.recv()  # a client's replies come in the order they are done
                check(sent[reply["id"]], reply)
            d.kill()
            counts["kills"] += 1
        finally:
            for c in clients.values():
                c.close()
            d.close()
    j = Journal(tmp / "state" / "journal.sqlite", load(cfg).table)
    try:
        evs = list(read_events(j.db))
    finally:
        j.close()
    by_id = {
        e.data["request"]: e for e in evs if e.type == "operator.command" and "request" in e.data
    }
    for req_id, (seq, name) in acked.items():
        e = by_id.get(req_id)
        assert e is not None, f"request {req_id} ({name}) answered as committed, not in the journal"
        assert (e.seq, e.data["name"]) == (seq, name)
    failed = [e.data for e in evs if e.type == "alarm.raised" and e.data["kind"] == "decide-failed"]
    assert not failed, f"a decide raised: {failed[:3]}"
    return counts


@pytest.mark.parametrize("game", sorted(GAMES))
def test_fuzz_commands_against_a_running_daemon(tmp_path, game):
    c = fuzz_daemon(tmp_path, game, requests=150, kills=1, seed=len(game))
    assert c["requests"] >= 150 and c["kills"] == 1


@pytest.mark.campaign
@pytest.mark.parametrize("game", sorted(GAMES))
def test_fuzz_commands_against_a_running_daemon_long(tmp_path, game):
    c = fuzz_daemon(tmp_path, game, requests=1500, kills=4, seed=len(game) + 100)
    assert c["requests"] >= 6000 and c["kills"] == 4
