"""A piece dealt past a reader that cannot be placed now: held, the deal paused, resumed in order.

A card drawn from a shoe (:mod:`daemon.procedures.shoe`) and a tile dealt past a
tile reader (Pai Gow) follow one house procedure, written once here:

- **A piece is never guessed.** One the game cannot place now (unreadable, not in
  the set, one copy too many, read on a noisy line) pauses the deal
  (:func:`pause`): first the alarm that says why and what to do, then the game's
  pause event naming it.
- **Deal order decides.** A piece read while the deal waits queues behind the one
  that paused it (:func:`queued`), numbered in line.
- **A supervisor settles it.** Entered or accepted, the deal resumes
  (:func:`resume`): the game's resume event naming the pause's alarm, that alarm
  cleared (when no one cleared it yet), then the first piece (as entered) and every
  one queued behind it decided again in deal order, each against the state the
  events before it leave, so one may pause again. A pause with no piece (a lost
  reader back) resumes the same way with nothing to decide.

What stays the game's (:class:`Dealt`): its events' names and their fields (a card's
name the shoe and the hand, a tile's the round), the alarms' words, and how one piece
is decided. Its state has ``paused`` (why the deal waits, None while it does not),
``held`` (the pieces waiting, the first the one that paused) and ``pause_alarm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol

from daemon.table import Decision, TableState, raise_alarm


@dataclass(frozen=True)
class HoldEvents:
    """A game's names for the procedure's three events."""

    held: str  # a piece queued behind the one the deal waits on (``card.held``)
    paused: str  # the deal paused, naming its alarm (``table.paused``)
    resumed: str  # the deal resumed by a supervisor, naming the alarm it settles


class Origin(NamedTuple):
    """How a piece comes to be decided: read past the reader (:data:`READ`), or held and
    now entered (its value the supervisor's) or accepted as read, by ``by``."""

    by: str | None = None
    entered: bool = False
    accepted: bool = False


#: a piece as the reader read it
READ = Origin()


class Dealt(Protocol):
    """What a game dealt past a reader gives the procedure."""

    hold_events: ClassVar[HoldEvents]

    def held_data(self, g: Any, piece: Any, queued: int) -> dict[str, Any]:
        """The held event's fields for ``piece``, ``queued``-th in line."""
        ...

    def decide_piece(self, t: TableState, g: Any, d: Decision, piece: Any, how: Origin) -> None:
        """Decide one piece (read, or held and now entered or accepted): place it, queue it
        (:func:`queued`), pause the deal (:func:`pause`) or set it aside."""
        ...


def queued(game: Dealt, g: Any, d: Decision, piece: Any) -> bool:
    """While the deal waits, ``piece`` queues behind what it waits on (True); else False."""
    if g.paused is None:
        return False
    d.add(game.hold_events.held, **game.held_data(g, piece, len(g.held) + 1))
    return True


def pause(
    game: Dealt,
    t: TableState,
    d: Decision,
    kind: str,
    message: str,
    data: dict[str, Any],
    **alarm: Any,
) -> str:
    """Stop the deal until a supervisor settles why: the alarm (``kind``, ``message``,
    ``alarm``: its rule, action and fields), then the pause event (``data``) naming it."""
    aid = raise_alarm(t, d, kind, message, **alarm)
    d.add(game.hold_events.paused, **data, alarm=aid)
    return aid


def resume(
    game: Dealt,
    t: TableState,
    g: Any,
    d: Decision,
    data: dict[str, Any],
    *,
    by: str,
    reason: str,
    first: Any = None,
    entered: bool = False,
) -> None:
    """Go on with the deal: the resume event (``data``), the pause's alarm cleared for
    ``reason``, then ``first`` (the held piece as entered or accepted; None: no piece
    waits) and every piece held behind it, decided in deal order."""
    d.add(game.hold_events.resumed, **data, alarm=g.pause_alarm)
    if g.pause_alarm is not None and g.pause_alarm in t.alarms:
        d.add("alarm.cleared", id=g.pause_alarm, by=by, reason=reason)
    if first is None:
        return
    for i, piece in enumerate((first, *g.held[1:])):
        now: TableState = d.state()
        game.decide_piece(
            now, now.game, d, piece, Origin(by, entered and i == 0, not entered and i == 0)
        )
