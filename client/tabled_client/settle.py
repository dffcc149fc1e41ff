"""Settle one bet from one result event: what a stake on a bet spot returns, exactly.

``settle(result, spot, stake)`` reads the result's facts (winner, totals, faces,
pocket, each position's verdict, each blackjack box) and the paytable the result
names, and returns what goes back to the player: 0 for a lost bet, the stake for a
push, the stake plus its winnings for a win (a :class:`~fractions.Fraction`; the
stake may be an int, a Decimal, a Fraction or a decimal string, never a float).
:func:`spots` is each game's vocabulary of spot names (``docs/settlement.md``).
Anything wrong is a :class:`SettleError` with a one-line reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from functools import cache
from typing import Any

import msgspec

from tabled_client.paytables import NotOffered, Paytable, lookup

F = Fraction
ZERO: Fraction = F(0)

#: the red numbers of a roulette layout (seed 003 part IV §3.3.2: 18 red, 18 black, 0 green)
RED = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})
#: how a wheel reports 00 (``number`` 37, ``pocket`` "00"); SINGLE the European layout
DOUBLE_ZERO = 37
SINGLE = "single-zero"
PAIGOW_PLAYERS = ("player1", "player2", "player3", "player4", "player5")


class SettleError(ValueError):
    """A bet that cannot be settled from this result, with the one-line reason."""


def game_of(result: Any) -> str:
    """Which game a result event is from; :class:`SettleError` for an event that is no result."""
    type_, data = _parts(result)
    if type_ == "hand.result":
        if "boxes" in data:
            return "blackjack"
        if "dragon" in data:
            return "dragon-tiger"
        if "banker_total" in data:
            return "baccarat"
    elif type_ == "spin.result":
        return "roulette"
    elif type_ == "dice.result":
        return "sicbo"
    elif type_ == "round.result":
        return "paigow"
    raise SettleError(f"{type_} is not a result a bet is settled on")


def settle(
    result: Any, spot: str, stake: Any, paytable: Paytable | Mapping[str, Paytable] | None = None
) -> Fraction:
    """What ``stake`` on ``spot`` returns on ``result`` (an Event or its JSON dict).

    ``paytable``: None for the shipped paytable the result names; a :class:`Paytable`;
    or the house's own by name (:func:`tabled_client.house_paytables.from_config`).
    """
    amount = _stake(stake)
    _, data = _parts(result)
    game = game_of(result)
    table = _paytable(game, data, paytable)
    layout = str(data.get("layout", SINGLE)) if game == "roulette" else SINGLE
    if spot not in spots(game, layout):
        where = f" on a {layout} wheel" if layout != SINGLE else ""
        raise SettleError(
            f'{game} has no bet spot "{spot}"{where} (tabled_client.settle.spots("{game}"))'
        )
    try:
        return amount * _RETURNS[game](data, spot, table)
    except NotOffered as e:
        raise SettleError(str(e)) from None


@cache
def spots(game: str, layout: str = "single-zero") -> frozenset[str]:
    """Every bet spot name of ``game`` (the vocabulary of ``docs/settlement.md``); roulette's
    by its ``layout`` (``single-zero``, ``double-zero``: a result's ``layout``)."""
    if game == "baccarat":
        names = ["player", "banker", "tie", "player_pair", "banker_pair", "super6", "big", "small"]
    elif game == "dragon-tiger":
        names = ["dragon", "tiger", "tie"]
    elif game == "sicbo":
        names = ["small", "big", "any_triple"]
        names += [f"{k}:{n}" for k in ("single", "triple", "double") for n in range(1, 7)]
        names += [f"total:{n}" for n in range(4, 18)]
        names += [f"combination:{a}-{b}" for a in range(1, 7) for b in range(a + 1, 7)]
    elif game == "roulette":
        names = list(_roulette_spots(layout))
    elif game == "paigow":
        names = [f"{k}:{p}" for k in ("win", "lose", "pair") for p in PAIGOW_PLAYERS]
    elif game == "blackjack":
        names = [f"{k}:{b}" for k in ("box", "insurance") for b in range(1, 8)]
    else:
        raise SettleError(
            f'no game "{game}" (games: baccarat, dragon-tiger, sicbo, roulette, paigow, blackjack)'
        )
    return frozenset(names)


def roulette_numbers(spot: str, layout: str = "single-zero") -> tuple[int, ...]:
    """The numbers a roulette spot covers (``split:17-20`` -> (17, 20); 00 is 37)."""
    return _roulette_spots(layout)[spot][1]


# -- the parts ------------------------------------------------------------------------------------


def _parts(result: Any) -> tuple[str, Mapping[str, Any]]:
    if isinstance(result, msgspec.Struct) and hasattr(result, "data"):
        return str(result.type), msgspec.to_builtins(result.data)  # type: ignore[attr-defined]
    if isinstance(result, Mapping) and isinstance(result.get("data"), Mapping):
        return str(result.get("type")), result["data"]
    raise SettleError(
        "a result is an event (tabled_client.Event or its JSON object with type and data)"
    )


def _stake(stake: Any) -> Fraction:
    if isinstance(stake, bool) or isinstance(stake, float):
        raise SettleError(
            f"stake {stake!r}: give an exact amount (int, Decimal, Fraction or a decimal string), not a float"
        )
    try:
        amount = F(Decimal(stake)) if isinstance(stake, str) else F(stake)
    except (TypeError, ValueError, ArithmeticError):
        raise SettleError(f"stake {stake!r} is not an amount") from None
    if amount <= 0:
        raise SettleError(f"stake {stake!r} is not a positive amount")
    return amount


def _paytable(game: str, data: Mapping[str, Any], given: Any) -> Paytable:
    if isinstance(given, Paytable):
        if given.game != game:
            raise SettleError(
                f"paytable \"{given.name}\" is {given.game}'s; this result is {game}'s"
            )
        return given
    name = data.get("paytable")
    if name is None:
        raise SettleError(
            f"this {game} result names no paytable (a table before paytables): pass one"
        )
    try:
        return lookup(game, name, given)
    except KeyError as e:
        raise SettleError(e.args[0]) from None


def _win(table: Paytable, key: str) -> Fraction:
    return 1 + table.ratio(key)


# -- each game ------------------------------------------------------------------------------------


def _baccarat(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    winner = d["winner"]
    if spot in ("player", "banker"):
        if winner == "tie":
            return F(1)  # seed 003 part II §2.1.5: a tie returns player and banker bets
        if winner != spot:
            return ZERO
        if spot == "banker" and d["banker_total"] == 6 and "banker_on_six" in t.pays:
            return _win(t, "banker_on_six")  # seed 004: a banker win on 6 pays 0.5
        return _win(t, spot)
    if spot == "tie":
        return _win(t, "tie") if winner == "tie" else ZERO
    if spot in ("player_pair", "banker_pair"):
        t.ratio(spot)
        return _win(t, spot) if d[spot] else ZERO
    if spot == "super6":
        t.ratio("super6")  # seed 004: Super 6 wins on a banker win with six
        return _win(t, "super6") if winner == "banker" and d["banker_total"] == 6 else ZERO
    t.ratio(spot)  # big, small
    if not d.get("big_small_open", False):
        raise SettleError(
            f"{spot} is not offered on hand {d['hand']}: only a shoe's first hands (seed 004)"
        )
    return _win(t, spot) if d[spot] else ZERO


def _dragon_tiger(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    winner = d["winner"]
    if spot == "tie":
        return _win(t, "tie") if winner == "tie" else ZERO
    if winner == "tie":
        return t.ratio("on_tie_returns")  # seed 002: 抽取百份之五十, 余款退回
    return _win(t, spot) if winner == spot else ZERO


def _sicbo(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    faces: list[int] = list(d["faces"])
    triple = len(set(faces)) == 1
    total = sum(faces)
    kind, _, arg = spot.partition(":")
    if kind in ("small", "big"):
        # seed 002: 若三粒骰子平面点数相同, 通吃"大", "小"各注
        won = not triple and (total <= 10) == (kind == "small")
        return _win(t, kind) if won else ZERO
    if kind == "any_triple":
        return _win(t, kind) if triple else ZERO
    if kind == "total":
        return _win(t, f"total_{arg}") if total == int(arg) else ZERO
    if kind == "combination":
        a, b = (int(x) for x in arg.split("-"))
        return _win(t, kind) if a in faces and b in faces else ZERO
    n = int(arg)
    count = faces.count(n)
    if kind == "single":
        return _win(t, f"single_{count}") if count else ZERO
    if kind == "triple":
        return _win(t, kind) if count == 3 else ZERO
    return _win(t, "double") if count >= 2 else ZERO  # 短牌: a triple shows it on two dice too


def _roulette(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    layout = str(d.get("layout", SINGLE))
    if t.layout is not None and t.layout != layout:
        raise SettleError(f'paytable "{t.name}" is for a {t.layout} wheel; this one is {layout}')
    number = int(d["number"])
    key, covered = _roulette_spots(layout)[spot]
    if key in ("red", "black", "odd", "even", "low", "high") and number in (0, DOUBLE_ZERO):
        return t.ratio("on_zero_returns")  # a house option: all lose, or la partage
    return _win(t, key) if number in covered else ZERO


def _paigow(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    kind, _, position = spot.partition(":")
    row = next((p for p in d["positions"] if p["position"] == position), None)
    if row is None:
        raise SettleError(f"{position} is not in this round's result")
    if kind == "pair":
        return _win(t, "pair") if row["pair"] else ZERO
    # seed 002: 闲家两张牌跟庄家两张牌一样, 牌例庄胜 (the rules' verdict, in ``result``)
    return _win(t, kind) if row["result"] == kind else ZERO


def _blackjack(d: Mapping[str, Any], spot: str, t: Paytable) -> Fraction:
    kind, _, arg = spot.partition(":")
    box = next((b for b in d["boxes"] if b["box"] == int(arg)), None)
    if box is None:
        raise SettleError(f"box {arg} was not in play in this round")
    if kind == "insurance":
        ins = box.get("insurance")
        if not ins or not ins.get("taken"):
            raise SettleError(f"box {arg} took no insurance")
        return 1 + _ratio(ins["ratio"]) if ins["outcome"] == "win" else ZERO
    # seed 003 part III §2.1-2.3: each hand of the box (doubled: 2 stakes) with its stated ratio
    back = ZERO
    for h in box["hands"]:
        if h["outcome"] in ("blackjack", "win", "push"):
            back += h["bet"] * (1 + _ratio(h["ratio"]))
        else:
            back += h["bet"] + F(h["net"])  # a loss: whole stakes, an integer
    return back


def _ratio(text: str) -> Fraction:
    a, _, b = text.partition(":")
    return F(a) / F(b or 1)


_RETURNS = {
    "baccarat": _baccarat,
    "dragon-tiger": _dragon_tiger,
    "sicbo": _sicbo,
    "roulette": _roulette,
    "paigow": _paigow,
    "blackjack": _blackjack,
}


@cache
def _roulette_spots(layout: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    """spot -> (paytable key, numbers covered): the single-zero layout (seed 003 part IV §1.1),
    or the double-zero one (a house option: 0 and 00 side by side above 1-2-3, no first four,
    the top line 0-00-1-2-3 instead; 00 is the number 37, as the wheels report it)."""
    if layout not in (SINGLE, "double-zero"):
        raise SettleError(f'no roulette layout "{layout}" (single-zero, double-zero)')
    out: dict[str, tuple[str, tuple[int, ...]]] = {}

    def add(key: str, nums: tuple[int, ...], name: str | None = None) -> None:
        out[name or f"{key}:{'-'.join(_label(n) for n in nums)}"] = (key, nums)

    zeros = (0,) if layout == SINGLE else (0, DOUBLE_ZERO)
    for n in (*zeros, *range(1, 37)):
        add("straight", (n,))
    for n in range(1, 37):
        if n % 3:
            add("split", (n, n + 1))
        if n <= 33:
            add("split", (n, n + 3))
    for n in range(1, 37, 3):
        add("street", (n, n + 1, n + 2))
    if layout == SINGLE:
        for n in (1, 2, 3):
            add("split", (0, n))
        add("street", (0, 1, 2))
        add("street", (0, 2, 3))
        add("first_four", (0, 1, 2, 3), "first_four")
    else:
        for pair in ((0, DOUBLE_ZERO), (0, 1), (0, 2), (DOUBLE_ZERO, 2), (DOUBLE_ZERO, 3)):
            add("split", pair)
        for trio in ((0, 1, 2), (0, DOUBLE_ZERO, 2), (DOUBLE_ZERO, 2, 3)):
            add("street", trio)
        add("top_line", (0, DOUBLE_ZERO, 1, 2, 3), "top_line")
    for n in range(1, 33):
        if n % 3:
            add("corner", (n, n + 1, n + 3, n + 4))
    for n in range(1, 32, 3):
        add("line", tuple(range(n, n + 6)))
    for c in (1, 2, 3):
        add("column", tuple(range(c, 37, 3)), f"column:{c}")
    for z in (1, 2, 3):
        add("dozen", tuple(range(12 * z - 11, 12 * z + 1)), f"dozen:{z}")
    named = {
        "red": tuple(sorted(RED)),
        "black": tuple(n for n in range(1, 37) if n not in RED),
        "odd": tuple(range(1, 37, 2)),
        "even": tuple(range(2, 37, 2)),
        "low": tuple(range(1, 19)),
        "high": tuple(range(19, 37)),
    }
    for k, nums in named.items():
        add(k, nums, k)
    return out


def _label(n: int) -> str:
    return "00" if n == DOUBLE_ZERO else str(n)


__all__ = ["SettleError", "game_of", "roulette_numbers", "settle", "spots"]
