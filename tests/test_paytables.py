"""The house edge of every bet spot of every shipped paytable, through tabled_client's settle.

Each game's outcomes are enumerated exhaustively with their exact probabilities (8-deck
baccarat by card values with multiplicities, drawn without replacement; Dragon Tiger's
169 rank pairs; Sic Bo's 216 rolls; 37 pockets; every Pai Gow deal of the positions a
bet reads), each outcome made into a result event and every spot settled on it. The edge
equals the published figure where there is one (cited) and the exact figure computed
here otherwise. Baccarat's values are the rules' own (daemon.games.baccarat.rules), so
the drawing rules under the enumeration are the table's.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction as F
from itertools import product

import pytest
from tabled_client.paytables import SHIPPED
from tabled_client.settle import settle, spots

from daemon.games.baccarat import rules as bac

DECKS = 8


def edge(outcomes: dict[tuple, F], event, spot: str, table) -> F:
    """The house's share of a unit stake: 1 - sum(p * return)."""
    back = sum((p * settle(event(k), spot, 1, table) for k, p in outcomes.items()), F(0))
    return 1 - back


def pct(x: F) -> float:
    return round(float(x) * 100, 4)


# -- baccarat -------------------------------------------------------------------------------------


def _baccarat_outcomes() -> dict[tuple, F]:
    """(winner, banker_total, cards) -> probability, over an 8-deck shoe by card values."""
    counts = [16 * DECKS] + [4 * DECKS] * 9  # value 0: 10, J, Q, K
    n0 = 52 * DECKS
    out: Counter[tuple] = Counter()
    for p1, b1, p2, b2 in product(range(10), repeat=4):
        c = counts[:]
        w = 1
        for v in (p1, b1, p2, b2):
            w *= c[v]
            c[v] -= 1
        if w == 0:
            continue
        _deal_rest([p1, p2], [b1, b2], c, w, n0 - 4, out)
    denom = n0 * (n0 - 1) * (n0 - 2) * (n0 - 3) * (n0 - 4) * (n0 - 5)
    return {k: F(w, denom) for k, w in out.items()}


def _deal_rest(player, banker, c, w, left, out) -> None:
    pt, bt = sum(player) % 10, sum(banker) % 10
    if pt >= 8 or bt >= 8:
        _end(pt, bt, 4, w * left * (left - 1), out)
        return
    if pt <= 5:  # the player draws (art. 9)
        for v3 in range(10):
            if not c[v3]:
                continue
            w3 = w * c[v3]
            c[v3] -= 1
            pt3 = (pt + v3) % 10
            if bac.banker_draws(bt, v3):
                for v4 in range(10):
                    if c[v4]:
                        _end(pt3, (bt + v4) % 10, 6, w3 * c[v4], out)
            else:
                _end(pt3, bt, 5, w3 * (left - 1), out)
            c[v3] += 1
        return
    if bt <= 5:  # the player stood: the banker draws on 0-5
        for v4 in range(10):
            if c[v4]:
                _end(pt, (bt + v4) % 10, 5, w * c[v4] * (left - 1), out)
        return
    _end(pt, bt, 4, w * left * (left - 1), out)


def _end(pt: int, bt: int, cards: int, w: int, out) -> None:
    winner = "player" if pt > bt else "banker" if bt > pt else "tie"
    out[winner, bt, cards] += w


def _bac_event(k: tuple) -> dict:
    winner, bt, cards = k
    return {
        "type": "hand.result",
        "data": {
            "shoe": 1,
            "hand": 1,
            "winner": winner,
            "banker_total": bt,
            "player_total": 0,
            "player_pair": False,
            "banker_pair": False,
            "cards": cards,
            "big": cards > 4,
            "small": cards == 4,
            "big_small_open": True,
            "paytable": "",
        },
    }


def _pair_outcomes() -> dict[tuple, F]:
    """A side's first two cards by their 13 ranks: a pair (same rank) or not."""
    n, per = 52 * DECKS, 4 * DECKS
    pair = F(13 * per * (per - 1), n * (n - 1))
    return {(True,): pair, (False,): 1 - pair}


