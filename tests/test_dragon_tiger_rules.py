"""Dragon Tiger rules (seed 002): hand-checked cases and an exact 8-deck enumeration
through ``daemon.games.dragon_tiger.result``."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from fractions import Fraction

import pytest

from daemon.games.dragon_tiger.rules import DragonTigerResult, result, result_data
from drivers.cards import DECK, CardError


@pytest.mark.parametrize(
    ("dragon", "tiger", "winner"),
    [
        ("KS", "QH", "dragon"),  # K beats Q
        ("QH", "KS", "tiger"),
        ("AS", "2H", "tiger"),  # A is lowest
        ("AS", "KH", "tiger"),
        ("2D", "AC", "dragon"),
        ("TS", "9S", "dragon"),
        ("JS", "TS", "dragon"),  # J above T although both are worth 0 in baccarat
        ("7S", "7H", "tie"),  # suits ignored
        ("QC", "QC", "tie"),
    ],
)
def test_winner(dragon, tiger, winner):
    assert result(dragon, tiger).winner == winner


def test_ranks_are_ace_low_king_high():
    assert [result(r + "S", "AS").dragon_rank for r in "A23456789TJQK"] == list(range(1, 14))
    assert result("AS", "KD").tiger_rank == 13


def test_suited_tie_needs_same_rank_and_suit():
    assert result("7S", "7S").suited_tie
    assert not result("7S", "7H").suited_tie
    assert not result("7S", "8S").suited_tie  # same suit, not a tie


@pytest.mark.parametrize(
    ("card", "colour", "parity", "size"),
    [
        ("AS", "black", "odd", "small"),
        ("2H", "red", "even", "small"),
        ("6D", "red", "even", "small"),
        ("7C", "black", "odd", None),  # 7 is neither big nor small
        ("7H", "red", "odd", None),
        ("8S", "black", "even", "big"),
        ("TD", "red", "even", "big"),
        ("JC", "black", "odd", "big"),
        ("QH", "red", "even", "big"),
        ("KS", "black", "odd", "big"),
    ],
)
def test_side_facts_per_card(card, colour, parity, size):
    as_dragon = result(card, "7D")
    assert (as_dragon.dragon_colour, as_dragon.dragon_parity, as_dragon.dragon_size) == (
        colour,
        parity,
        size,
    )
    as_tiger = result("7D", card)
    assert (as_tiger.tiger_colour, as_tiger.tiger_parity, as_tiger.tiger_size) == (
        colour,
        parity,
        size,
    )


@pytest.mark.parametrize(
    ("dragon", "tiger"), [("XX", "AS"), ("AS", "1H"), ("as", "KD"), ("AS", "")]
)
def test_rejects_non_cards(dragon, tiger):
    with pytest.raises(CardError):
        result(dragon, tiger)


def test_to_data_is_json_ready_and_complete():
    r = result("KH", "7C")
    data = r.to_data()
    assert set(data) == {f.name for f in dataclasses.fields(DragonTigerResult)}
    assert json.loads(json.dumps(data)) == data
    assert data == {
        "dragon": "KH",
        "tiger": "7C",
        "dragon_rank": 13,
        "tiger_rank": 7,
        "winner": "dragon",
        "suited_tie": False,
        "dragon_colour": "red",
        "tiger_colour": "black",
        "dragon_parity": "odd",
        "tiger_parity": "odd",
        "dragon_size": "big",
        "tiger_size": None,
    }


def test_exact_eight_deck_enumeration():
    """Every ordered (Dragon, Tiger) card pair from an 8-deck shoe, weighted exactly:
    P(d, t) = 8 (8 - [d = t]) / (416 * 415)."""
    decks = 8
    n = 52 * decks
    acc: Counter = Counter()
    for d in DECK:
        for t in DECK:
            w = decks * (decks - (d == t))
            r = result(d, t)
            acc[r.winner] += w
            acc["suited_tie"] += w if r.suited_tie else 0
            acc["total"] += w
    assert acc["total"] == n * (n - 1)
    p = {k: Fraction(v, n * (n - 1)) for k, v in acc.items()}
    assert p["tie"] == Fraction(31, 415)
    assert abs(float(p["tie"]) - 0.074699) < 5e-7
    assert abs(float(p["dragon"]) - 0.462651) < 5e-7
    assert p["dragon"] == p["tiger"] == Fraction(192, 415)
    assert p["suited_tie"] == Fraction(7, 415)


def test_result_data_is_the_results_data_key_for_key_in_order():
    """The table's ``result_data`` (no DragonTigerResult built) says what
    ``result().to_data()`` says, in the same key order, for every pair of cards."""
    for dragon in DECK:
        for tiger in DECK:
            want = result(dragon, tiger).to_data()
            assert list(result_data(dragon, tiger).items()) == list(want.items())
    with pytest.raises(CardError, match="'ZZ' is not a card"):
        result_data("KH", "ZZ")
