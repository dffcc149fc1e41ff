"""How the shoe procedures' events read (cards, burns, the cut card): the base of every shoe game's
:class:`~daemon.games.describe.Describer`. A game adds its hand result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from daemon.games.describe import Describer, LogLine


class ShoeDescriber(Describer):
    results: ClassVar[frozenset[str]] = frozenset({"hand.result"})
    voids: ClassVar[frozenset[str]] = frozenset({"hand.void"})
    key: ClassVar[tuple[str, ...]] = ("shoe", "hand")
    #: drawn from the squares each hand.result publishes (daemon/tools/roads_view.py)
    boards: ClassVar[tuple[str, ...]] = (
        "bead plate",
        "big road",
        "big eye boy",
        "small road",
        "cockroach pig",
    )
    sides: ClassVar[tuple[str, ...]] = ("banker", "player")
    where: ClassVar[tuple[str, ...]] = ("shoe", "hand", "cards_out")
    fresh_board: ClassVar[frozenset[str]] = frozenset({"shoe.started"})
    #: ``table.expects`` is routine: a game answering the ``expects`` hook publishes it often
    routine: ClassVar[frozenset[str]] = Describer.routine | {
        "card.dealt",
        "card.held",
        "table.expects",
    }
    phases: ClassVar[Mapping[str, str]] = {
        **Describer.phases,
        "shoe.started": "burning",
        "card.dealt": "dealing",
        "shoe.ended": "shoe ended",
        "shoe.void": "shoe void",
    }
    recalled: ClassVar[frozenset[str]] = Describer.recalled | {"shoe.cut_card", "card.exposed"}

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        if type_ == "card.dealt":
            return f"card {d['card']} → {d['box']}", {"hand": d["hand"]}
        if type_ == "table.expects":
            return f"next: {d['text']}", {"hand": d["hand"]}
        return None

    def next(self, type_: str, d: Mapping[str, Any]) -> str | None:
        """What the table waits for (``table.expects``, :mod:`daemon.procedures.shoe.expects`)."""
        return d["text"] if type_ == "table.expects" else None

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "card.dealt":
            return f"{d.get('card')} → {d.get('box')}  (hand {d.get('hand')})"
        return None

    def step(self, type_: str, d: Mapping[str, Any]) -> str | None:
        if type_ == "card.dealt":
            return (
                f"card {d['card']} → {d['box']}"
                + (" (face up)" if d.get("face_up") else "")
                + (f" entered by {d['entered_by']}" if d.get("entered_by") else "")
            )
        return super().step(type_, d)
