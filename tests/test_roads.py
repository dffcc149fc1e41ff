"""The scoreboards against hand-worked shoes: long streaks, dragon tails, opening ties, derived roads.

Each expected road below was worked out by hand on squared paper from the rules in
``daemon/procedures/shoe/roads.py`` (the usual rules of the trade), not produced by the code.
"""

from __future__ import annotations

import random
from itertools import groupby

import pytest

from daemon.procedures.shoe.roads import roads, update
from daemon.tools.roads_view import Board

B, P, T = "banker", "player", "tie"
BACCARAT = ("banker", "player")

#: opening tie, a tie after a cell, an 8-hand Banker streak with a dragon tail
SHOE_A = [T, B, B, T, P, B, B, B, B, B, B, B, B, P, P, B]


def test_big_road_keeps_the_opening_tie_and_turns_a_long_streak_right():
    r = roads(SHOE_A, BACCARAT)
    assert r["bead_plate"] == SHOE_A  # ties included, in order
    assert r["big_road"] == [
        [0, 0, B, 1],  # the opening tie's slash on the first cell
        [0, 1, B, 1],  # the tie after the second Banker
        [1, 0, P, 0],
        [2, 0, B, 0],
        [2, 1, B, 0],
        [2, 2, B, 0],
        [2, 3, B, 0],
        [2, 4, B, 0],
        [2, 5, B, 0],
        [3, 5, B, 0],  # the dragon tail: hands 7 and 8 of the streak, not cut
        [4, 5, B, 0],
        [3, 0, P, 0],
        [3, 1, P, 0],
        [4, 0, B, 0],
    ]


def test_derived_roads_of_shoe_a():
    r = roads(SHOE_A, BACCARAT)
    # big road streak lengths 2, 1, 8, 2, 1
    # big eye boy: blue (1≠2), blue (streak 1 ends at row 0), red×6 (no cell, none above),
    # blue (8≠1), red (streak 2 has row 1), blue (2≠8)
    assert r["big_eye_boy"] == [
        [0, 0, "blue"],
        [0, 1, "blue"],
        [1, 0, "red"],
        [1, 1, "red"],
        [1, 2, "red"],
        [1, 3, "red"],
        [1, 4, "red"],
        [1, 5, "red"],
        [2, 0, "blue"],
        [3, 0, "red"],
        [4, 0, "blue"],
    ]
    # small road: starts at streak 2 row 1: red, blue, red×5, blue (8≠2), blue, blue (2≠1)
    assert r["small_road"] == [
        [0, 0, "red"],
        [1, 0, "blue"],
        [2, 0, "red"],
        [2, 1, "red"],
        [2, 2, "red"],
        [2, 3, "red"],
        [2, 4, "red"],
        [3, 0, "blue"],
        [3, 1, "blue"],
        [3, 2, "blue"],
    ]
    # cockroach pig: starts at streak 3 row 1: red (streak 0 has row 1), red (2 = 2)
    assert r["cockroach_pig"] == [[0, 0, "red"], [0, 1, "red"]]


def test_ask_banker_ask_player():
    r = roads(SHOE_A, BACCARAT)
    assert r["next"] == {
        B: {"big_eye_boy": "red", "small_road": "red", "cockroach_pig": "blue"},
        P: {"big_eye_boy": "blue", "small_road": "blue", "cockroach_pig": "red"},
    }


def test_a_tail_that_runs_into_an_older_tail_turns_early():
    shoe = [P] * 7 + [B] * 7 + [P]
    r = roads(shoe, BACCARAT)
    assert r["big_road"] == [
        *([0, row, P, 0] for row in range(6)),
        [1, 5, P, 0],  # 7th Player along the bottom
        *([1, row, B, 0] for row in range(5)),  # Banker goes down to row 4 …
        [2, 4, B, 0],  # … row 5 is the old tail: it turns right one row higher
        [3, 4, B, 0],
        [2, 0, P, 0],
    ]
    # big eye boy: streak 1 rows 1–6 all have a cell in streak 0 (red ×6), then 7 = 7: red;
    # seven reds make a dragon tail on the derived road too
    assert r["big_eye_boy"] == [*([0, row, "red"] for row in range(6)), [1, 5, "red"]]
    assert r["small_road"] == []  # streak 2 has one cell: the small road starts at streak 3
    assert r["cockroach_pig"] == []


def test_only_ties_so_far():
    r = roads([T, T], BACCARAT)
    assert r["big_road"] == [[0, 0, None, 2]]
    assert r["big_eye_boy"] == r["small_road"] == r["cockroach_pig"] == []
    assert r["next"][B] == {"big_eye_boy": None, "small_road": None, "cockroach_pig": None}


def test_dragon_tiger_keeps_tiger_apart_from_tie():
    shoe = ["tie", "tiger", "tie", "dragon", "tiger", "tiger"]
    r = roads(shoe, ("dragon", "tiger"))
    assert r["bead_plate"] == shoe
    assert r["big_road"] == [
        [0, 0, "tiger", 2],  # opening tie and the tie after it
        [1, 0, "dragon", 0],
        [2, 0, "tiger", 0],
        [2, 1, "tiger", 0],
    ]
    # big eye boy starts at streak 1 row 1 (none) so at streak 2 row 0: 1 = 1 red; then
    # streak 1 ends at row 0: blue
    assert r["big_eye_boy"] == [[0, 0, "red"], [1, 0, "blue"]]
    assert set(r["next"]) == {"dragon", "tiger"}