#: Wizard of Odds, "Baccarat" (8 decks): banker 1.0579 %, player 1.2351 %, tie 8:1 14.3596 %;
#: "Baccarat side bets", player/banker pair at 11:1 (8 decks) 10.36 %; "No Commission
#: Baccarat" (banker pays 1:2 on a winning 6) 1.4581 %.
PUBLISHED_BACCARAT = {
    ("commission", "banker"): 1.0579,
    ("commission", "player"): 1.2351,
    ("commission", "tie"): 14.3596,
    ("no-commission", "banker"): 1.4581,
    ("no-commission", "player"): 1.2351,
    ("no-commission", "tie"): 14.3596,
}
#: exact here: the pairs 43/415 (10.3614 %, the published 10.36 %), the rest from the enumeration
EXACT_BACCARAT = {
    "player_pair": F(43, 415),
    "banker_pair": F(43, 415),
}


def test_baccarat_every_spot_of_every_paytable():
    outcomes = _baccarat_outcomes()
    assert sum(outcomes.values()) == 1
    for (game, name), table in SHIPPED.items():
        if game != "baccarat":
            continue
        for spot in sorted(spots("baccarat")):
            if spot not in table.pays:
                continue
            if spot in ("player_pair", "banker_pair"):
                pairs = _pair_outcomes()

                def ev(k, spot=spot):
                    e = _bac_event(("tie", 0, 4))
                    e["data"][spot] = k[0]
                    e["data"]["winner"] = "player"
                    return e

                got = edge(pairs, ev, spot, table)
                assert got == EXACT_BACCARAT[spot], (name, spot)
                assert pct(got) == pytest.approx(10.36, abs=0.005)
                continue
            got = edge(outcomes, _bac_event, spot, table)
            if (name, spot) in PUBLISHED_BACCARAT:
                assert pct(got) == PUBLISHED_BACCARAT[name, spot], (name, spot, float(got))
            else:
                assert got == _baccarat_exact(outcomes, name, spot), (name, spot)


def _baccarat_exact(outcomes: dict[tuple, F], name: str, spot: str) -> F:
    """The other spots' edges straight from the outcome probabilities and the seeds' ratios."""

    def p(pred) -> F:
        return sum((q for k, q in outcomes.items() if pred(*k)), F(0))

    if spot == "super6":  # seed 004: 12:1 on a banker win with six
        win = p(lambda w, bt, c: w == "banker" and bt == 6)
        return 1 - 13 * win
    if spot == "big":  # seed 004: 0.52:1 on 5 or 6 cards
        return 1 - F(152, 100) * p(lambda w, bt, c: c > 4)
    if spot == "small":  # seed 004: 1.5:1 on 4 cards
        return 1 - F(5, 2) * p(lambda w, bt, c: c == 4)
    raise AssertionError(spot)


# -- Dragon Tiger ---------------------------------------------------------------------------------


def test_dragon_tiger_every_spot():
    per, n = 4 * DECKS, 52 * DECKS
    outcomes: Counter[tuple] = Counter()
    for d, t in product(range(13), repeat=2):
        outcomes["dragon" if d > t else "tiger" if t > d else "tie",] += F(
            per * (per - (d == t)), n * (n - 1)
        )
    assert sum(outcomes.values()) == 1

    def ev(k):
        return {
            "type": "hand.result",
            "data": {"shoe": 1, "hand": 1, "winner": k[0], "dragon": "", "paytable": "standard"},
        }

    table = SHIPPED["dragon-tiger", "standard"]
    # Wizard of Odds, "Dragon Tiger" (8 decks, half lost on a tie): dragon and tiger 3.7349 %
    assert pct(edge(outcomes, ev, "dragon", None)) == 3.7349
    assert pct(edge(outcomes, ev, "tiger", table)) == 3.7349
    # the tie at the seed's 10:1: P(tie) = 31/415, edge = 1 - 11 * 31/415 = 74/415 (17.8313 %)
    assert edge(outcomes, ev, "tie", table) == F(74, 415)


