"""The seed's ranking table, row by row (seed 002, 麻雀排九, 大小), and the deal and verdict rules.

Each check restates a rule in its own words and compares it with the rules
module: the seed's row order against "pairs above points, then points, then
the hand holding a white tile, then the higher tile", not the module's
order against itself.
"""

from __future__ import annotations

from itertools import combinations_with_replacement

import msgspec
import pytest

from daemon.games.paigow import rules
from daemon.games.paigow.rules import SEED_TABLE, hand, player_wins

TILES = rules.GAME_TILES
ALL_HANDS = list(combinations_with_replacement(TILES, 2))


def v(t: str) -> int:
    return 0 if t == "wd" else int(t[0])


def test_the_seed_table_has_every_row_once():
    rows = [tuple(sorted((a, b))) for _, a, b in SEED_TABLE]
    assert len(SEED_TABLE) == 50  # 10 pairs and 40 points rows, as the seed prints them
    assert len(set(rows)) == len(rows)
    assert all(a in TILES and b in TILES for _, a, b in SEED_TABLE)


@pytest.mark.parametrize("row", range(len(SEED_TABLE)))
def test_each_row_is_what_the_seed_says_it_is(row):
    label, a, b = SEED_TABLE[row]
    h = hand([b, a])  # either order of the tiles is the same hand
    if label == "pair":
        assert a == b and h.pair and h.name.startswith("pair")
    else:
        assert a != b and not h.pair
        assert h.points == label == (v(a) + v(b)) % 10  # 取其个位数字, white counts 0
        assert h.name.startswith(f"{label} point{'' if label == 1 else 's'} (")


@pytest.mark.parametrize("row", range(len(SEED_TABLE) - 1))
def test_each_row_beats_the_next(row):
    """The row above wins as a player against the row below as banker, and never the reverse."""
    (la, a1, a2), (lb, b1, b2) = SEED_TABLE[row], SEED_TABLE[row + 1]
    upper, lower = hand([a1, a2]), hand([b1, b2])
    assert player_wins(upper, lower)
    assert not player_wins(lower, upper)
    # and the reason is the seed's rule, stated independently of the module's order
    if la == "pair" and lb == "pair":
        assert v(a1) == 0 or (v(b1) != 0 and v(a1) > v(b1))  # white pair, then 9-9 down to 1-1
    elif la == "pair":
        assert lb == 9  # the lowest pair sits right above the best 9
    elif la == lb:
        # within equal points: the hand holding a white tile first, then the higher tile
        assert "wd" in (a1, a2) or max(v(a1), v(a2)) > max(v(b1), v(b2))
        assert "wd" not in (b1, b2)
    else:
        assert isinstance(la, int) and isinstance(lb, int) and la == lb + 1


def test_pairs_rank_above_every_points_hand():
    pairs = [hand(h) for h in ALL_HANDS if h[0] == h[1]]
    points = [hand(h) for h in ALL_HANDS if h[0] != h[1]]
    assert len(pairs) == 10 and len(points) == 45
    for p in pairs:
        for q in points:
            assert player_wins(p, q) and not player_wins(q, p)


def test_more_points_beat_fewer_points():
    points = [hand(h) for h in ALL_HANDS if h[0] != h[1]]
    for p in points:
        for q in points:
            if p.points > q.points:
                assert player_wins(p, q), (p, q)


def test_three_five_goes_after_two_six_by_the_tables_own_rule():
    h35, h26, w7 = hand(["5p", "3p"]), hand(["2p", "6p"]), hand(["wd", "7p"])
    assert h35.points == 8
    assert h35.rank == h26.rank + 1 and w7.rank == h35.rank + 1


def test_unlisted_zero_hands_are_lowest_and_equal_by_default():
    listed = [hand([a, b]) for _, a, b in SEED_TABLE]
    zeros = [hand(z) for z in rules.ZERO_HANDS]
    assert {z.points for z in zeros} == {0}
    worst_listed = max(h.rank for h in [*listed, hand(rules.MISSING_EIGHT)])
    for z in zeros:
        assert z.rank > worst_listed
    assert len({z.rank for z in zeros}) == 1
    # equal: the banker wins either way
    assert not player_wins(zeros[0], zeros[1]) and not player_wins(zeros[1], zeros[0])
    ordered = [hand(z, "by-high-tile") for z in rules.ZERO_HANDS]
    assert [h.rank for h in ordered] == sorted(h.rank for h in ordered)
    assert player_wins(ordered[0], ordered[1])  # 1-9 beats 2-8 by the higher tile


@pytest.mark.parametrize("tiles", ALL_HANDS)
def test_identical_hands_go_to_the_banker(tiles):
    h = hand(tiles)
    assert not player_wins(h, hand(tuple(reversed(tiles))))


def test_every_hand_of_the_game_has_a_rank():
    ranks = sorted(hand(h).rank for h in ALL_HANDS)
    assert ranks[0] == 1 and hand(["wd", "wd"]).rank == 1
    assert len(set(ranks)) == 51 + 1  # 51 ordered hands, the four zeros share the last rank


def test_not_a_hand_of_this_game():
    with pytest.raises(ValueError, match="not a tile of this game: rd"):
        hand(["rd", "1p"])
    with pytest.raises(ValueError, match="two tiles"):
        hand(["1p"])


# -- the deal ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "first"),
    [
        (3, "player2"),
        (6, "player5"),
        (7, "banker"),
        (8, "player1"),
        (12, "player5"),
        (13, "banker"),
        (18, "player5"),
    ],
)
def test_the_dice_count_from_the_banker_as_one(total, first):
    dice = (1, 1, total - 2) if total - 2 <= 6 else (6, total - 8, 2)
    assert sum(dice) == total
    assert rules.first_position(dice) == first


def test_deal_order_stacks_and_rotation():
    assert rules.deal_order("player4") == (
        "player4",
        "player4",
        "player5",
        "player5",
        "banker",
        "banker",
        "player1",
        "player1",
        "player2",
        "player2",
        "player3",
        "player3",
    )
    rot = rules.deal_order("banker", "rotation")
    assert rot[:6] == rules.POSITIONS and rot[6:] == rules.POSITIONS


def test_verdict_names_winners_and_pairs():
    hands = {
        "banker": ["5p", "3p"],  # 8 points, after 2-6
        "player1": ["2p", "6p"],  # 8 points, above 3-5: wins
        "player2": ["3p", "5p"],  # identical to the banker: loses
        "player3": ["1p", "1p"],  # the lowest pair beats any points
        "player4": ["wd", "7p"],  # 7 points: loses
        "player5": ["4p", "6p"],  # 0 points: loses
    }
    out = rules.verdict(hands)
    assert out["winners"] == ["player1", "player3"]
    assert out["pairs"] == ["player3"]
    rows = {r["position"]: r for r in out["positions"]}  # type: ignore[union-attr]
    assert rows["player2"]["result"] == "lose" and rows["player2"]["name"] == "8 points (3-5)"
    assert "result" not in rows["banker"]
    assert msgspec.json.decode(msgspec.json.encode(out)) == out


def test_tile_sets():
    assert rules.tile_set_problem(rules.DEFAULT_SET) is None
    assert sum(rules.DEFAULT_SET.values()) == 20
    assert "rd" in (rules.tile_set_problem({**rules.DEFAULT_SET, "rd": 1}) or "")
    assert "a round deals 12" in (rules.tile_set_problem({"1p": 4, "2p": 4}) or "")
    assert "0 to 4" in (rules.tile_set_problem({**rules.DEFAULT_SET, "9p": 5}) or "")
