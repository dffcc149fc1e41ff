"""How a baccarat hand reads: the log line, the recall line, the monitor row and the bead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.games.describe import LogLine, Mark
from daemon.procedures.shoe.describe import ShoeDescriber

BEADS = {
    "player": Mark("P", "bold white on blue", "P"),
    "banker": Mark("B", "bold white on red", "B"),
    "tie": Mark("T", "bold black on green", None),
}


class BaccaratDescriber(ShoeDescriber):
    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "hand.result":
            return f"hand {d['hand']}: {d['winner'].upper()}", {
                "shoe": d["shoe"],
                "player": " ".join(d["player"]) + f" ({d['player_total']})",
                "banker": " ".join(d["banker"]) + f" ({d['banker_total']})",
            }
        return super().log(type_, d)

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "hand.result":
            return (
                f"hand {d.get('hand')}: {str(d.get('winner')).upper()}  player "
                f"{' '.join(d['player'])} ({d.get('player_total')})  banker "
                f"{' '.join(d.get('banker', []))} ({d.get('banker_total')})"
            )
        return super().line(type_, d)

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ != "hand.result":
            return super().recall(type_, d)
        text = (
            f"shoe {d['shoe']} hand {d['hand']}: {d['winner'].upper()}  "
            f"player {' '.join(d['player'])} ({d['player_total']})  "
            f"banker {' '.join(d['banker'])} ({d['banker_total']})"
        )
        flags = [k for k in ("natural", "player_pair", "banker_pair", "banker_six") if d.get(k)]
        return text + ("  [" + ", ".join(flags) + "]" if flags else "")

    def row(self, d: Mapping[str, Any]) -> str:
        return (
            f"hand {d['hand']}: {d['winner'].upper()}  "
            f"player {d['player_total']} – banker {d['banker_total']}"
        )

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        return BEADS.get(d["winner"])
