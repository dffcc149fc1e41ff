"""Commands as a game declares them: who may send one, what it is for, how ``tablectl``
spells it (:class:`CommandSpec`, made by :func:`spec`), and the roles.

A game lists each command once; ``tablectl`` builds its game commands from these lists
(``daemon/tools/game_commands.py``) and the table refuses a command its game lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROLES = ("viewer", "dealer", "supervisor", "technician")


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument of a command, as ``tablectl`` takes it and the command's ``args`` carry it."""

    name: str
    help: str
    required: bool = True
    option: bool = False  # ``--name VALUE``; else a positional word
    type: Callable[[str], Any] = str
    #: what JSON value it takes (``daemon/table/command_args.py``): ``scalar`` (a string, an
    #: integer, a finite number or a boolean), ``list`` (a scalar or a list of them),
    #: ``objects`` (a list of objects)
    kind: str = "scalar"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """Who may issue a command, what it is for, and how ``tablectl`` spells it.

    ``words`` are the tablectl words (``("void", "hand")`` for ``tablectl void hand``);
    empty means the command's name split at its dot (``betting.open`` → ``betting open``).
    ``tablectl`` builds its game commands from these, so a game lists each command once.
    """

    roles: frozenset[str]
    help: str
    words: tuple[str, ...] = ()
    args: tuple[Arg, ...] = ()
    #: arguments it also takes that ``tablectl`` does not offer (a game server's, a tool's)
    more: tuple[Arg, ...] = ()
    #: roles that may issue it from the dealer's panel only (source ``button``), not from
    #: the control socket (``docs/security.md``, Roles per command)
    button_roles: frozenset[str] = frozenset()
    #: sent by a ``tablectl`` tool of its own (``tablectl wheel reconcile``), which builds
    #: its arguments: not made a game command of ``tablectl``
    tool: bool = False

    def allows(self, role: str, source: str) -> bool:
        return role in self.roles or (source == "button" and role in self.button_roles)

    def cli_words(self, name: str) -> tuple[str, ...]:
        return self.words or tuple(name.split("."))


#: the reason every void and clear takes (``--reason``), kept in the journal
REASON = Arg("reason", "why, for the record (journaled)", option=True)


def spec(
    help_text: str,
    *roles: str,
    words: tuple[str, ...] = (),
    args: tuple[Arg, ...] = (),
    more: tuple[Arg, ...] = (),
    button_roles: tuple[str, ...] = (),
    tool: bool = False,
) -> CommandSpec:
    return CommandSpec(
        frozenset(roles), help_text, words, args, more, frozenset(button_roles), tool
    )


#: a command's ``args`` as JSON, at most: each is journaled in ``operator.command`` [ours]
ARGS_MAX_BYTES = 1024
