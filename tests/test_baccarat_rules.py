"""Baccarat rules: hand-checked cases from the seeds, an exact enumeration of
8- and 6-deck shoes through the module's own code, and a property test against
an independent implementation (tests/independent_baccarat.py).

Expected values are written out here from docs/rules.md (seed 000/001
art. 5, 7, 9; seed 002 drawing table; seed 004 Super 6, Big/Small, pairs), not
derived from the code under test.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import random
import re
from collections import Counter
from fractions import Fraction

import independent_baccarat as indep
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.games.baccarat.rules import (
    HandResult,
    banker_draws,
    card_value,
    hand_total,
    next_box,
    player_draws,
    result,
    result_data,
)
from drivers.cards import DECK, RANKS, CardError

# --------------------------------------------------------------------------
# Card values and totals (seed 000/001 art. 5)


@pytest.mark.parametrize(
    ("rank", "value"),
    [
        ("A", 1),
        ("2", 2),
        ("3", 3),
        ("4", 4),
        ("5", 5),
        ("6", 6),
        ("7", 7),
        ("8", 8),
        ("9", 9),
        ("T", 0),
        ("J", 0),
        ("Q", 0),
        ("K", 0),
    ],
)
def test_card_value(rank, value):
    for suit in "SHDC":
        assert card_value(rank + suit) == value


@pytest.mark.parametrize("bad", ["", "1S", "10H", "th", "TX", "AS ", "XX"])
def test_card_value_rejects_non_cards(bad):
    with pytest.raises(CardError):
        card_value(bad)
    with pytest.raises(ValueError):
        hand_total(["AS", bad])


def test_hand_total_is_sum_mod_10():
    assert hand_total(["7S", "8H"]) == 5
    assert hand_total(["KS", "QH"]) == 0
    assert hand_total(["9S", "9H", "9D"]) == 7
    assert hand_total(["AS", "TH", "8C"]) == 9
    assert hand_total([]) == 0


# --------------------------------------------------------------------------
# Drawing rules (seed 000/001 art. 9; seed 002 table; seed 004)


@pytest.mark.parametrize(
    ("total", "draws"),
    [
        (0, True),
        (1, True),
        (2, True),
        (3, True),
        (4, True),
        (5, True),
        (6, False),
        (7, False),
        (8, False),
        (9, False),
    ],
)
def test_player_draws(total, draws):
    assert player_draws(total) is draws


# Banker's drawing table, row = Banker's two-card total, column = value of
# Player's third card; "-" column = Player stood. D = draw, S = stand.
#                   -  0123456789
BANKER_TABLE = {
    0: "D DDDDDDDDDD",
    1: "D DDDDDDDDDD",
    2: "D DDDDDDDDDD",
    3: "D DDDDDDDDSD",  # 3 draws unless Player's third is 8
    4: "D SSDDDDDDSS",  # 4 draws on 2..7
    5: "D SSSSDDDDSS",  # 5 draws on 4..7
    6: "S SSSSSSDDSS",  # 6 draws on 6..7 only (stands if Player stood)
    7: "S SSSSSSSSSS",  # 7 always stands
}
CELLS = [
    (b, p, row[0] if p is None else row[2 + p])
    for b, row in BANKER_TABLE.items()
    for p in (None, *range(10))
]
assert len(CELLS) == 88

# One card of each value, for building concrete hands.
OF_VALUE = {
    0: "KD",
    1: "AC",
    2: "2H",
    3: "3S",
    4: "4D",
    5: "5C",
    6: "6H",
    7: "7S",
    8: "8D",
    9: "9C",
}


def banker_two(total: int) -> list[str]:
    """Two Banker cards totalling ``total`` (0-7), no pair involved."""
    return ["TH", OF_VALUE[total]] if total else ["QS", "JH"]


@pytest.mark.parametrize(("banker_total", "third", "cell"), CELLS)
def test_banker_drawing_table_every_cell(banker_total, third, cell):
    assert banker_draws(banker_total, third) is (cell == "D")
    # The same cell through the dealing order, on concrete cards.
    banker = banker_two(banker_total)
    if third is None:
        player = ["6S", "KH"]  # 6: Player stands
    else:
        player = ["2S", "3H", OF_VALUE[third]]  # 5: Player draws
    assert next_box(player, banker) == ("banker" if cell == "D" else None)
    if cell == "D":
        with pytest.raises(ValueError):
            result(player, banker)
        full = result(player, [*banker, "4C"])
        assert full.cards == len(player) + 3
    else:
        assert result(player, banker).banker_total == banker_total
        with pytest.raises(ValueError):
            next_box(player, [*banker, "4C"])  # a third card that was not due


@pytest.mark.parametrize("third", [None, *range(10)])
def test_banker_natural_totals_never_draw(third):
    assert banker_draws(8, third) is False
    assert banker_draws(9, third) is False


@pytest.mark.parametrize(("total", "third"), [(-1, None), (10, None), (3, 10), (3, -1)])
def test_draw_questions_reject_impossible_values(total, third):
    with pytest.raises(ValueError):
        banker_draws(total, third)
    if third is None:
        with pytest.raises(ValueError):
            player_draws(total)


# --------------------------------------------------------------------------
# Naturals


@pytest.mark.parametrize(
    ("player", "banker", "winner", "pn", "bn"),
    [
        (["8S", "KH"], ["3D", "4C"], "player", True, False),  # Player 8 vs Banker 7
        (["KS", "QS"], ["4H", "5D"], "banker", False, True),  # Banker 9, Player 0 does not draw
        (["4S", "4H"], ["5D", "3C"], "tie", True, True),  # 8 v 8
        (["9S", "KH"], ["8D", "TC"], "player", True, True),  # 9 beats 8
        (["AS", "7H"], ["2D", "3C"], "player", True, False),  # Banker 5 does not draw
        (["6S", "3H"], ["5D", "4C"], "tie", True, True),  # 9 v 9
        (["3S", "3H"], ["7D", "AC"], "banker", False, True),  # Player 6 v natural 8
    ],
)
def test_naturals_stop_the_hand(player, banker, winner, pn, bn):
    assert next_box(player, banker) is None
    r = result(player, banker)
    assert (r.winner, r.player_natural, r.banker_natural, r.natural) == (winner, pn, bn, True)
    assert r.cards == 4 and r.small and not r.big
    with pytest.raises(ValueError):
        next_box([*player, "2C"], banker)
    with pytest.raises(ValueError):
        next_box(player, [*banker, "2C"])


def test_eight_or_nine_on_three_cards_is_not_natural():
    r = result(["2S", "3H", "3D"], ["KD", "7C"])  # Player 8 on three cards, Banker 7 stands
    assert (r.player_total, r.banker_total, r.winner) == (8, 7, "player")
    assert not r.natural and not r.player_natural and not r.banker_natural


# --------------------------------------------------------------------------
# Pairs (seed 000/001 art. 13, 17; seed 004): same RANK, suits ignored


@pytest.mark.parametrize(
    ("first_two", "pair"),
    [
        (["JS", "JH"], True),
        (["JS", "JS"], True),  # same card twice in a multi-deck shoe
        (["JS", "QS"], False),  # both worth 0, different ranks
        (["TS", "KS"], False),
        (["TD", "TC"], True),
        (["AS", "AD"], True),
        (["4C", "4H"], True),
        (["4C", "5C"], False),
    ],
)
def test_pairs_by_rank(first_two, pair):
    # Against a Banker natural, so the hand is complete on four cards.
    r = result(first_two, ["9C", "KD"])
    assert r.player_pair is pair and r.banker_pair is False
    r = result(["9C", "KD"], first_two)
    assert r.banker_pair is pair and r.player_pair is False


def test_pair_looks_at_first_two_cards_only():
    # Player 2,3 draws a 2: the third card making "2,2" does not make a pair.
    r = result(["2S", "3H", "2D"], ["KD", "7C"])
    assert not r.player_pair
    r = result(["5S", "5H", "KC"], ["KD", "QD", "KS"])  # Player pair 5-5, draws on 0
    assert r.player_pair and not r.banker_pair


# --------------------------------------------------------------------------
# Card counts (Big/Small, seed 004) and Banker win with 6 (Super 6, seed 004)


@pytest.mark.parametrize(
    ("player", "banker", "cards", "winner", "totals"),
    [
        (["7S", "KH"], ["6D", "TC"], 4, "player", (7, 6)),  # both stand
        (["7S", "KH"], ["5D", "TC", "2H"], 5, "tie", (7, 7)),  # Player stood, Banker 5 draws
        (["2S", "KH", "4D"], ["7D", "TC"], 5, "banker", (6, 7)),  # Player draws, Banker 7 stands
        (["2S", "KH", "4D"], ["3D", "TC", "3C"], 6, "tie", (6, 6)),
        (["AS", "KH", "8D"], ["3D", "TC"], 5, "player", (9, 3)),  # Banker 3 stands on an 8
    ],
)
def test_card_counts(player, banker, cards, winner, totals):
    r = result(player, banker)
    assert r.cards == cards
    assert r.small is (cards == 4) and r.big is (cards >= 5)
    assert r.winner == winner
    assert (r.player_total, r.banker_total) == totals


@pytest.mark.parametrize(
    ("player", "banker", "six"),
    [
        (["5S", "KH", "KD"], ["6D", "TC"], True),  # Banker 6 stands on Player's 0; 6 v 5
        (["7S", "KH"], ["6D", "TC"], False),  # Banker 6 loses to 7
        (["6S", "KH"], ["6D", "TC"], False),  # 6-6 tie is not a Banker win
        (["2S", "KH", "4D"], ["2D", "TC", "4C"], False),  # 6 v 6 tie on six cards
        (["2S", "KH", "3D"], ["2D", "AC", "3C"], True),  # Banker wins 6 on three cards
        (["KS", "KH", "KD"], ["7D", "TC"], False),  # Banker wins with 7, not 6
        (["6S", "KH"], ["TD", "5C", "AH"], False),  # 6 v 6 after Banker draws: tie
    ],
)
def test_banker_six(player, banker, six):
    r = result(player, banker)
    assert r.banker_six is six
    if six:
        assert r.winner == "banker" and r.banker_total == 6


# --------------------------------------------------------------------------
# Dealing order (seed 000/001 art. 7; seed 003 §3.4.3) through next_box


def deal_with_next_box(shoe: list[str]) -> tuple[list[str], list[str], str]:
    player: list[str] = []
    banker: list[str] = []
    route = ""
    it = iter(shoe)
    while (box := next_box(player, banker)) is not None:
        (player if box == "player" else banker).append(next(it))
        route += box[0].upper()
    return player, banker, route


@pytest.mark.parametrize(
    ("shoe", "route", "player", "banker"),
    [
        (["8S", "2H", "KD", "5C", "9D"], "PBPB", ["8S", "KD"], ["2H", "5C"]),  # natural
        (["3S", "KH", "2D", "7C", "9D"], "PBPBP", ["3S", "2D", "9D"], ["KH", "7C"]),  # B 7
        (["3S", "KH", "2D", "QC", "9D", "4H"], "PBPBPB", ["3S", "2D", "9D"], ["KH", "QC", "4H"]),
        (["6S", "KH", "TD", "4C", "9D"], "PBPBB", ["6S", "TD"], ["KH", "4C", "9D"]),  # P 6
        (["7S", "KH", "TD", "7C", "9D"], "PBPB", ["7S", "TD"], ["KH", "7C"]),  # 7 v 7
        (["AS", "3H", "AD", "KC", "8D", "2S"], "PBPBP", ["AS", "AD", "8D"], ["3H", "KC"]),
        (["AS", "3H", "AD", "KC", "9D", "2S"], "PBPBPB", ["AS", "AD", "9D"], ["3H", "KC", "2S"]),
        (["KS", "6H", "KD", "QC", "6D", "2S"], "PBPBPB", ["KS", "KD", "6D"], ["6H", "QC", "2S"]),
    ],
)
def test_next_box_sequences(shoe, route, player, banker):
    p, b, r = deal_with_next_box(shoe)
    assert (r, p, b) == (route, player, banker)
    # Every proper prefix of the hand is incomplete and cannot be settled.
    order = [(box, shoe[i]) for i, box in enumerate(route)]
    for k in range(len(order)):
        pp = [c for box, c in order[:k] if box == "P"]
        bb = [c for box, c in order[:k] if box == "B"]
        assert next_box(pp, bb) == ("player" if order[k][0] == "P" else "banker")
        with pytest.raises(ValueError):
            result(pp, bb)
    assert result(p, b).cards == len(route)


@pytest.mark.parametrize(
    ("player", "banker"),
    [
        ([], ["KS"]),  # Banker first
        (["KS", "KH"], []),  # two Player cards before Banker's first
        (["KS", "KH"], ["2S", "3S", "4S"]),  # Banker third before Player's
        (["KS"], ["2S", "3S"]),
        (["KS", "KH", "2S", "3S"], ["2S", "3S"]),  # four Player cards
        (["KS", "KH", "2S"], ["KS", "QS", "2S", "3S"]),  # four Banker cards
        (["6S", "KH", "2S"], ["KS", "QS"]),  # Player stands on 6, has a third card
        (["9S", "KH", "2S"], ["KS", "QS"]),  # third card after a Player natural
        (["2S", "KH", "2S"], ["7S", "QS", "AH"]),  # Banker 7 never draws
        (["2S", "KH", "8S"], ["3S", "QS", "AH"]),  # Banker 3 stands on Player's 8
        (["6S", "KH"], ["6S", "QS", "AH"]),  # Banker 6 stands when Player stood
    ],
)
def test_impossible_states_raise(player, banker):
    with pytest.raises(ValueError):
        next_box(player, banker)
    with pytest.raises(ValueError):
        result(player, banker)


def test_next_box_rejects_non_cards():
    with pytest.raises(CardError):
        next_box(["XX"], [])
    with pytest.raises(CardError):
        next_box(["2S", "3S", "ZZ"], ["KS", "QS"])


def test_to_data_is_json_ready_and_complete():
    r = result(["2S", "3H", "9D"], ["KH", "QC", "4H"])
    data = r.to_data()
    assert set(data) == {f.name for f in dataclasses.fields(HandResult)}
    assert json.loads(json.dumps(data)) == data
    assert data["player"] == ["2S", "3H", "9D"] and data["banker"] == ["KH", "QC", "4H"]
    assert data == {
        "player": ["2S", "3H", "9D"],
        "banker": ["KH", "QC", "4H"],
        "player_total": 4,
        "banker_total": 4,
        "winner": "tie",
        "natural": False,
        "player_natural": False,
        "banker_natural": False,
        "player_pair": False,
        "banker_pair": False,
        "cards": 6,
        "big": True,
        "small": False,
        "banker_six": False,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.winner = "player"  # type: ignore[misc]


# --------------------------------------------------------------------------
# Exact enumeration through this module's next_box/result.
#
# Cards are grouped into 10 value classes (value 0: T/J/Q/K, 16 per deck;
# values 1-9: 4 per deck). Every hand is walked card by card as next_box
# directs, using one representative card per class, and settled with result.
# The probability of one ordered sequence of classes drawn without
# replacement depends only on how many of each class it uses:
# prod_k (c_k)_(m_k) / (N)_n, with (x)_m the falling factorial. Hands are
# aggregated by (class multiset, outcome) once, then weighted per shoe size
# with exact integers over the common denominator (N)_6.

REPRESENTATIVE = tuple(OF_VALUE[v] for v in range(10))


def falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


@dataclasses.dataclass
class Enumeration:
    tree: Counter  # ordered class sequences per (class multiset, winner, banker_six, cards)
    disagreements: list  # hands where tests/independent_baccarat.py differs


@pytest.fixture(scope="module")
def enumeration() -> Enumeration:
    tree: Counter = Counter()
    disagreements: list = []
    used = [0] * 10
    shoe: list[str] = []
    fields = (
        "winner",
        "player_total",
        "banker_total",
        "player_pair",
        "banker_pair",
        "cards",
        "banker_six",
        "natural",
    )
    mine, theirs = operator.attrgetter(*fields), operator.itemgetter(*fields)

    def walk(player: list[str], banker: list[str]) -> None:
        box = next_box(player, banker)
        if box is None:
            r = result(player, banker)
            tree[(tuple(used), r.winner, r.banker_six, r.cards)] += 1
            # The same hand through the independent implementation; the two
            # padding cards are not cards, so drawing one would show.
            p, b, n = indep.deal([*shoe, "XX", "XX"])
            if (p, b, n) != (player, banker, len(shoe)) or mine(r) != theirs(indep.settle(p, b)):
                disagreements.append(list(shoe))
            return
        for v, c in enumerate(REPRESENTATIVE):
            used[v] += 1
            shoe.append(c)
            if box == "player":
                walk([*player, c], banker)
            else:
                walk(player, [*banker, c])
            shoe.pop()
            used[v] -= 1

    walk([], [])
    return Enumeration(tree, disagreements)


def test_every_value_class_hand_matches_independent(enumeration):
    """Every hand on value-class cards (all 10^6 six-card value sequences, each
    distinct hand once): tests/independent_baccarat.py deals it into the same
    boxes, uses as many cards and settles it the same way.
    """
    assert enumeration.disagreements[:5] == []


def exact_probabilities(tree: Counter, decks: int) -> dict[str, Fraction]:
    counts = [16 * decks] + [4 * decks] * 9
    n_cards = 52 * decks
    denominator = falling(n_cards, 6)
    acc: Counter = Counter()
    for (used, winner, six, cards), orderings in tree.items():
        w = orderings * falling(n_cards - cards, 6 - cards)
        for c, m in zip(counts, used, strict=True):
            if m:
                w *= falling(c, m)
        acc["total"] += w
        acc[winner] += w
        acc["banker_six"] += w if six else 0
        acc["small"] += w if cards == 4 else 0
    assert acc["total"] == denominator  # every deal accounted for exactly once
    return {k: Fraction(v, denominator) for k, v in acc.items() if k != "total"}


def pair_probability(decks: int, side: str) -> Fraction:
    """P(the side's first two cards form a pair), through ``result(...).<side>_pair``.

    A pair depends only on that side's first two cards (shoe positions 1 and 3
    for Player, 2 and 4 for Banker), and any two positions of a shuffled shoe
    are distributed like the first two: ranks r1, r2 with probability
    4d (4d - [r1 = r2]) / (52d (52d - 1)). The other side is given a natural
    so that the hand is complete and can be settled.
    """
    per_rank = 4 * decks
    n = 52 * decks
    total = Fraction(0)
    for r1 in RANKS:
        for r2 in RANKS:
            cards = [r1 + "S", r2 + "H"]  # different suits: pairs ignore suits
            other = ["9C", "KD"]
            r = result(cards, other) if side == "player" else result(other, cards)
            if getattr(r, f"{side}_pair"):
                total += Fraction(per_rank * (per_rank - (r1 == r2)), n * (n - 1))
    return total


def test_enumeration_covers_every_hand_shape(enumeration):
    # Distinct ordered class sequences that complete a hand.
    assert sum(enumeration.tree.values()) == 339_400
    assert {cards for (_, _, _, cards) in enumeration.tree} == {4, 5, 6}


EIGHT_DECKS = {
    "banker": 0.458597,
    "player": 0.446247,
    "tie": 0.095156,
    "banker_six": 0.053864,
    "small": 0.378868,
}
SIX_DECKS = {"banker": 0.458653, "player": 0.446279, "tie": 0.095069}


@pytest.mark.parametrize(("decks", "expected"), [(8, EIGHT_DECKS), (6, SIX_DECKS)])
def test_exact_enumeration_matches_published_figures(enumeration, decks, expected):
    probs = exact_probabilities(enumeration.tree, decks)
    assert probs["banker"] + probs["player"] + probs["tie"] == 1
    for key, published in expected.items():
        assert abs(float(probs[key]) - published) < 5e-7, (decks, key, float(probs[key]))


@pytest.mark.parametrize("decks", [8, 6])
@pytest.mark.parametrize("side", ["player", "banker"])
def test_exact_pair_probability(decks, side):
    p = pair_probability(decks, side)
    per_rank = 4 * decks
    n = 52 * decks
    assert p == Fraction(13 * per_rank * (per_rank - 1), n * (n - 1))
    if decks == 8:
        assert abs(float(p) - 0.074699) < 5e-7
        assert p == Fraction(31, 415)


# --------------------------------------------------------------------------
# Cross-check against the independent implementation


def compare_hand(shoe: list[str]) -> int:
    """Deal one hand from ``shoe`` both ways; assert they agree; return cards used."""
    p1, b1, _ = deal_with_next_box(shoe)
    p2, b2, used = indep.deal(shoe)
    assert (p1, b1) == (p2, b2)
    assert used == len(p1) + len(b1)
    mine = result(p1, b1).to_data()
    theirs = indep.settle(p2, b2)
    assert {k: mine[k] for k in theirs} == theirs
    return used


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(DECK), min_size=6, max_size=6))
def test_matches_independent_on_any_six_cards(prefix):
    # A multi-deck shoe can hold the same card up to `decks` times, so any six
    # cards are a possible shoe prefix.
    compare_hand(prefix)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=8), st.randoms(use_true_random=False))
def test_matches_independent_on_shuffled_shoes(decks, rng):
    shoe = [c for c in DECK for _ in range(decks)]
    rng.shuffle(shoe)
    pos = 0
    while len(shoe) - pos >= 6 and pos < 120:  # consecutive hands from the front
        pos += compare_hand(shoe[pos:])


def test_result_data_is_the_results_data_key_for_key_in_order():
    """The table's ``result_data`` (no HandResult built) says what ``result().to_data()`` says,
    in the same key order, for every hand dealt from shuffled shoes; errors alike."""
    rng = random.Random(17)
    cards = list(DECK) * 8
    rng.shuffle(cards)
    hands = 0
    while len(cards) > 6:
        player: list[str] = []
        banker: list[str] = []
        while (box := next_box(player, banker)) is not None:
            (player if box == "player" else banker).append(cards.pop())
        want = result(player, banker).to_data()
        got = result_data(tuple(player), tuple(banker))
        assert list(got.items()) == list(want.items())
        hands += 1
    assert hands > 70
    for bad in ((["2S"], ["3S"]), (["2S", "3S", "4S"], ["KS", "QS", "ZZ"])):
        with pytest.raises((ValueError, CardError)) as want_e:
            result(*bad)
        with pytest.raises(type(want_e.value), match=re.escape(str(want_e.value))):
            result_data(*bad)
