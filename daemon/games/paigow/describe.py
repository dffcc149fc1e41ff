"""How Pai Gow events read to people: the console log, ``tablectl recall`` and ``monitor``.

Pure functions of journaled event data, so the log, recall (from the journal)
and the monitor (from the bus) say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import Describer, LogLine, Mark

SHORT = {"banker": "B", **{f"player{n}": f"P{n}" for n in range(1, 6)}}


def result_text(d: Mapping[str, Any]) -> str:
    """One round in a line: dice, who was first, then each position's hand and verdict."""
    hands = []
    for p in d["positions"]:
        mark = "" if p["position"] == "banker" else (" WIN" if p["result"] == "win" else " lose")
        hands.append(f"{SHORT[p['position']]} {'+'.join(p['tiles'])} {p['name']}{mark}")
    return (
        f"round {d['round']}: dice {'-'.join(map(str, d['dice']))} = {d['total']}, "
        f"first {SHORT[d['first']]}  |  " + "  |  ".join(hands)
    )


def summary(d: Mapping[str, Any]) -> str:
    winners = ", ".join(SHORT[p] for p in d["winners"]) or "banker takes all"
    return f"round {d['round']}: dice {d['total']}, winners {winners}" + (
        f", pairs {', '.join(SHORT[p] for p in d['pairs'])}" if d["pairs"] else ""
    )


class PaiGowDescriber(Describer):
    results: ClassVar[frozenset[str]] = frozenset({"round.result"})
    voids: ClassVar[frozenset[str]] = frozenset({"round.void"})
    key: ClassVar[tuple[str, ...]] = ("round",)
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    board_label: ClassVar[str] = "positions that beat the banker, newest first"
    routine: ClassVar[frozenset[str]] = Describer.routine | {"tile.dealt", "tile.held"}
    phases: ClassVar[Mapping[str, str]] = {
        **Describer.phases,
        "round.dice": "dealing",
        "round.paused": "PAUSED: waiting for a tile",
        "round.resumed": "dealing",
    }

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "round.result":
            return summary(d), {"tiles": " ".join(d["tiles"])}
        if type_ == "tile.dealt":
            return f"tile {d['tile']} → {d['position']}", {"round": d["round"]}
        return None

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        if type_ == "round.result":
            return result_text(d)
        return super().recall(type_, d)

    def step(self, t: str, x: Mapping[str, Any]) -> str | None:
        if t == "round.dice":
            by = x.get("device") or f"entered by {x.get('entered_by')}"
            return (
                f"dice {'-'.join(map(str, x['faces']))} = {x['total']} ({by}): {x['first']} first"
            )
        if t == "tile.dealt":
            return f"tile {x['n']:>2} {x['tile']} → {x['position']}" + (
                f" entered by {x['entered_by']}" if x.get("entered_by") else ""
            )
        if t in ("tile.rejected", "dice.rejected"):
            return f"{t} {x.get('tile') or x.get('faces') or x.get('code')} ({x['reason']})"
        if t == "tile.held":
            return f"tile.held {x.get('tile') or x.get('code')} (waiting)"
        if t in ("round.paused", "round.resumed"):
            return f"{t} {x.get('reason') or ('tile ' + str(x.get('tile')))}"
        return super().step(t, x)

    def cards(self, shown: dict[str, list[str]], type_: str, d: Mapping[str, Any]) -> bool:
        if type_ == "tile.dealt":
            shown.setdefault(str(d["position"]), []).append(str(d["tile"]))
            return True
        return False

    def row(self, d: Mapping[str, Any]) -> str:
        return summary(d)

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        # the board shows how many positions beat the banker (0: the banker took all)
        n = len(d["winners"])
        return Mark(str(n), "bold red" if n == 0 else "bold blue")