# -- Sic Bo ---------------------------------------------------------------------------------------


#: Wizard of Odds, "Sic Bo": small/big 2.78 %, single number (1/2/3) 7.87 %, two-dice
#: combination 5:1 16.67 %; the rest exact: the seed's odds over 216 rolls (its any triple
#: pays 24:1, not the 30:1 of the published 13.89 %)
SICBO = {
    "small": F(1, 36),
    "big": F(1, 36),
    **{f"single:{n}": F(17, 216) for n in range(1, 7)},
    "any_triple": F(11, 36),  # 1 - 25 * 6/216
    **{f"combination:{a}-{b}": F(1, 6) for a in range(1, 7) for b in range(a + 1, 7)},
    **{f"triple:{n}": F(65, 216) for n in range(1, 7)},  # 1 - 151/216
    **{f"double:{n}": F(1, 3) for n in range(1, 7)},  # 1 - 9 * 16/216
}


def test_sicbo_every_spot():
    rolls = {tuple(f): F(1, 216) for f in product(range(1, 7), repeat=3)}

    def ev(k):
        return {
            "type": "dice.result",
            "data": {"round": 1, "faces": list(k), "paytable": "standard"},
        }

    table = SHIPPED["sicbo", "standard"]
    ways = Counter(sum(f) for f in rolls)
    pays = {4: 50, 17: 50, 5: 18, 16: 18, 6: 14, 15: 14, 7: 12, 14: 12, 8: 8, 13: 8}
    for spot in sorted(spots("sicbo")):
        got = edge(rolls, ev, spot, table)
        if spot.startswith("total:"):
            n = int(spot[6:])
            assert got == 1 - F(ways[n], 216) * (1 + pays.get(n, 6)), spot  # seed 002, 点数
        else:
            assert got == SICBO[spot], spot
    assert pct(SICBO["small"]) == 2.7778 and pct(SICBO["single:1"]) == 7.8704
    assert pct(SICBO["combination:1-2"]) == 16.6667


# -- roulette -------------------------------------------------------------------------------------


def test_roulette_every_spot_both_paytables():
    pockets = {(n,): F(1, 37) for n in range(37)}

    def ev(k):
        return {
            "type": "spin.result",
            "data": {"number": k[0], "layout": "single-zero", "paytable": "european"},
        }

    even_money = ("red", "black", "odd", "even", "low", "high")
    for name in ("european", "european-la-partage"):
        table = SHIPPED["roulette", name]
        for spot in sorted(spots("roulette")):
            got = edge(pockets, ev, spot, table)
            if name == "european-la-partage" and spot in even_money:
                # la partage: half back on 0: 1/74 (1.3514 %, Wizard of Odds "La Partage")
                assert got == F(1, 74) and pct(got) == 1.3514, spot
            else:
                # single zero: 1/37 on every bet, 2.7027 % (Wizard of Odds, "Roulette")
                assert got == F(1, 37) and pct(got) == 2.7027, (name, spot)
    # straights, splits (24 across, 33 down, 3 with 0), streets and the 0-1-2/0-2-3 trios,
    # corners, the first four, six-lines, columns, dozens, the six even-money bets
    assert len(spots("roulette")) == 37 + 57 + 3 + 12 + 2 + 22 + 1 + 11 + 3 + 3 + 6


