"""Blackjack captures agree, round by round, with an independent implementation (issue 13, acceptance 1).

For every round of every blackjack capture — two whole 8-deck shoes with
random boxes and decisions, and a session of dealer errors — the table's
expected events give the same card-to-box attribution, the same dealer hand
and the same settlement of every box as :mod:`independent_blackjack` playing
the capture's raw lines by itself.
"""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import independent_blackjack
import pytest

HERE = Path(__file__).parent / "captures" / "blackjack"
LOGS = sorted(HERE.glob("*.log"))


def table_rounds(log: Path) -> list[dict[str, Any]]:
    """The rounds as the table's expected events tell them."""
    exp = log.with_name(log.name[: -len(".log")] + ".expected.jsonl")
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in exp.read_text().splitlines():
        ev = json.loads(line)
        t, d = ev["type"], ev["data"]
        if t == "betting.closed":
            cur = {"boxes": d["boxes"], "order": [], "dealer": [], "void": False, "settled": None}
            out.append(cur)
        elif cur is None:
            continue
        elif t == "card.dealt" and d["box"] not in ("burn", "void"):
            cur["order"].append((d["box"], d["card"]))
        elif t == "dealer.hole_card" or (t == "hand.void" and "hole" in d):
            card = d["card"] if t == "dealer.hole_card" else d["hole"]["card"]
            cur["order"] = [
                (b, card if (b == "dealer" and c is None) else c) for b, c in cur["order"]
            ]
        if t == "hand.result":
            cur["dealer"] = d["dealer"]["cards"]
            cur["settled"] = {
                b["box"]: {
                    "hands": [(h["outcome"], Fraction(h["net"])) for h in b["hands"]],
                    "insurance": Fraction(b["insurance"]["net"])
                    if b["insurance"] and b["insurance"].get("taken")
                    else None,
                }
                for b in b_list(d)
            }
        elif t == "hand.void":
            cur["void"] = True
            cur["dealer"] = d.get("dealer", [])
    return out


def b_list(d: dict[str, Any]) -> list[dict[str, Any]]:
    return d["boxes"]


def test_there_are_blackjack_captures_of_whole_shoes() -> None:
    assert len(LOGS) >= 3
    whole = [p for p in LOGS if p.name.startswith("whole-shoe")]
    assert len(whole) >= 2
    for p in whole:
        assert sum(1 for r in table_rounds(p) if r["settled"]) >= 20


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_every_round_matches_the_independent_table(log: Path) -> None:
    mine = table_rounds(log)
    theirs = independent_blackjack.rounds(log)
    assert len(mine) == len(theirs)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        where = f"{log.name} round {i + 1}"
        assert a["boxes"] == b["boxes"], where
        assert a["order"] == b["order"], f"{where}: card-to-box attribution"
        assert a["void"] == b["void"], where
        if not a["void"]:
            assert a["dealer"] == b["dealer"], f"{where}: dealer hand"
            assert a["settled"] == b["settled"], f"{where}: settlement"


def test_the_captures_hold_every_case_acceptance_1_names() -> None:
    c: Counter[str] = Counter()
    for log in LOGS:
        exp = log.with_name(log.name[: -len(".log")] + ".expected.jsonl")
        for line in exp.read_text().splitlines():
            ev = json.loads(line)
            t, d = ev["type"], ev["data"]
            if t == "box.decision":
                c[d["decision"] + ("-timeout" if d.get("timeout") else "")] += 1
            elif t == "hand.result":
                dl = d["dealer"]
                c["soft-17"] += dl["soft"] and dl["total"] == 17
                c["dealer-blackjack-under-ace"] += dl["blackjack"] and dl["cards"][0][0] == "A"
                for b in d["boxes"]:
                    ins = b["insurance"] or {}
                    if ins.get("taken"):
                        c["insurance-" + ins["outcome"]] += 1
            elif t == "alarm.raised":
                c[d["kind"]] += 1
    for need in (
        "split",
        "double",
        "stand-timeout",
        "soft-17",
        "dealer-blackjack-under-ace",
        "insurance-win",
        "insurance-lose",
        "card-not-due",
        "card-before-betting-closed",
        "hole-card-exposed",
        "card-to-box-not-betting",
    ):
        assert c[need], need
