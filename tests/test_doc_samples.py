"""Every Python sample in README.md and docs/ runs (or, for an interface sketch, parses).

Each sample is found by its text and run here against the real thing (a capture's events,
a live daemon); the floor's backend sample is run by ``tests/test_floor_backend.py`` in a
fresh venv. A new sample fails ``test_every_sample_is_run`` until it is given a way to run.
"""

from __future__ import annotations

import ast
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from daemon_harness import ROOT, Daemon, endpoints, write_config

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def samples() -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in BLOCK.findall(p.read_text())]


#: how each sample is run: (file, a line it holds) → the test that runs it
RUN = {
    ("docs/events.md", "def verify(raw: bytes, prev_hash: str) -> bool:"): "verify",
    ("docs/events.md", "from daemon.bus.subscriber import Follower"): "follower",
    ("README.md", "from daemon.bus.subscriber import Follower"): "follower",
    ("docs/floor.md", "from tabled_client.floor import FloorFollower"): "test_floor_backend.py",
    ("docs/architecture.md", "class MyGame:"): "sketch",
    ("docs/settlement.md", "def settle_capture(path: str)"): "settle",
}


def how(path: str, code: str) -> str | None:
    return next((v for (p, line), v in RUN.items() if p == path and line in code), None)


def test_every_sample_is_run():
    found = samples()
    assert len(found) >= 5
    for path, code in found:
        assert how(path, code) is not None, f"a Python sample in {path} is not run:\n{code[:200]}"


def test_the_interface_sketch_parses():
    for path, code in samples():
        if how(path, code) == "sketch":
            ast.parse(code)


def test_the_hash_check_verifies_every_captured_event():
    [code] = [c for p, c in samples() if how(p, c) == "verify"]
    ns: dict = {}
    exec(compile(code, "docs/events.md", "exec"), ns)
    checked = 0
    for exp in sorted((ROOT / "tests" / "captures").rglob("*.expected.jsonl")):
        prev = "0" * 64
        for raw in exp.read_bytes().splitlines():
            assert ns["verify"](raw, prev), exp.name
            prev = json.loads(raw)["hash"]
            checked += 1
        # and it can fail: a changed byte is caught
        assert not ns["verify"](raw.replace(b'"v":1}', b'"v":2}'), prev_of(exp))
    assert checked > 1000


def prev_of(exp: Path) -> str:
    lines = exp.read_bytes().splitlines()
    return "0" * 64 if len(lines) < 2 else json.loads(lines[-2])["hash"]


class Enough(Exception):
    pass


@pytest.mark.parametrize("path", ["README.md", "docs/events.md"])
def test_the_subscriber_sample_follows_a_live_table(tmp_path, path):
    """Run as printed, endpoints and table swapped for a test daemon's; it prints events in
    seq order from 1 (stopped after 20: on a live table it would follow for good)."""
    [code] = [c for p, c in samples() if p == path and how(p, c) == "follower"]
    cfg = write_config(tmp_path, sim="seed = 5\npace = 0.01\n")
    pub, rep = endpoints(cfg)
    code = code.replace('"tcp://127.0.0.1:7700"', repr(pub)).replace(
        '"tcp://127.0.0.1:7701"', repr(rep)
    )
    code = code.replace('table="demo"', 'table="it"')
    seen: list[int] = []

    def shown(seq, type_, data) -> None:
        seen.append(seq)
        if len(seen) >= 20:
            raise Enough

    d = Daemon(cfg)
    try:
        d.start()
        with pytest.raises(Enough):
            exec(compile(code, path, "exec"), {"print": shown})
    finally:
        d.stop()
        d.close()
    assert seen == list(range(1, 21))


def _by_hand(game: str, d: dict) -> Decimal:
    """What BETS return on one result, from the seeds' ratios counted here, not by settle."""
    back = Decimal(0)
    if game == "baccarat":  # commission: banker 0.95, player 1, tie 8, pairs 11; a tie returns
        w = d["winner"]
        back += {"banker": Decimal("195"), "tie": 100, "player": 0}[w]
        back += {"player": 100, "tie": 50, "banker": 0}[w]
        back += 90 if w == "tie" else 0
        back += 60 if d["banker_pair"] else 0
    elif game == "dragon-tiger":  # 1:1, tie 10:1, half back on a tie
        w = d["winner"]
        back += {"dragon": 200, "tiger": 40, "tie": 50 + 10 + 110}[w]
    elif game == "sicbo":
        f, t = d["faces"], sum(d["faces"])
        triple = len(set(f)) == 1
        back += 200 if not triple else 0  # big or small wins unless a triple
        back += 20 * (1 + f.count(6)) if 6 in f else 0
        back += 5 * 7 if t == 10 else 0
    elif game == "roulette":
        n = d["number"]
        back += 200 if d["color"] == "red" else 0
        back += 180 if n == 17 else 0
        back += 60 if 13 <= n <= 24 else 0
        back += 180 if n in (0, 1) else 0
    elif game == "paigow":
        rows = {r["position"]: r for r in d["positions"]}
        back += Decimal("195") if rows["player1"]["result"] == "win" else 0
        back += Decimal("195") if rows["player3"]["result"] == "lose" else 0
        back += 70 if rows["player2"]["pair"] else 0
    elif game == "blackjack":
        for b in d["boxes"]:
            for h in b["hands"]:
                back += 100 * (h["bet"] + Decimal(str(h["net"])))
    return back


@pytest.mark.parametrize(
    ("capture", "game"),
    [
        ("shoe-line/full-shoe-first-card-burn", "baccarat"),
        ("dragon-tiger/full-shoe", "dragon-tiger"),
        ("dice-ref/rounds", "sicbo"),
        ("cammegh-ss2/studio-selftest-2025-09", "roulette"),
        ("tile-line/random-rounds", "paigow"),
        ("blackjack/whole-shoe", "blackjack"),
    ],
)
def test_the_settlement_sample_settles_a_whole_capture(capture, game):
    """docs/settlement.md's backend, as printed, on a capture of each game: every result settled,
    and what it returns is what the results' facts and the seeds' ratios give counted by hand."""
    [code] = [c for p, c in samples() if how(p, c) == "settle"]
    ns: dict = {}
    exec(compile(code, "docs/settlement.md", "exec"), ns)
    path = ROOT / "tests" / "captures" / f"{capture}.expected.jsonl"
    rounds, staked, returned = ns["settle_capture"](str(path))
    results = [
        e["data"]
        for e in map(json.loads, path.read_bytes().splitlines())
        if e["type"] in ("hand.result", "spin.result", "dice.result", "round.result")
    ]
    assert rounds == len(results) > 0
    assert returned == sum((_by_hand(game, d) for d in results), Decimal(0))
    per_round = 100 * len(results) if game == "blackjack" else None
    assert staked > 0 and (per_round is None or staked >= per_round)
