"""Acceptance: random Pai Gow rounds replayed as captures give the independent implementation's results.

``tests/captures/tile-line/random-*.log`` are seeded shuffles of the 20-tile
set with random dice (``make_paigow_captures.py``). The capture tests
(``conftest.py``) hold the replay to the ``.expected.jsonl``; this test holds
every ``round.result`` in those files to ``independent_paigow.py``, which
reads the raw capture and ranks by arithmetic instead of the seed's table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from independent_paigow import SEATS, deal, first_seat, outcome, rounds_of, strength

from daemon.pipeline.capture import load
from daemon.pipeline.replay import replay

CAPTURES = Path(__file__).parent / "captures" / "tile-line"
RANDOM = sorted(CAPTURES.glob("random-*.log"))
ALL = sorted(CAPTURES.glob("*.log"))


def results(log: Path) -> list[dict]:
    exp = log.with_name(log.name[: -len(".log")] + ".expected.jsonl")
    evs = [json.loads(line) for line in exp.read_text().splitlines()]
    return [e["data"] for e in evs if e["type"] == "round.result"]


def deal_mode(log: Path) -> str:
    for line in log.read_text().splitlines():
        if line.startswith("# game.deal:"):
            return line.split(":", 1)[1].strip().strip('"')
    return "stacks"


@pytest.mark.parametrize("log", RANDOM, ids=lambda p: p.name)
def test_random_rounds_match_the_independent_implementation(log):
    got = results(log)
    raw = list(rounds_of(log))
    assert len(raw) == len(got) >= 30
    mode = deal_mode(log)
    wins = pairs = 0
    for (dice, tiles), res in zip(raw, got, strict=True):
        assert res["dice"] == dice and res["tiles"] == tiles
        first = first_seat(dice)
        hands = deal(first, tiles, mode)
        assert res["first"] == first
        rows = {r["position"]: r for r in res["positions"]}
        for seat in SEATS:
            assert sorted(rows[seat]["tiles"]) == sorted(hands[seat])
            assert rows[seat]["pair"] == (hands[seat][0] == hands[seat][1])
        want = outcome(hands)
        assert {s: rows[s]["result"] for s in SEATS[1:]} == want
        assert res["winners"] == [s for s in SEATS[1:] if want[s] == "win"]
        assert res["pairs"] == [s for s in SEATS[1:] if hands[s][0] == hands[s][1]]
        wins += len(res["winners"])
        pairs += len(res["pairs"])
    # the rounds exercise both outcomes and the pair bet
    assert 0 < wins < 5 * len(got) and pairs > 0


@pytest.mark.parametrize("log", ALL, ids=lambda p: p.name)
def test_every_result_agrees_with_the_independent_ranking(log):
    """Procedure captures too: whatever was entered or held, each result ranks as arithmetic says."""
    mode = deal_mode(log)
    for res in results(log):
        first = first_seat(res["dice"])
        hands = deal(first, res["tiles"], mode)
        rows = {r["position"]: r for r in res["positions"]}
        assert {s: rows[s]["result"] for s in SEATS[1:]} == outcome(hands)


def test_the_replay_is_the_expected_file():
    """The same results come out of a fresh replay (what the capture tests check byte for byte)."""
    for log in RANDOM:
        r = replay([load(log)])
        fresh = [e.data for e in r.events if e.type == "round.result"]
        assert json.loads(json.dumps(fresh)) == results(log)


def test_the_independent_ranking_is_a_different_method():
    """Spot checks of the arithmetic against the seed's examples (seed 002, 大小)."""
    assert strength(["wd", "wd"]) > strength(["9p", "9p"]) > strength(["1p", "1p"])
    assert strength(["1p", "1p"]) > strength(["wd", "9p"]) > strength(["1p", "8p"])
    assert strength(["2p", "6p"]) > strength(["3p", "5p"]) > strength(["wd", "7p"])
    assert strength(["1p", "9p"]) == strength(["4p", "6p"]) < strength(["5p", "6p"])