def test_roulette_double_zero_every_spot():
    """The house's double-zero wheel: 38 pockets (00 reported as 37), every spot at 1/19
    (5.2632 %, Wizard of Odds "American roulette"), the top line 0-00-1-2-3 at 6:1 3/38
    (7.8947 %, the published 7.89 %)."""
    pockets = {(n,): F(1, 38) for n in (*range(37), 37)}

    def ev(k):
        return {
            "type": "spin.result",
            "data": {"number": k[0], "layout": "double-zero", "paytable": "american"},
        }

    table = SHIPPED["roulette", "american"]
    names = spots("roulette", "double-zero")
    for spot in sorted(names):
        got = edge(pockets, ev, spot, None)
        if spot == "top_line":
            assert got == F(3, 38) and pct(got) == 7.8947
        else:
            assert got == F(1, 19) and pct(got) == 5.2632, spot
    # the single-zero layout's 0 splits, trios and first four give way to 0-00, 0-1, 0-2,
    # 00-2, 00-3, 0-1-2, 0-00-2, 00-2-3 and the top line
    assert len(names) == len(spots("roulette")) + 1 + 5 - 3 + 3 - 2 + 1 - 1
    assert {"straight:00", "split:0-00", "street:00-2-3", "top_line"} <= names
    from tabled_client.settle import SettleError

    with pytest.raises(
        SettleError, match='paytable "european" is for a single-zero wheel; this one is double-zero'
    ):
        settle(ev((37,)), "red", 10, SHIPPED["roulette", "european"])
    with pytest.raises(SettleError, match='no bet spot "first_four" on a double-zero wheel'):
        settle(ev((0,)), "first_four", 10, table)
    assert settle(ev((37,)), "straight:00", 10) == 360 and settle(ev((37,)), "red", 10) == 0


# -- Mahjong Pai Gow ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zero_hands", "p_win"),
    # pinned from this enumeration: identical hands and equal ranks go to the banker (seed 002),
    # so a position wins a little under half its deals
    [("equal", F(4783, 9690)), ("by-high-tile", F(321, 646))],
)
def test_paigow_every_spot_by_every_deal(zero_hands, p_win):
    """Every deal of the banker's and a position's two tiles from the 20 (a position's bets
    read those four tiles only, and every position's are alike): each position's win, lose and
    pair bets, under both house rules for the unlisted 0-point hands."""
    from daemon.games.paigow import rules as pg

    copies = dict(pg.DEFAULT_SET)  # the 20 tiles: ten kinds, two of each (seed 002)
    outcomes: Counter[tuple] = Counter()
    total = 0
    for b1, b2, p1, p2 in product(copies, repeat=4):  # by kind, weighted by the copies left
        left = dict(copies)
        w = 1
        for t in (b1, b2, p1, p2):
            w *= left[t]
            left[t] -= 1
        if not w:
            continue
        total += w
        player, banker = pg.hand([p1, p2], zero_hands), pg.hand([b1, b2], zero_hands)
        outcomes["win" if pg.player_wins(player, banker) else "lose", player.pair] += w
    assert total == 20 * 19 * 18 * 17
    outcomes = {k: F(w, total) for k, w in outcomes.items()}

    def ev(k):
        rows = [{"position": p, "result": k[0], "pair": k[1]} for p in pg.PLAYERS]
        return {
            "type": "round.result",
            "data": {"round": 1, "positions": rows, "paytable": "standard"},
        }

    table = SHIPPED["paigow", "standard"]
    assert sum((p for k, p in outcomes.items() if k[0] == "win"), F(0)) == p_win
    # 10 pairs of 2 tiles each from 20: P(pair) = 10 / C(20, 2) = 1/19
    assert sum((p for k, p in outcomes.items() if k[1]), F(0)) == F(1, 19)
    for position in pg.PLAYERS:
        # seed 002: win and lose bets 1:1 less 5 % (1.95 back), pair 6:1 (7 back)
        assert edge(outcomes, ev, f"win:{position}", table) == 1 - F(195, 100) * p_win
        assert edge(outcomes, ev, f"lose:{position}", table) == 1 - F(195, 100) * (1 - p_win)
        assert edge(outcomes, ev, f"pair:{position}", table) == F(12, 19)  # 1 - 7/19


# -- bad input: a one-line reason ----------------------------------------------------------------


def _spin(number: int = 17, paytable: str = "european") -> dict:
    return {
        "type": "spin.result",
        "data": {"number": number, "layout": "single-zero", "paytable": paytable},
    }


