"""Every hand.result in every capture agrees with an independent rules implementation."""

from __future__ import annotations

import json
from pathlib import Path

import independent_baccarat
import pytest

EXPECTED = sorted((Path(__file__).parent / "captures").glob("**/*.expected.jsonl"))


def results(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        if ev["type"] == "hand.result" and "player" in ev["data"]:
            out.append(ev["data"])
    return out


def test_there_are_baccarat_captures():
    assert sum(len(results(p)) for p in EXPECTED) >= 90


@pytest.mark.parametrize("path", EXPECTED, ids=lambda p: p.name)
def test_results_match_independent_rules(path):
    for r in results(path):
        want = independent_baccarat.settle(r["player"], r["banker"])
        for key in (
            "winner",
            "player_total",
            "banker_total",
            "player_pair",
            "banker_pair",
            "cards",
            "banker_six",
            "natural",
        ):
            assert r[key] == want[key], f"{path.name} shoe {r['shoe']} hand {r['hand']}: {key}"


def test_full_shoe_is_dealt_in_shoe_order():
    """The cards of a whole shoe, dealt by independent rules from the same order, give the same hands."""
    path = (
        Path(__file__).parent
        / "captures"
        / "shoe-line"
        / "full-shoe-first-card-burn.expected.jsonl"
    )
    events = [json.loads(line) for line in path.read_text().splitlines()]
    order = [
        e["data"]["card"]
        for e in events
        if e["type"] == "card.dealt" and e["data"]["box"] != "burn"
    ]
    got = [(r["player"], r["banker"]) for r in results(path)]
    hands = []
    while order:
        player, banker, used = independent_baccarat.deal(order)
        hands.append((player, banker))
        order = order[used:]
    assert hands == got
