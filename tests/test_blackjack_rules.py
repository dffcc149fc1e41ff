"""Blackjack rules (seed 003 part III): values, totals, legality, settlement, and the exact check.

The exact check runs the table's own dealer rule (:func:`dealer_draws`) through
every possible draw and compares the dealer's final totals with published
dealer-outcome tables (issue 13, acceptance 2).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from daemon.games.blackjack import rules as r

# -- the exact check ------------------------------------------------------------------

#: Infinite deck, dealer stands on soft 17, no peek (a dealer blackjack counts as 21):
#: the published values issue 13 quotes (the standard infinite-deck S17 dealer table).
INFINITE_S17 = [
    (6, "bust", 0.4232),
    (2, "bust", 0.3536),
    (10, "20", 0.3422),
]

#: Published: Wizard of Odds, "Dealer Probabilities in Blackjack", Blackjack Appendix 2B
#: (wizardofodds.com/games/blackjack/appendix/2b/, last update 2004-07-20), table
#: "1 Deck - Dealer Stands on Soft 17", dealer has not peeked. Columns 17, 18, 19, 20,
#: 21, BJ, Bust; quoted as published, six decimals.
WOO_1DECK_S17 = {
    1: (0.126128, 0.131003, 0.129486, 0.131553, 0.0515646, 0.313726, 0.11654),
    2: (0.138976, 0.131762, 0.131815, 0.123948, 0.120526, 0, 0.352973),
    3: (0.130313, 0.130946, 0.123761, 0.123345, 0.116047, 0, 0.375588),
    4: (0.130973, 0.114163, 0.120679, 0.116286, 0.115096, 0, 0.402803),
    5: (0.119687, 0.123483, 0.116909, 0.104694, 0.106321, 0, 0.428905),
    6: (0.166948, 0.106454, 0.107192, 0.100705, 0.0978785, 0, 0.420823),
    7: (0.372345, 0.138583, 0.0773344, 0.0788967, 0.072987, 0, 0.259854),
    8: (0.130857, 0.362989, 0.129445, 0.0682898, 0.0697914, 0, 0.238627),
}


@pytest.mark.parametrize(("up", "final", "published"), INFINITE_S17)
def test_infinite_deck_dealer_outcomes_match_the_published_table(
    up: int, final: str, published: float
) -> None:
    dist = r.dealer_distribution(up)
    assert round(float(dist[final]), 4) == published
    assert sum(dist.values()) == 1


@pytest.mark.parametrize("up", sorted(WOO_1DECK_S17))
def test_single_deck_dealer_outcomes_match_wizard_of_odds_to_4_decimals(up: int) -> None:
    """A finite shoe, dealt without replacement: the same rule, a second published table."""
    dist = r.dealer_distribution(up, decks=1, blackjack_apart=True)
    got = [float(dist[k]) for k in r.FINALS]
    for name, g, want in zip(r.FINALS, got, WOO_1DECK_S17[up], strict=True):
        assert abs(g - want) < 5e-5, (up, name, g, want)


def test_every_up_card_infinite_deck_rows_sum_to_one_and_a_big_shoe_tends_to_it() -> None:
    for up in range(1, 11):
        inf = r.dealer_distribution(up)
        assert sum(inf.values()) == 1
        assert set(inf) == {"17", "18", "19", "20", "21", "bust"}
    # 8 decks sits between one deck and the infinite deck for a 6 up (cards removed matter)
    eight = r.dealer_distribution(6, decks=8)["bust"]
    one = r.dealer_distribution(6, decks=1)["bust"]
    inf6 = r.dealer_distribution(6)["bust"]
    assert min(one, inf6) < eight < max(one, inf6)


# -- values and totals ------------------------------------------------------------------


def test_card_values_seed_003_part_iii_1_5() -> None:
    assert [r.value(c) for c in ("2S", "9H", "TD", "JC", "QS", "KH", "AD")] == [
        2,
        9,
        10,
        10,
        10,
        10,
        1,
    ]
    with pytest.raises(ValueError):
        r.value("1X")


def test_soft_and_hard_totals() -> None:
    assert r.total(["AS", "6H"]) == r.Total(17, True)
    assert r.total(["AS", "6H", "TD"]) == r.Total(17, False)
    assert r.total(["AS", "AH"]) == r.Total(12, True)
    assert r.total(["AS", "AH", "9D"]) == r.Total(21, True)
    assert r.total(["TS", "6H", "9D"]).bust
    assert r.total(["AS", "KD"]).text() == "soft 21"


def test_blackjack_is_two_cards_ace_and_ten_not_after_a_split() -> None:
    assert r.is_blackjack(["AS", "KD"])
    assert r.is_blackjack(["TD", "AH"])
    assert not r.is_blackjack(["AS", "KD"], split=True)  # §2.7: 21, not blackjack
    assert not r.is_blackjack(["AS", "5D", "5H"])


def test_dealer_draws_to_16_and_stands_on_soft_17() -> None:
    assert r.dealer_draws(["TS", "6H"])
    assert not r.dealer_draws(["AS", "6H"])  # soft 17 stands (§4.4.2)
    assert not r.dealer_draws(["TS", "7H"])
    assert r.dealer_draws(["AS", "5H"])  # soft 16 draws


# -- legality -----------------------------------------------------------------------------


def _h(*cards: str, **kw: bool) -> r.HandView:
    return r.HandView(tuple(cards), **kw)


def test_hit_refusals_name_the_rule() -> None:
    assert r.can_hit(_h("TS", "6H"), split_aces_one_card=True) is None
    assert "21" in (r.can_hit(_h("TS", "5H", "6D"), split_aces_one_card=True) or "")
    assert "blackjack" in (r.can_hit(_h("AS", "KH"), split_aces_one_card=True) or "")
    assert "bust" in (r.can_hit(_h("TS", "5H", "8D"), split_aces_one_card=True) or "")
    assert "one card" in (
        r.can_hit(_h("5S", "5H", "2D", doubled=True), split_aces_one_card=True) or ""
    )
    assert "split aces" in (
        r.can_hit(_h("AS", "5H", split=True, split_aces=True), split_aces_one_card=True) or ""
    )
    assert r.can_hit(_h("AS", "5H", split=True, split_aces=True), split_aces_one_card=False) is None


def test_double_only_on_two_cards_and_house_limits() -> None:
    kw = {"double_on": "any", "double_after_split": False, "split_aces_one_card": True}
    assert r.can_double(_h("5S", "6H"), **kw) is None
    assert "first two cards" in (r.can_double(_h("2S", "3H", "4D"), **kw) or "")
    assert "after a split" in (r.can_double(_h("5S", "6H", split=True), **kw) or "")
    assert r.can_double(_h("5S", "6H", split=True), **{**kw, "double_after_split": True}) is None
    assert "9, 10 or 11" in (r.can_double(_h("5S", "3H"), **{**kw, "double_on": "9-11"}) or "")
    assert "10 or 11" in (r.can_double(_h("AS", "9H"), **{**kw, "double_on": "10-11"}) or "")


def test_split_identical_value_once() -> None:
    assert r.can_split([_h("8S", "8H")]) is None
    assert r.can_split([_h("KS", "TH")]) is None  # identical value (§2.7)
    assert "identical value" in (r.can_split([_h("8S", "9H")]) or "")
    assert "once" in (r.can_split([_h("8S", "3H"), _h("8H", "8D")]) or "")
    assert "first two" in (r.can_split([_h("8S", "8H", "2D")]) or "")


# -- settlement ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("player", "dealer", "kw", "outcome", "net"),
    [
        (["TS", "9H"], ["TD", "7C"], {}, "win", 1),
        (["AS", "KH"], ["TD", "7C"], {}, "blackjack", Fraction(3, 2)),
        (["AS", "KH"], ["AD", "QC"], {}, "push", 0),  # both blackjack (§2.2)
        (["7S", "7H", "7D"], ["AD", "QC"], {}, "lose", -1),  # 21 loses to blackjack (§2.2)
        (["TS", "6H", "9D"], ["TD", "6C", "8S"], {}, "bust", -1),  # bust loses even if dealer busts
        (["TS", "8H"], ["TD", "8C"], {}, "push", 0),
        (["5S", "6H", "TD"], ["TD", "6C", "9S"], {"doubled": True}, "win", 2),
        (["5S", "6H", "2D"], ["TD", "8C"], {"doubled": True}, "lose", -2),
        (["AS", "KH"], ["TD", "8C"], {"split": True}, "win", 1),  # split ace + ten is 21
        (
            ["5S", "6H", "TD"],
            ["AD", "KC"],
            {"doubled": True, "dealer_blackjack_takes": "original"},
            "lose",
            -1,
        ),
        (["AS", "KH"], ["TD", "8C"], {"blackjack_pays": "6:5"}, "blackjack", Fraction(6, 5)),
    ],
)
def test_settlement_seed_003_part_iii_2_1_to_2_3(
    player: list[str], dealer: list[str], kw: dict, outcome: str, net: Fraction
) -> None:
    res = r.settle_hand(player, dealer, **kw)
    assert res.outcome == outcome
    assert res.net == net


def test_insurance_pays_2_to_1_on_half_the_bet() -> None:
    assert r.settle_insurance(["AS", "KD"]) == ("win", Fraction(1))
    assert r.settle_insurance(["AS", "9D"]) == ("lose", Fraction(-1, 2))


def test_payout_ratio_text() -> None:
    assert r.ratio("3:2") == Fraction(3, 2)
    with pytest.raises(ValueError):
        r.ratio("3/2")
