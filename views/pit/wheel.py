"""A roulette wheel's statistics over a chosen window: what surveillance looks at.

Pocket counts against the uniform expectation (Pearson's chi-square over the pockets,
``pockets - 1`` degrees of freedom, and the 5 % critical value), the same per rotor
direction where the wheel reports one, the hot and cold pockets, and the classic sectors
of a single-zero wheel (their expected share is their size over 37). Pure: spins in,
numbers out.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

#: the pockets in wheel order (single zero, the European layout), for the sectors
SECTORS = {
    "voisins du zéro": (22, 18, 29, 7, 28, 12, 35, 3, 26, 0, 32, 15, 19, 4, 21, 2, 25),
    "tiers du cylindre": (27, 13, 36, 11, 30, 8, 23, 10, 5, 24, 16, 33),
    "orphelins": (1, 20, 14, 31, 9, 17, 34, 6),
    "jeu zéro": (12, 35, 3, 26, 0, 32, 15),
}
#: chi-square 95th percentiles for 36 and 37 degrees of freedom (single, double zero)
CRITICAL_5 = {36: 50.9985, 37: 52.1923}


def chi_square(counts: Counter[int], pockets: int) -> float | None:
    n = sum(counts.values())
    if n == 0:
        return None
    e = n / pockets
    return sum((counts[p] - e) ** 2 / e for p in range(pockets))


def _part(spins: list[dict[str, Any]], pockets: int, hot: int) -> dict[str, Any]:
    c = Counter(s["number"] for s in spins)
    x2 = chi_square(c, pockets)
    every = range(pockets)
    return {
        "spins": len(spins),
        "counts": [c[p] for p in every],
        "expected": len(spins) / pockets,
        "chi_square": None if x2 is None else round(x2, 4),
        "df": pockets - 1,
        "critical_5": CRITICAL_5.get(pockets - 1),
        "uniform_at_5": None if x2 is None else x2 <= CRITICAL_5[pockets - 1],
        "hot": sorted(every, key=lambda p: (-c[p], p))[:hot] if spins else [],
        "cold": sorted(every, key=lambda p: (c[p], p))[:hot] if spins else [],
    }


def wheel_stats(spins: list[dict[str, Any]], window: int, hot: int = 5) -> dict[str, Any]:
    """Statistics of the last ``window`` spins (each ``number``, ``layout``, ``rotor_direction``)."""
    w = spins[-window:] if window > 0 else []
    pockets = 38 if any(s.get("layout") == "double-zero" for s in w) else 37
    out = {"window": window, "pockets": pockets, "all": _part(w, pockets, hot)}
    out["by_direction"] = {
        d: _part([s for s in w if s.get("rotor_direction") == d], pockets, hot)
        for d in ("clockwise", "anticlockwise")
        if any(s.get("rotor_direction") == d for s in w)
    }
    if pockets == 37:
        n = len(w)
        c = Counter(s["number"] for s in w)
        out["sectors"] = {
            name: {"count": sum(c[p] for p in ps), "expected": round(n * len(ps) / 37, 4)}
            for name, ps in SECTORS.items()
        }
    return out
