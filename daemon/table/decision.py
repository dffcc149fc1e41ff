"""The table's state (:class:`TableState`, with its latched :class:`Alarm` s) and what one
input decided (:class:`Decision`): the drafts in order, or a refusal saying why.

The state is only ever built by folding journaled events (``Table.apply``), so after a
crash it is rebuilt exactly; a decision chains on its own drafts (:meth:`Decision.state`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from daemon.journal.events import Draft, draft
from daemon.table import corrections, sessions


class Alarm(msgspec.Struct, frozen=True):
    id: str
    kind: str
    message: str
    rule: str
    action: str
    severity: str  # "warning" | "supervisor" (needs a supervisor to clear)
    device: str | None = None
    hand: int | None = None  # the hand it concerns: voiding that hand settles it
    count: int = 1  # occurrences of its cause (alarm.repeated)


class TableState(msgspec.Struct, frozen=True):
    devices: dict[str, str] = {}
    alarms: dict[str, Alarm] = {}
    alarm_no: int = 0
    commands: int = 0
    running: bool = False  # between daemon.started and daemon.stopped
    game: Any = None
    #: the dealer on duty, the table open or closed, its limits (``daemon/table/sessions.py``)
    session: sessions.Session = sessions.Session()
    #: the audited config as last journaled (``config.changed``; ``daemon/table/config_audit.py``)
    config: dict[str, Any] | None = None
    config_hash: str | None = None
    #: the openings of the events sealed while the game's card is secret (``daemon/table/secrecy.py``):
    #: published in ``secret.opened`` when it is turned over; never shown
    sealed: tuple[dict[str, Any], ...] = ()
    #: the seq of the last event applied (a snapshot's is set from its row)
    seq: int = 0
    #: the results a supervisor may still correct (``daemon/table/corrections.py``)
    recent: tuple[corrections.Recent, ...] = ()


@dataclass(slots=True)
class Decision:
    """What one input decided: drafts in order, or a refusal saying why."""

    drafts: list[Draft] = field(default_factory=list)
    refused: str | None = None
    reply: dict[str, Any] = field(default_factory=dict)
    base: Any = None
    fold: Callable[[Any, str, dict[str, Any]], Any] | None = None
    _folded: int = 0
    #: values this input brought that may be a secret card (frames the table quotes while
    #: one is face down): sealed wherever a draft holds them (``daemon/table/secrecy.py``)
    sealed_words: tuple[str, ...] = ()
    #: the first and last seq its events were committed at (set by the pipeline)
    seqs: tuple[int, int] | None = None

    def add(self, type_: str, **data: Any) -> None:
        self.drafts.append(draft(type_, data))

    def state(self) -> Any:
        """The state as the drafts so far leave it, for decisions that chain (held cards)."""
        assert self.fold is not None
        drafts = self.drafts
        if self._folded == len(drafts):  # asked again with nothing new: most calls
            return self.base
        for x in drafts[self._folded :]:
            self.base = self.fold(self.base, x.type, x.data)
        self._folded = len(drafts)
        return self.base