@pytest.mark.parametrize("seed", range(20))
def test_invariants_on_random_shoes(seed):
    """Whatever the shoe: every side win is one cell, no two cells share a square, ties are all
    shown, and each derived road has one mark per big-road cell after its start."""
    rng = random.Random(seed)
    shoe = rng.choices([B, P, T], weights=[46, 45, 9], k=rng.randint(1, 90))
    r = roads(shoe, BACCARAT)
    big = r["big_road"]
    wins = [w for w in shoe if w != T]
    assert [c[2] for c in big if c[2] is not None] == wins
    assert sum(c[3] for c in big) == shoe.count(T)
    for name in ("big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        squares = [(c[0], c[1]) for c in r[name]]
        assert len(set(squares)) == len(squares), name
        assert all(0 <= row < 6 for _, row in squares), name
    lengths = [len(list(run)) for _, run in groupby(wins)]
    for name, k in (("big_eye_boy", 1), ("small_road", 2), ("cockroach_pig", 3)):
        # the road begins at streak k row 1 (or streak k + 1): every cell from there on
        want = sum(lengths[k + 1 :]) + (lengths[k] - 1 if len(lengths) > k else 0)
        assert len(r[name]) == want, name


@pytest.mark.parametrize("seed", range(10))
def test_the_squares_each_result_sets_build_the_whole_board(seed):
    """What the bus carries (one square a road per result) adds up to the board itself."""
    rng = random.Random(100 + seed)
    shoe = rng.choices(["dragon", "tiger", T], weights=[46, 46, 8], k=rng.randint(1, 200))
    board = Board()
    for n in range(1, len(shoe) + 1):
        board.set(update(shoe[:n], ("dragon", "tiger")))
    want = roads(shoe, ("dragon", "tiger"))
    got = board.roads()
    for name in ("bead_plate", "next"):
        assert got[name] == want[name], name
    for name in ("big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        assert sorted(got[name], key=str) == sorted(want[name], key=str), name


def _two_board_difference(winners, sides):
    """What a result sets, by its definition: the squares that differ between the boards
    before and after it (one a road at most)."""
    before, after = roads(winners[:-1], sides), roads(winners, sides)
    out = {"rows": 6, "hands": len(winners)}
    i = len(winners) - 1
    out["bead_plate"] = [i // 6, i % 6, winners[-1]]
    for name in ("big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        old = {(c[0], c[1]): c for c in before[name]}
        changed = [c for c in after[name] if old.get((c[0], c[1])) != c]
        assert len(changed) <= 1, (name, changed)
        out[name] = changed[0] if changed else None
    out["next"] = after["next"]
    return out


@pytest.mark.parametrize("seed", range(10))
def test_update_is_the_difference_of_the_boards_before_and_after(seed):
    """``update`` finds the changed square without drawing both boards; it must be the same."""
    rng = random.Random(200 + seed)
    shoe = rng.choices([B, P, T], weights=[40, 40, 20], k=rng.randint(1, 120))
    if seed < 3:
        shoe = [T] * (seed + 1) + shoe  # opening ties, before any side has won
    for n in range(1, len(shoe) + 1):
        assert update(shoe[:n], BACCARAT) == _two_board_difference(shoe[:n], BACCARAT), n


def test_update_asked_again_or_for_another_result_gives_the_same_squares():
    """decide may ask twice for the same results, or for another result after the same ones
    (a decision not taken): each answer is the two-board difference, and none is shared."""
    rng = random.Random(7)
    shoe = rng.choices([B, P, T], weights=[40, 40, 20], k=60)
    for n in range(1, len(shoe) + 1):
        first = update(shoe[:n], BACCARAT)
        first["big_road"] = "spoiled by its caller"
        assert update(shoe[:n], BACCARAT) == _two_board_difference(shoe[:n], BACCARAT), n
        other = [*shoe[: n - 1], P if shoe[n - 1] != P else B]
        assert update(other, BACCARAT) == _two_board_difference(other, BACCARAT), n
        assert update(shoe[:n], BACCARAT) == _two_board_difference(shoe[:n], BACCARAT), n


def test_update_answers_each_games_sides_for_the_same_results():
    """A baccarat and a Dragon Tiger shoe may begin with the same results (a tie): each
    answer's ``next`` names its own game's sides."""
    for winners in ([T], [T, T], [T, T, T]):
        assert set(update(winners, BACCARAT)["next"]) == set(BACCARAT)
        assert set(update(winners, ("dragon", "tiger"))["next"]) == {"dragon", "tiger"}
        assert set(update(winners, BACCARAT)["next"]) == set(BACCARAT)


@pytest.mark.parametrize("seed", range(10))
def test_ask_side_is_the_mark_the_next_result_draws(seed):
    """``next`` by its definition: the mark each derived road draws when that side wins next
    (None when it draws none), read off the board with that result added."""
    rng = random.Random(300 + seed)
    shoe = rng.choices([B, P, T], weights=[40, 40, 20], k=rng.randint(0, 100))
    for n in range(len(shoe) + 1):
        now = roads(shoe[:n], BACCARAT)
        for side in BACCARAT:
            then = roads([*shoe[:n], side], BACCARAT)
            for name in ("big_eye_boy", "small_road", "cockroach_pig"):
                grew = len(then[name]) > len(now[name])
                want = then[name][-1][2] if grew else None
                assert now["next"][side][name] == want, (n, side, name)