@pytest.mark.parametrize(
    ("result", "spot", "stake", "says"),
    [
        (_spin(), "banker", 10, 'roulette has no bet spot "banker"'),
        (_spin(), "split:1-5", 10, 'roulette has no bet spot "split:1-5"'),
        (_spin(), "straight:17", 0, "stake 0 is not a positive amount"),
        (_spin(), "straight:17", -5, "stake -5 is not a positive amount"),
        (_spin(), "straight:17", 2.5, "not a float"),
        (_spin(), "straight:17", "ten", "stake 'ten' is not an amount"),
        (_spin(paytable="nope"), "red", 10, 'no paytable "nope" for roulette'),
        ({"type": "hand.void", "data": {}}, "player", 10, "hand.void is not a result"),
        ("17", "red", 10, "a result is an event"),
    ],
)
def test_settle_refuses_with_one_line(result, spot, stake, says):
    from tabled_client.settle import SettleError

    with pytest.raises(SettleError) as e:
        settle(result, spot, stake)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_settle_refuses_a_paytable_of_another_game_and_a_bet_not_offered():
    from tabled_client.settle import SettleError

    with pytest.raises(
        SettleError, match="paytable \"commission\" is baccarat's; this result is roulette's"
    ):
        settle(_spin(), "red", 10, SHIPPED["baccarat", "commission"])
    hand = _bac_event(("banker", 6, 4))
    hand["data"]["paytable"] = "commission"
    with pytest.raises(
        SettleError, match='paytable "commission" \\(baccarat\\) offers no super6 bet'
    ):
        settle(hand, "super6", 10)
    hand["data"]["big_small_open"] = False
    with pytest.raises(SettleError, match="big is not offered on hand 1"):
        settle(hand, "big", 10)


def test_settle_is_exact_money():
    from decimal import Decimal

    hand = _bac_event(("banker", 7, 4))
    hand["data"]["paytable"] = "commission"
    assert settle(hand, "banker", Decimal("10.10")) == F("19.695")  # 10.10 + 0.95 * 10.10
    assert settle(hand, "banker", "0.01") == F("0.0195")
    hand["data"].update(banker_total=6, paytable="no-commission")
    assert settle(hand, "banker", 10) == 15  # seed 004: a banker win on 6 pays 1:0.5
    assert settle(hand, "super6", 10) == 130
    dt = {"type": "hand.result", "data": {"winner": "tie", "dragon": "5H", "paytable": "standard"}}
    assert settle(dt, "dragon", 10) == 5 and settle(dt, "tie", 10) == 110  # seed 002
    assert settle(_spin(0, "european-la-partage"), "red", 10) == 5
    assert settle(_spin(0), "red", 10) == 0 and settle(_spin(0), "straight:0", 10) == 360


# -- blackjack: what each hand.result states ------------------------------------------------------


def test_blackjack_boxes_and_insurance_from_every_captured_round():
    """Every box of every blackjack round in the captures (splits, doubles, blackjacks, insurance
    won and lost): a box returns its stake times (1 + its net) less its insurance part, exactly."""
    import json
    from pathlib import Path

    from tabled_client.settle import SettleError

    seen = Counter()
    for path in sorted((Path(__file__).parent / "captures" / "blackjack").glob("*.expected.jsonl")):
        for raw in path.read_text().splitlines():
            e = json.loads(raw)
            if e["type"] != "hand.result":
                continue
            for b in e["data"]["boxes"]:
                ins = b["insurance"] or {}
                ins_net = F(str(ins["net"])) if ins.get("taken") else F(0)
                main = F(str(b["net"])) - ins_net  # in units of the box's bet
                stake = sum(h["bet"] for h in b["hands"])
                assert settle(e, f"box:{b['box']}", 10) == 10 * (stake + main)
                if ins.get("taken"):
                    # seed 003 part III §2.5.3: insurance pays 2:1, else it is lost
                    want = 30 if ins["outcome"] == "win" else 0
                    assert settle(e, f"insurance:{b['box']}", 10) == want
                    seen["ins-" + ins["outcome"]] += 1
                else:
                    with pytest.raises(SettleError, match=f"box {b['box']} took no insurance"):
                        settle(e, f"insurance:{b['box']}", 10)
                seen["split"] += b["split"]
                seen["double"] += any(h["bet"] == 2 for h in b["hands"])
                seen["blackjack"] += any(h["outcome"] == "blackjack" for h in b["hands"])
            absent = next(n for n in range(1, 8) if n not in {b["box"] for b in e["data"]["boxes"]})
            with pytest.raises(SettleError, match=f"box {absent} was not in play"):
                settle(e, f"box:{absent}", 10)
    assert all(seen[k] > 0 for k in ("ins-win", "ins-lose", "split", "double", "blackjack")), seen


