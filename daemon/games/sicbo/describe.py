"""How a Sic Bo throw reads: the log line, the recall line, the monitor row and the board's total."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import Describer, LogLine, Mark

STYLE = {"big": "bold red", "small": "bold blue", None: "bold green"}  # None: a triple


def _throw(d: Mapping[str, Any]) -> str:
    return f"{' '.join(map(str, d['faces']))} = {d['total']} {d.get('size') or 'triple'}"


class SicBoDescriber(Describer):
    results: ClassVar[frozenset[str]] = frozenset({"dice.result"})
    voids: ClassVar[frozenset[str]] = frozenset({"round.void"})
    key: ClassVar[tuple[str, ...]] = ("round",)
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    board_label: ClassVar[str] = "faces=total, newest first; red big, blue small, green triple"
    routine: ClassVar[frozenset[str]] = Describer.routine | {"dice.shaking"}
    recalled: ClassVar[frozenset[str]] = Describer.recalled | {"dice.reshake", "dice.rejected"}

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "dice.result":
            return f"round {d['round']}: {_throw(d)}", {"reshakes": d.get("reshakes", 0)}
        return None

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ != "dice.result":
            return super().recall(type_, d)
        return f"round {d['round']}: {_throw(d)}" + (
            f"  ({d['reshakes']} re-shakes)" if d.get("reshakes") else ""
        )

    def row(self, d: Mapping[str, Any]) -> str:
        return f"round {d['round']}: {_throw(d)}"

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return Mark(f"{''.join(map(str, d['faces']))}={d['total']}", STYLE.get(d.get("size"), ""))
