"""How a Casino War hand reads: the log line, the recall line, the monitor row and its cell.

The shoe's own events (cards, burns, the cut card, voids) read as the shoe procedure's
describer reads them; this adds the war's decision and result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import LogLine, Mark
from daemon.procedures.shoe.describe import ShoeDescriber


def _text(d: Mapping[str, Any]) -> str:
    how = " (surrendered)" if d["surrendered"] else " at war" if d["war"] else ""
    return (
        f"hand {d['hand']}: {d['winner'].upper()}{how}  "
        f"player {' '.join(d['player'])}  dealer {' '.join(d['dealer'])}"
    )


class WarDescriber(ShoeDescriber):
    results: ClassVar[frozenset[str]] = frozenset({"war.result"})
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    sides: ClassVar[tuple[str, ...]] = ("player", "dealer")
    recalled: ClassVar[frozenset[str]] = ShoeDescriber.recalled | {"war.decision"}

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "war.result":
            return _text(d), {"shoe": d["shoe"]}
        if type_ == "war.decision":
            return f"hand {d['hand']}: the player chose {d['decision']}", {"by": d["by"]}
        return super().log(type_, d)

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "war.result":
            return _text(d)
        return super().line(type_, d)

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ == "war.result":
            return f"shoe {d['shoe']} {_text(d)}"
        return super().recall(type_, d)

    def step(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "war.decision":
            return f"the player chose {d['decision']}" + (" (time ran out)" if d["timeout"] else "")
        return super().step(type_, d)

    def row(self, d: Mapping[str, Any]) -> str:
        return _text(d)

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return Mark("P" if d["winner"] == "player" else "D", "bold", d["winner"])
