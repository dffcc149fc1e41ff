"""Roulette pockets, hand-checked against the layout (seed 003 IV §3.3.2: 37 pockets, 18 red,
18 black, 0 green) and the American double-zero wheel."""

from __future__ import annotations

import itertools

import pytest

from daemon.games.roulette import rules as roulette
from drivers.readings import DOUBLE_ZERO

# Written out by hand from a European layout, not derived from the code under test.
REDS = [1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36]
BLACKS = [2, 4, 6, 8, 10, 11, 13, 15, 17, 20, 22, 24, 26, 28, 29, 31, 33, 35]


def test_double_zero_is_the_protocol_modules_37():
    assert DOUBLE_ZERO == 37
    assert roulette.label(37) == "00"


@pytest.mark.parametrize("n", REDS)
def test_red_numbers(n):
    assert roulette.color(n) == "red"


@pytest.mark.parametrize("n", BLACKS)
def test_black_numbers(n):
    assert roulette.color(n) == "black"


def test_eighteen_red_eighteen_black_and_green_zeros():
    assert len(REDS) == len(BLACKS) == 18
    assert sorted(REDS + BLACKS) == list(range(1, 37))
    assert roulette.color(0) == "green"
    assert roulette.color(DOUBLE_ZERO) == "green"


@pytest.mark.parametrize(
    ("n", "dozen"),
    [(1, 1), (12, 1), (13, 2), (24, 2), (25, 3), (36, 3), (0, None), (DOUBLE_ZERO, None)],
)
def test_dozens(n, dozen):
    assert roulette.dozen(n) == dozen


@pytest.mark.parametrize(
    ("n", "col"),
    [
        (1, 1),
        (4, 1),
        (34, 1),
        (2, 2),
        (5, 2),
        (35, 2),
        (3, 3),
        (6, 3),
        (36, 3),
        (0, None),
        (DOUBLE_ZERO, None),
    ],
)
def test_columns(n, col):
    assert roulette.column(n) == col


def test_every_column_has_twelve_numbers_and_the_first_is_1_4_7():
    first = [n for n in range(37) if roulette.column(n) == 1]
    assert first == [1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34]
    assert all(sum(1 for n in range(37) if roulette.column(n) == c) == 12 for c in (1, 2, 3))


@pytest.mark.parametrize(
    ("n", "parity", "rng"),
    [
        (1, "odd", "low"),
        (2, "even", "low"),
        (18, "even", "low"),
        (19, "odd", "high"),
        (36, "even", "high"),
        (0, None, None),
        (DOUBLE_ZERO, None, None),
    ],
)
def test_parity_and_range(n, parity, rng):
    assert roulette.parity(n) == parity
    assert roulette.number_range(n) == rng


def test_result_data_of_zero_and_double_zero():
    assert roulette.result_data(0, False) == {
        "number": 0,
        "pocket": "0",
        "color": "green",
        "dozen": None,
        "column": None,
        "parity": None,
        "range": None,
        "layout": "single-zero",
    }
    dz = roulette.result_data(DOUBLE_ZERO, True)
    assert dz["pocket"] == "00" and dz["color"] == "green" and dz["layout"] == "double-zero"
    assert dz["dozen"] is dz["column"] is dz["parity"] is dz["range"] is None


def test_result_data_of_a_number():
    assert roulette.result_data(23, False) == {
        "number": 23,
        "pocket": "23",
        "color": "red",
        "dozen": 2,
        "column": 2,
        "parity": "odd",
        "range": "high",
        "layout": "single-zero",
    }


@pytest.mark.parametrize(("n", "dz"), [(37, False), (38, True), (-1, False), (99, True)])
def test_a_number_that_is_no_pocket_is_refused(n, dz):
    assert not roulette.is_pocket(n, dz)
    with pytest.raises(ValueError, match="not a pocket"):
        roulette.result_data(n, dz)


def test_single_zero_wheel_order():
    order = roulette.wheel_order(False)
    assert len(order) == 37 and sorted(order) == list(range(37))
    assert order[:5] == (0, 32, 15, 19, 4) and order[-1] == 26  # 0 sits between 26 and 32
    # around the wheel the colors alternate, except at the zero
    colors = [roulette.color(n) for n in order[1:]]
    assert all(a != b for a, b in itertools.pairwise(colors))


def test_double_zero_wheel_order():
    order = roulette.wheel_order(True)
    assert len(order) == 38 and sorted(order) == list(range(38))
    assert order[0] == 0 and order[19] == DOUBLE_ZERO  # 00 is opposite 0
    assert order[1] == 28 and order[-1] == 2
    # on the American wheel every pocket sits opposite its neighbour number (n, n+1)
    for i in range(1, 19):
        a, b = order[i], order[i + 19]
        assert {a, b} in ({a, a + 1}, {a - 1, a}), (a, b)
