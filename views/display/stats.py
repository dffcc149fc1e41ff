"""Roulette's and Sic Bo's statistics over the display's window: what the page counts.

Hot numbers are the ``hot`` numbers counted most often (ties: the lower number first),
cold numbers the least often, zero counts included; an empty window has neither.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def counts(
    game: str | None, w: list[dict[str, Any]], pockets: int, hot: int
) -> dict[str, Any] | None:
    """The counts over the results ``w`` (oldest first) for ``game``; None for other games."""
    if game == "roulette":
        c = Counter(r["number"] for r in w)
        every = range(pockets)
        by_hot = sorted(every, key=lambda n: (-c[n], n))
        by_cold = sorted(every, key=lambda n: (c[n], n))
        n = hot if w else 0  # no results yet: nothing is hot or cold
        return {
            "window": len(w),
            "counts": {str(p): c[p] for p in every},
            "hot": [[p, c[p]] for p in by_hot[:n]],
            "cold": [[p, c[p]] for p in by_cold[:n]],
            "red": sum(r["color"] == "red" for r in w),
            "black": sum(r["color"] == "black" for r in w),
            "green": sum(r["color"] == "green" for r in w),
            "odd": sum(r.get("parity") == "odd" for r in w),
            "even": sum(r.get("parity") == "even" for r in w),
        }
    if game == "sicbo":
        return {
            "window": len(w),
            "big": sum(r["size"] == "big" for r in w),
            "small": sum(r["size"] == "small" for r in w),
            "triple": sum(bool(r["triple"]) for r in w),
            "odd": sum(r["parity"] == "odd" for r in w),
            "even": sum(r["parity"] == "even" for r in w),
        }
    return None
