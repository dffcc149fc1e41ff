"""Sic Bo rules (seed 002, 骰寳): every attribute hand-checked, triples included, and an
exact enumeration of the 216 throws through ``daemon.games.sicbo.result``."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from itertools import permutations, product

import pytest

from daemon.games.sicbo.rules import COMBINATIONS, TOTALS, DiceError, problem, result

THROWS = list(product(range(1, 7), repeat=3))


def counts(**c: int) -> dict[str, int]:
    return {str(f): c.get(f"f{f}", 0) for f in range(1, 7)}


# -- hand-checked throws -------------------------------------------------------------------


def test_small_straight():
    assert result([1, 2, 3]) == {
        "faces": [1, 2, 3],
        "total": 6,
        "size": "small",
        "parity": "even",
        "triple": False,
        "triple_face": None,
        "doubles": [],
        "combinations": ["1-2", "1-3", "2-3"],
        "face_counts": counts(f1=1, f2=1, f3=1),
    }


def test_big_with_a_double():
    assert result([5, 1, 5]) == {
        "faces": [5, 1, 5],  # as the shaker read them
        "total": 11,
        "size": "big",
        "parity": "odd",
        "triple": False,
        "triple_face": None,
        "doubles": [5],
        "combinations": ["1-5"],  # 长牌 needs two different faces
        "face_counts": counts(f1=1, f5=2),
    }


@pytest.mark.parametrize(
    ("faces", "total", "face"),
    [
        ([1, 1, 1], 3, 1),
        ([2, 2, 2], 6, 2),
        ([3, 3, 3], 9, 3),  # total 9 would be small: a triple is neither
        ([4, 4, 4], 12, 4),  # total 12 would be big: a triple is neither
        ([5, 5, 5], 15, 5),
        ([6, 6, 6], 18, 6),
    ],
)
def test_triples_lose_big_and_small(faces, total, face):
    """seed 002: 若三粒骰子平面点数相同, 通吃"大", "小"各注 — Big and Small both lose."""
    r = result(faces)
    assert r["total"] == total
    assert r["size"] is None
    assert (r["triple"], r["triple_face"]) == (True, face)
    assert r["doubles"] == [face]  # 短牌: two dice show the face (and the third too)
    assert r["combinations"] == []
    assert r["face_counts"][str(face)] == 3
    assert r["parity"] == ("odd" if total % 2 else "even")


@pytest.mark.parametrize(
    ("faces", "size"),
    [
        ([1, 1, 2], "small"),  # 4: the lowest total that is not a triple
        ([1, 4, 5], "small"),  # 10: the top of Small (seed 002: 4–10)
        ([1, 4, 6], "big"),  # 11: the bottom of Big (seed 002: 11–17)
        ([6, 6, 5], "big"),  # 17: the highest total that is not a triple
        ([2, 2, 6], "small"),  # 10
        ([3, 3, 5], "big"),  # 11
    ],
)
def test_big_small_boundaries(faces, size):
    assert result(faces)["size"] == size


@pytest.mark.parametrize(
    ("faces", "parity"), [([1, 2, 4], "odd"), ([1, 1, 2], "even"), ([6, 6, 5], "odd")]
)
def test_parity_is_the_totals(faces, parity):
    assert result(faces)["parity"] == parity


@pytest.mark.parametrize(
    ("faces", "doubles", "combos"),
    [
        ([2, 2, 5], [2], ["2-5"]),
        ([6, 3, 6], [6], ["3-6"]),
        ([4, 6, 1], [], ["1-4", "1-6", "4-6"]),
        ([1, 6, 6], [6], ["1-6"]),
    ],
)
def test_doubles_and_two_dice_combinations(faces, doubles, combos):
    """seed 002: 短牌 (a chosen face on two dice), 长牌 (two chosen faces on any two dice)."""
    r = result(faces)
    assert (r["doubles"], r["combinations"]) == (doubles, combos)


def test_single_number_counts():
    """seed 002, 三军: one, two or three dice showing the chosen face pay 1, 2 or 3 to 1."""
    assert result([3, 3, 5])["face_counts"] == counts(f3=2, f5=1)
    assert sum(result([6, 2, 6])["face_counts"].values()) == 3


def test_order_of_the_dice_does_not_matter():
    for p in permutations([2, 2, 5]):
        r = result(list(p))
        assert r.pop("faces") == list(p)
        assert r == {k: v for k, v in result([2, 2, 5]).items() if k != "faces"}


def test_json_ready():
    r = result([6, 6, 6])
    assert json.loads(json.dumps(r)) == r


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("faces", "why"),
    [
        ([0, 3, 5], "0 not in 1–6"),
        ([7, 1, 1], "7 not in 1–6"),
        ([2, 3], "2 face(s), expected 3"),
        ([1, 2, 3, 4], "4 face(s), expected 3"),
        ([], "0 face(s), expected 3"),
        ([1, 2, 9], "9 not in 1–6"),
        ([True, 2, 3], "True not in 1–6"),
        (["1", 2, 3], "1 not in 1–6"),
        ([1.0, 2, 3], "1.0 not in 1–6"),
    ],
)
def test_anything_but_three_faces_one_to_six_is_refused(faces, why):
    assert why in (problem(faces) or "")
    with pytest.raises(DiceError):
        result(faces)


def test_every_throw_is_valid():
    assert all(problem(list(t)) is None for t in THROWS)


# -- seed 002's bets over all 216 throws -------------------------------------------------------


def test_two_dice_combinations_are_seed_002s_fifteen():
    """长牌: any two different faces — 15 pairs, each made by 30 of the 216 throws."""
    assert len(COMBINATIONS) == 15 == len(set(COMBINATIONS))
    seen = Counter(c for t in THROWS for c in result(list(t))["combinations"])
    assert set(seen) == set(COMBINATIONS)
    assert set(seen.values()) == {30}


def test_exact_enumeration():
    n = len(THROWS)
    acc: Counter = Counter()
    for t in THROWS:
        r = result(list(t))
        acc[r["size"]] += 1
        acc[r["parity"]] += 1
        acc["triple"] += r["triple"]
        acc[("total", r["total"])] += 1
        for f in r["doubles"]:
            acc[("double", f)] += 1
        if r["triple_face"]:
            acc[("triple", r["triple_face"])] += 1
    assert Fraction(acc["small"], n) == Fraction(acc["big"], n) == Fraction(105, 216)
    assert acc[None] == acc["triple"] == 6  # 全骰: any triple, 6 in 216
    assert all(acc[("triple", f)] == 1 for f in range(1, 7))  # 围骰: one throw each
    assert all(acc[("double", f)] == 16 for f in range(1, 7))  # 短牌: 15 doubles + the triple
    assert acc["odd"] == acc["even"] == 108
    ways = [3, 6, 10, 15, 21, 25, 27, 27, 25, 21, 15, 10, 6, 3]  # totals 4..17 (点数)
    assert [acc[("total", s)] for s in TOTALS] == ways
    assert acc[("total", 3)] == acc[("total", 18)] == 1  # triples only: no total bet
