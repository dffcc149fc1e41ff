"""How a Dragon Tiger hand reads: the log line, the recall line, the monitor row and the bead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import LogLine, Mark
from daemon.procedures.shoe.describe import ShoeDescriber

BEADS = {
    "dragon": Mark("D", "bold white on blue", "D"),
    "tiger": Mark("T", "bold white on red", "T"),
    "tie": Mark("=", "bold black on green", None),
}


class DragonTigerDescriber(ShoeDescriber):
    sides: ClassVar[tuple[str, ...]] = ("dragon", "tiger")

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "hand.result":
            return f"hand {d['hand']}: {d['winner'].upper()}", {
                "shoe": d["shoe"],
                "dragon": d["dragon"],
                "tiger": d["tiger"],
            }
        return super().log(type_, d)

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "hand.result":
            return (
                f"hand {d.get('hand')}: {str(d.get('winner')).upper()}  "
                f"dragon {d['dragon']}  tiger {d.get('tiger')}"
            )
        return super().line(type_, d)

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ != "hand.result":
            return super().recall(type_, d)
        return (
            f"shoe {d['shoe']} hand {d['hand']}: {d['winner'].upper()}  "
            f"dragon {d['dragon']}  tiger {d['tiger']}"
            + ("  [suited tie]" if d.get("suited_tie") else "")
        )

    def row(self, d: Mapping[str, Any]) -> str:
        return f"hand {d['hand']}: {d['winner'].upper()}  dragon {d['dragon']} – tiger {d['tiger']}"

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return BEADS.get(d["winner"])
