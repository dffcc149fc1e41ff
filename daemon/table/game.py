"""What a game gives the table: the :class:`Game` protocol, and its optional members declared
with their defaults (:class:`GameDefaults`), so the plumbing reads them and never probes.

Every game of this repository subclasses :class:`GameDefaults` (through the procedure it is
built on); a third party's game need not: :func:`complete` gives its class the defaults of
what it leaves out when ``daemon.games`` loads it (``docs/architecture.md``, "The game
interface"). A hook whose absence means "skip this work" (a secret card, a summary) is
None by default, so the table does nothing for a game without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import msgspec

from daemon.games.describe import Describer

if TYPE_CHECKING:
    from daemon.table.command_spec import CommandSpec
    from daemon.table.decision import Decision, TableState
    from daemon.table.inputs import Input

#: how a paused card game's alarm ends, when the game does not say (``held_help``)
CARD_HELD_HELP = (
    "it clears when the card is entered (`tablectl card CODE`), accepted "
    "(`tablectl card accept`), or the hand is voided (`tablectl void hand`)"
)


@dataclass(frozen=True, slots=True)
class LogReport:
    """A device's own log of results against the journal's (``tablectl wheel reconcile``), as
    the game's ``check_device_log`` found it; ``command`` journals it (its arguments:
    ``device``, ``pages``, ``logged``, ``compared``, ``mismatches``)."""

    journal: str  # what the journal held, for people: "6 spins"
    compared: int
    mismatches: list[dict[str, Any]]
    lines: list[str]  # each mismatch, for people
    command: str


class Game(Protocol):
    """What a game gives the table (``docs/architecture.md``, "the game interface").

    Found through the ``tabled.games`` entry-point group (:mod:`daemon.games`); its optional
    members are :class:`GameDefaults`'.
    """

    name: ClassVar[str]
    Rules: ClassVar[type[msgspec.Struct]]
    State: ClassVar[type[msgspec.Struct]]
    commands: ClassVar[dict[str, CommandSpec]]
    #: how the game's events read to people: log lines, recall, the monitor
    describe: ClassVar[Describer]

    def __init__(self, rules: Any) -> None: ...

    def initial(self) -> msgspec.Struct: ...

    def decide(self, t: TableState, inp: Input, d: Decision) -> None: ...

    def apply(self, g: Any, type_: str, data: dict[str, Any]) -> Any: ...


class GameDefaults:
    """A game's optional members and what the table does without them."""

    #: bumped when ``State`` changes shape (snapshots of another version are not read)
    STATE_VERSION: ClassVar[int] = 1
    #: a third party's own event types (type → ``tabled_client.events.Data``), registered
    #: when the game is loaded; ours are in ``tabled_client.events``
    events: ClassVar[Mapping[str, type]] = {}
    #: the events that close the corrections' window; None: the describer's voids and
    #: fresh_board (``daemon/table/corrections.py``)
    correction_closers: ClassVar[frozenset[str] | None] = None
    #: why its results are never corrected here (Blackjack); None: ``correct`` says
    corrections_refused: ClassVar[str | None] = None
    #: ``correct(g, type_, original, inputs, later)``: a result re-derived; None: refused
    correct: ClassVar[Callable[..., dict[str, Any]] | None] = None
    #: how an alarm :meth:`held_alarm` names ends (the refusal of ``alarm clear`` says it)
    held_help: ClassVar[str] = CARD_HELD_HELP
    #: the key a game that salts its commitments takes its salts from (replays fix it)
    salt_key: bytes = b""
    #: ``secret_in_play(g)``: a card is secret now (traces wait, frames are withheld)
    secret_in_play: ClassVar[Callable[[Any], bool] | None] = None
    #: ``sealed_words(before, inp, after)``: what may be the secret card, sealed in drafts
    sealed_words: ClassVar[Callable[..., Any] | None] = None
    #: ``check_secrets(events)``: its secret rows against their commitments (verify)
    check_secrets: ClassVar[Callable[..., Any] | None] = None
    #: ``summary(g)``: the game for ``tablectl status`` and a simulator's resume; None: {}
    summary: ClassVar[Callable[[Any], dict[str, Any]] | None] = None
    #: what the game's devices must hear: an event of these types carrying ``acknowledge``
    #: true sends its ``device`` the driver's ``void_acknowledgement()`` (a wheel's ``*R``)
    acknowledged: ClassVar[frozenset[str]] = frozenset()
    #: house-rule keys that need a device able to inform them: key → the capability
    #: (``drivers.base.Driver.lacks``); the config check refuses a key no device informs
    needs: ClassVar[Mapping[str, str]] = {}
    #: ``check_device_log(logged, events, device)``: a device's own log of results (newest
    #: first, ``drivers.base.ResultLog``) against the journal's events, oldest first →
    #: :class:`LogReport`; None: the game has no such check (``tablectl wheel reconcile``)
    check_device_log: ClassVar[Callable[..., LogReport] | None] = None

    def held_alarm(self, g: Any) -> str | None:
        """The alarm only the game's own commands settle (a paused hand), or None."""
        return None

    def on_restart(self, t: TableState, d: Decision) -> None:
        """After a crash (seed 003 §2.1.8): what the game voids. Default: nothing."""

    def on_line_noise(self, t: TableState, d: Decision, device: str) -> None:
        """A device's line turned noisy (its alarm is raised): what the game holds."""

    def helpers(self, submit: Callable[..., Any], state: Callable[[], Any]) -> list[Any]:
        """The game's timers, clients of the table like the croupier. Default: none."""
        return []


#: a third party's class → the same class with the defaults it leaves out
_completed: dict[type, type] = {}


def complete(cls: type) -> type:
    """``cls`` as a :class:`GameDefaults`: itself when it is one, else a subclass of it and
    of the defaults, so what it defines wins and what it leaves out has its default."""
    if issubclass(cls, GameDefaults):
        return cls
    if cls not in _completed:
        _completed[cls] = type(
            cls.__name__,
            (cls, GameDefaults),
            {"__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )
    return _completed[cls]