def test_the_spot_vocabulary_is_documented():
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "settlement.md").read_text()
    for game in ("baccarat", "dragon-tiger", "sicbo", "roulette", "paigow", "blackjack"):
        kinds = {s.partition(":")[0] for s in spots(game)}
        missing = [k for k in sorted(kinds) if f"`{k}" not in text]
        assert not missing, (game, missing)


# -- the long variant: every deal by rank, through the table's own rules --------------------------


@pytest.mark.campaign
def test_baccarat_every_deal_through_the_tables_rules():
    """The first four cards by their 13 ranks, the third cards by value, each complete deal made
    a hand.result by the rules' result_data and next_box (the table's own code), every spot of
    both paytables settled on it: the same exact edges as the fast enumeration above, the pairs
    included jointly with the rest (about a million deals, ~20 s)."""
    ranks = "A23456789TJQK"
    n0, per = 52 * DECKS, 4 * DECKS
    by_value = {v: [r for r in ranks if bac.card_value(r + "S") == v] for v in range(10)}
    facts: Counter[tuple] = Counter()
    sample: dict[tuple, dict] = {}

    def leaf(player, banker, w):
        d = bac.result_data(player, banker)
        key = (d["winner"], d["banker_total"], d["cards"], d["player_pair"], d["banker_pair"])
        facts[key] += w
        sample.setdefault(key, d)

    def deal(player, banker, counts, w, left):
        due = bac.next_box(player, banker)
        if due is None:
            # the cards not dealt: every order of the rest, so each deal weighs the same
            for k in range(6 - len(player) - len(banker)):
                w *= left - k
            leaf(player, banker, w)
            return
        for rs in by_value.values():
            c = sum(counts[r] for r in rs)
            if not c:
                continue
            r = rs[0]  # a third card's rank changes no bet: one of its value stands for all
            took = next(x for x in rs if counts[x])
            counts[took] -= 1
            card = r + "S"
            nxt = ([*player, card], banker) if due == "player" else (player, [*banker, card])
            deal(*nxt, counts, w * c, left - 1)
            counts[took] += 1

    for p1, b1, p2, b2 in product(ranks, repeat=4):
        counts = dict.fromkeys(ranks, per)
        w = 1
        for r in (p1, b1, p2, b2):
            w *= counts[r]
            counts[r] -= 1
        deal([p1 + "S", p2 + "S"], [b1 + "S", b2 + "S"], counts, w, n0 - 4)
    denom = n0 * (n0 - 1) * (n0 - 2) * (n0 - 3) * (n0 - 4) * (n0 - 5)
    probs = {k: F(w, denom) for k, w in facts.items()}
    assert sum(probs.values()) == 1
    fast = _baccarat_outcomes()

    def ev(k):
        return {"type": "hand.result", "data": {**sample[k], "big_small_open": True, "hand": 1}}

    for name in ("commission", "no-commission"):
        table = SHIPPED["baccarat", name]
        for spot in sorted(spots("baccarat")):
            if spot not in table.pays:
                continue
            got = edge(probs, ev, spot, table)
            if spot in EXACT_BACCARAT:
                assert got == EXACT_BACCARAT[spot], (name, spot)
            else:
                assert got == edge(fast, _bac_event, spot, table), (name, spot)
