"""How a game's events read to people: the console log, ``tablectl recall`` and ``monitor``.

Each game gives a :class:`Describer` (its folder's ``describe.py``); the log, recall and
the monitor ask it and never look at which game it is. The base class reads what every
game shares (alarms, betting, pauses); a game adds its results and what names one game
(``shoe 1 hand 5``, ``spin 12``, ``round 7``). Pure: no I/O, no terminal library —
the monitor's styles are rich style strings it applies itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

#: ``(message, fields)`` of one console log line
LogLine = tuple[str, dict[str, Any]]


class Mark(NamedTuple):
    """One result on a scoreboard: what the cell shows and how it is styled."""

    text: str
    style: str
    #: the big road's streak ("P", "B", "D", "T"); None for a tie, which marks the last cell
    side: str | None = None


class Describer:
    """The base reading of events; a game's ``describe.py`` subclasses it."""

    #: the events that settle one game (``hand.result``, ``spin.result``, ``dice.result``)
    results: ClassVar[frozenset[str]] = frozenset()
    #: the events that void one game: with the results, where ``recall`` cuts games apart
    voids: ClassVar[frozenset[str]] = frozenset()
    #: the data fields that name one game (``("shoe", "hand")``): ``recall --hand 1:5``
    key: ClassVar[tuple[str, ...]] = ()
    #: the scoreboards the monitor draws: "last results", or a shoe game's five roads
    boards: ClassVar[tuple[str, ...]] = ("last results",)
    #: the two sides of a game's big road (``("banker", "player")``), for a journal whose
    #: results carry no squares of their own (``daemon/procedures/shoe/roads.py``)
    sides: ClassVar[tuple[str, ...]] = ()
    #: events that start a fresh scoreboard (a new shoe)
    fresh_board: ClassVar[frozenset[str]] = frozenset()
    #: routine events left out of the log with ``[log] events = "results"``
    routine: ClassVar[frozenset[str]] = frozenset(
        {"betting.opened", "betting.closed", "operator.command", "device.reply"}
    )
    #: the monitor's phase after an event of this type
    phases: ClassVar[Mapping[str, str]] = {
        "betting.opened": "betting open",
        "betting.closed": "no more bets",
    }
    #: the fields of the game's summary ``tablectl status`` shows beside its phase, in this
    #: order (where the game is: ``shoe 2, hand 41, cards out 96``); empty: the :attr:`key`
    where: ClassVar[tuple[str, ...]] = ()
    #: how ``tablectl status`` labels each :attr:`where` field (default: its name), so that
    #: a game's counters read apart (roulette: the table's spins, the round due)
    labels: ClassVar[Mapping[str, str]] = {}
    #: the fields that name the game in play, for the monitor's header (default: the
    #: :attr:`key`): roulette's next round is open while its key, the spin, is the last one
    playing: ClassVar[tuple[str, ...]] = ()
    #: what the "last results" board's cells are, after its title (``dealer's total``)
    board_label: ClassVar[str] = ""
    #: the events that show in ``recall`` under a game, with the field that says why
    recalled: ClassVar[frozenset[str]] = frozenset(
        {"betting.opened", "betting.closed", "table.paused", "table.resumed"}
    )

    @property
    def ends(self) -> frozenset[str]:
        return self.results | self.voids

    def game_name(self, d: Mapping[str, Any]) -> str:
        """``shoe 1 hand 5``: the game an event belongs to, from the :attr:`key` fields."""
        return " ".join(f"{k} {d.get(k)}" for k in self.key)

    # -- the console log ------------------------------------------------------------------

    def log(self, type_: str, d: Mapping[str, Any]) -> LogLine | None:
        """The game's own line for an event (a result), or None for the table's plain line."""
        return None

    def line(self, type_: str, d: Mapping[str, Any]) -> str | None:
        """An event summed up on one line (``tablectl replay`` on a terminal, ``tablectl
        monitor`` into a pipe), or None to show its fields (``daemon/tools/describe.py``)."""
        return None

    # -- recall ---------------------------------------------------------------------------

    def recall(self, type_: str, d: Mapping[str, Any]) -> str:
        """The head line of one game in ``tablectl recall``: its result or its void."""
        if type_ in self.voids:
            return f"{self.game_name(d)}: VOID ({d.get('reason')}) by {d.get('by')}"
        return f"{type_} {json.dumps(d, sort_keys=True)}"

    def step(self, type_: str, d: Mapping[str, Any]) -> str | None:
        """A line under the head for an event inside the game, or None to leave it out."""
        if type_.startswith("alarm.") or type_ in self.recalled:
            # who: a person (``by``), else the device that did it (a wheel opens its betting)
            detail = d.get("message") or d.get("reason") or d.get("by") or d.get("device") or ""
            return f"{type_} {detail}"
        return None

    # -- the monitor ----------------------------------------------------------------------

    def row(self, d: Mapping[str, Any]) -> str:
        """The monitor's "last:" line for a result."""
        return self.game_name(d)

    def mark(self, d: Mapping[str, Any]) -> Mark | None:
        """A result's cell on the scoreboards, or None when it has none."""
        return None

    def cards(self, shown: dict[str, list[str]], type_: str, d: Mapping[str, Any]) -> bool:
        """Fold an event into the monitor's cards on the table (box → cards); True if it did."""
        if type_ == "card.dealt" and d.get("box") not in ("burn", "void"):
            shown.setdefault(d["box"], []).append(d["card"])
            return True
        return False

    def gauges(self, type_: str, d: Mapping[str, Any]) -> Mapping[str, str]:
        """Labelled readings an event updates on the monitor (a wheel's state and rotor)."""
        return {}

    def next(self, type_: str, d: Mapping[str, Any]) -> str | None:
        """What the table waits for now, if the event says (the monitor's "next:" line)."""
        return None
