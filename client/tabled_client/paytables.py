"""The paytables: what each bet spot of each game pays, every rule naming its seed.

A paytable is a named set of ratios (a win pays ``ratio`` to 1, the stake returned
beside it) plus the fractions of a stake some results hand back (Dragon Tiger's
tie, roulette's zero for even-money bets). The house chooses one in its config
(``[game] paytable``) and may add its own (``[game.paytables.<name>]``, read and checked
by :mod:`tabled_client.house_paytables`);
each result event names the one in force (``paytable``), and
:func:`tabled_client.settle.settle` pays by it. Ratios are :class:`~fractions.Fraction`:
no float ever touches money. Pure, and free of the daemon (backends install this).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

F = Fraction

#: per game, every paytable key -> what it is; a key ending in ``_returns`` is a fraction of
#: the stake handed back (0 to 1), every other key a ratio a win pays (more than 0).
KEYS: Final[dict[str, dict[str, str]]] = {
    "baccarat": {
        "player": "a player win",
        "banker": "a banker win",
        "banker_on_six": "a banker win on a total of six (no-commission); absent: as banker",
        "tie": "a tie",
        "player_pair": "the player's first two cards a pair",
        "banker_pair": "the banker's first two cards a pair",
        "super6": "a banker win on six (Super 6 side bet)",
        "big": "a hand of 5 or 6 cards (first hands of a shoe only)",
        "small": "a hand of 4 cards (first hands of a shoe only)",
    },
    "dragon-tiger": {
        "dragon": "a dragon win",
        "tiger": "a tiger win",
        "tie": "a tie",
        "on_tie_returns": "what a dragon or tiger bet gets back on a tie",
    },
    "sicbo": {
        "small": "total 4-10, not a triple",
        "big": "total 11-17, not a triple",
        "single_1": "the chosen face on one die",
        "single_2": "the chosen face on two dice",
        "single_3": "the chosen face on three dice",
        "triple": "a specific triple",
        "any_triple": "any triple",
        **{f"total_{n}": f"a total of {n}" for n in range(4, 18)},
        "combination": "two chosen different faces, each on a die",
        "double": "the chosen face on at least two dice",
    },
    "roulette": {
        "straight": "one number",
        "split": "two adjacent numbers",
        "street": "a row of three (or 0-1-2, 0-2-3)",
        "corner": "four numbers in a square",
        "first_four": "0-1-2-3 (single zero)",
        "top_line": "0-00-1-2-3 (double zero)",
        "line": "two rows, six numbers",
        "column": "a column of twelve",
        "dozen": "a dozen",
        **{k: f"{k} (even money)" for k in ("red", "black", "odd", "even", "low", "high")},
        "on_zero_returns": "what an even-money bet gets back when a zero comes",
    },
    "paigow": {
        "win": "a position beats the banker",
        "lose": "a position loses to the banker",
        "pair": "a position holds a pair",
    },
    "blackjack": {},
}


@dataclass(frozen=True)
class Paytable:
    """One named paytable of one game: key -> ratio (or fraction returned), with sources."""

    name: str
    game: str
    pays: Mapping[str, Fraction]
    sources: Mapping[str, str] = field(default_factory=dict)
    #: roulette: the layout it is for (``single-zero``, ``double-zero``); None: any
    layout: str | None = None

    def ratio(self, key: str) -> Fraction:
        """What ``key`` pays; :class:`NotOffered` when this paytable has no such bet."""
        if key not in self.pays:
            raise NotOffered(f'paytable "{self.name}" ({self.game}) offers no {key} bet')
        return self.pays[key]


class NotOffered(ValueError):
    """A bet the paytable in force does not have."""


_RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?::\s*(\d+(?:\.\d+)?)\s*)?$")


def parse_ratio(value: Any) -> Fraction:
    """``11``, ``0.95``, ``"0.95"``, ``"3:2"`` (3 to 2) -> an exact Fraction; ValueError saying why."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a ratio")
    if isinstance(value, int):
        return F(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a ratio")
        return F(repr(value))  # the number as written in the TOML, not its binary float
    if isinstance(value, str):
        m = _RATIO.match(value)
        if m is None:
            raise ValueError(f'"{value}" is not a ratio: write 11, 0.95 or "3:2"')
        num, den = F(m.group(1)), F(m.group(2) or 1)
        if den == 0:
            raise ValueError(f'"{value}" divides by zero')
        return num / den
    raise ValueError(f'{value!r} is not a ratio: write 11, 0.95 or "3:2"')


def _table(
    name: str, game: str, rows: dict[str, tuple[str | int, str]], layout: str | None = None
) -> Paytable:
    return Paytable(
        name,
        game,
        {k: parse_ratio(v) for k, (v, _) in rows.items()},
        {k: s for k, (_, s) in rows.items()},
        layout,
    )


_S002_BAC = "seed 002, 百家乐: 押荘赢1赔0.95, 押闲 1赔1, 押和局1赔8, 荘对/闲对 1赔11"
_S004 = "seed 004, thanh toán thông thường"
_S004_NC = "seed 004, Super 6 / no-commission: banker 1:1, a banker win on 6 pays 0.5, Super 6 1:12"
_BACCARAT_COMMON: dict[str, tuple[str | int, str]] = {
    "player": (1, _S002_BAC),
    "tie": (8, _S002_BAC),
    "player_pair": (11, _S002_BAC),
    "banker_pair": (11, _S002_BAC),
    "big": ("0.52", f"{_S004}: Tài (Big) 1 thắng 0.52, first 35 hands of a shoe"),
    "small": ("1.5", f"{_S004}: Xỉu (Small) 1 thắng 1.5, first 35 hands of a shoe"),
}
_S002_SB = "seed 002, 骰寳"
_S003_R = "seed 003 part IV §2.2"
_S002_DT = "seed 002, 龙虎: 胜方一赔一, 和一赔十; on a tie 抽取百份之五十, the rest returned"
_S002_PG = "seed 002, 麻雀排九 派彩"
_DZ = "house option: the double-zero wheel is not in the seeds (seed 003 IV §1.2.1 is single zero)"

#: every shipped paytable: (game, name) -> Paytable
SHIPPED: Final[dict[tuple[str, str], Paytable]] = {
    (t.game, t.name): t
    for t in (
        _table(
            "commission",
            "baccarat",
            {
                "banker": ("0.95", _S002_BAC + " (5 % commission, seed 000/001 art. 18)"),
                **_BACCARAT_COMMON,
            },
        ),
        _table(
            "no-commission",
            "baccarat",
            {
                "banker": (1, _S004_NC),
                "banker_on_six": ("0.5", _S004_NC),
                "super6": (12, _S004_NC),
                **_BACCARAT_COMMON,
            },
        ),
        _table(
            "standard",
            "dragon-tiger",
            {
                "dragon": (1, _S002_DT),
                "tiger": (1, _S002_DT),
                "tie": (10, _S002_DT),
                "on_tie_returns": ("0.5", _S002_DT),
            },
        ),
        _table(
            "standard",
            "sicbo",
            {
                "small": (1, f"{_S002_SB}: 小 一赔一 (a triple loses it)"),
                "big": (1, f"{_S002_SB}: 大 一赔一 (a triple loses it)"),
                "single_1": (1, f"{_S002_SB}: 三军 投中一粒 一赔一"),
                "single_2": (2, f"{_S002_SB}: 三军 两骰相同 一赔二"),
                "single_3": (3, f"{_S002_SB}: 三军 三骰相同 一赔三"),
                "triple": (150, f"{_S002_SB}: 围骰 一赔一百五十"),
                "any_triple": (24, f"{_S002_SB}: 全骰 一赔二十四"),
                **{
                    f"total_{n}": (p, f"{_S002_SB}: 点数 {n} 一赔{p}")
                    for n, p in {
                        4: 50,
                        17: 50,
                        5: 18,
                        16: 18,
                        6: 14,
                        15: 14,
                        7: 12,
                        14: 12,
                        8: 8,
                        13: 8,
                        9: 6,
                        10: 6,
                        11: 6,
                        12: 6,
                    }.items()
                },
                "combination": (5, f"{_S002_SB}: 长牌 一赔五"),
                "double": (8, f"{_S002_SB}: 短牌 一赔八"),
            },
        ),
        *(
            _table(
                name,
                "roulette",
                {
                    "straight": (35, _S003_R),
                    "split": (17, _S003_R),
                    "street": (11, _S003_R),
                    "corner": (8, f"{_S003_R} (4-Numer), §1.1 (0-1-2-3 is a corner)"),
                    "first_four": (8, f"{_S003_R} (4-Numer), §1.1 (0-1-2-3 is a corner)"),
                    "line": (5, _S003_R),
                    "column": (2, _S003_R),
                    "dozen": (2, _S003_R),
                    **{k: (1, _S003_R) for k in ("red", "black", "odd", "even", "low", "high")},
                    "on_zero_returns": zero,
                },
                "single-zero",
            )
            for name, zero in (
                (
                    "european",
                    (0, "seed 003 part IV: no rule returns an even-money bet on 0: it loses"),
                ),
                (
                    "european-la-partage",
                    ("0.5", "house option (la partage): half an even-money bet back on 0"),
                ),
            )
        ),
        _table(
            "american",
            "roulette",
            {
                "straight": (35, _S003_R + " (the same odds on the double-zero layout)"),
                "split": (17, _S003_R),
                "street": (11, _S003_R + "; 0-1-2, 0-00-2, 00-2-3 are streets too"),
                "corner": (8, _S003_R),
                "top_line": (6, _DZ),
                "line": (5, _S003_R),
                "column": (2, _S003_R),
                "dozen": (2, _S003_R),
                **{k: (1, _S003_R) for k in ("red", "black", "odd", "even", "low", "high")},
                "on_zero_returns": (0, _DZ + ": even-money bets lose on 0 and 00"),
            },
            "double-zero",
        ),
        _table(
            "standard",
            "paigow",
            {
                "win": ("0.95", f"{_S002_PG}: 下注开N赢, 1赔1, 但扣除5%佣金"),
                "lose": ("0.95", f"{_S002_PG}: 下注开N输, 1赔1, 但扣除5%佣金"),
                "pair": (6, f"{_S002_PG}: 下注开N对子赢, 1赔6"),
            },
        ),
        # seed 003 part III §2.2, §2.5: its ratios are the rules blackjack_pays and insurance_pays,
        # stated on every hand.result; the paytable only names them
        _table("standard", "blackjack", {}),
    )
}

#: the paytable a game uses when the config names none
DEFAULT: Final[dict[str, str]] = {
    "baccarat": "commission",
    "dragon-tiger": "standard",
    "sicbo": "standard",
    "roulette": "european",
    "paigow": "standard",
    "blackjack": "standard",
}


def lookup(game: str, name: str, house: Mapping[str, Paytable] | None = None) -> Paytable:
    """The paytable ``name`` of ``game``: the house's own first, then the shipped ones."""
    if house and name in house and house[name].game == game:
        return house[name]
    table = SHIPPED.get((game, name))
    if table is None:
        shipped = ", ".join(n for g, n in SHIPPED if g == game)
        raise KeyError(
            f'no paytable "{name}" for {game} (shipped: {shipped}; a house paytable: pass it, '
            "tabled_client.house_paytables.from_config)"
        )
    return table


def default_for(game: str, double_zero: bool = False) -> str:
    """The paytable a game plays under when its config names none (a double-zero wheel's own)."""
    return "american" if game == "roulette" and double_zero else DEFAULT[game]


__all__ = [
    "DEFAULT",
    "KEYS",
    "SHIPPED",
    "NotOffered",
    "Paytable",
    "default_for",
    "lookup",
    "parse_ratio",
]
