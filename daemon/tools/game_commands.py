"""tablectl's game commands, built from the games' own command lists.

Each installed game (``tabled.games``) lists its commands once, with their help, roles,
words and arguments (:class:`daemon.table.CommandSpec`); this module turns the union of
those lists into ``tablectl`` sub-commands. A command a table's game does not have is
refused by the daemon, naming the commands it has.

``words`` of one or two: ``("cut-card",)`` is ``tablectl cut-card``; ``("void", "hand")``
is ``tablectl void hand``. A verb may have both a bare form taking a word and literal
forms (``tablectl card KD`` and ``tablectl card accept``): the literal wins.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from daemon.table import Arg, CommandSpec


@dataclass
class Form:
    """One command as tablectl spells it, and the games that have it."""

    name: str
    spec: CommandSpec
    games: list[str] = field(default_factory=list)

    def text(self) -> str:
        return f"{self.spec.help} ({', '.join(self.games)})"


class GameCommandError(Exception):
    pass


def forms(game_commands: dict[str, dict[str, CommandSpec]]) -> dict[str, dict[str, Form]]:
    """verb → second word ('' for the bare form) → form, over every game's command list."""
    verbs: dict[str, dict[str, Form]] = {}
    for game, commands in sorted(game_commands.items()):
        for name, sp in commands.items():
            if sp.tool:  # sent by a tablectl tool of its own (``wheel reconcile``)
                continue
            words = sp.cli_words(name)
            if not 1 <= len(words) <= 2:
                raise GameCommandError(f"{game}: {name}: tablectl words are one or two: {words}")
            verb, rest = words[0], words[1] if len(words) == 2 else ""
            f = verbs.setdefault(verb, {}).setdefault(rest, Form(name, sp))
            if f.name != name:
                raise GameCommandError(
                    f"{game}: {name} is spelt `tablectl {' '.join(words)}`, as {f.name} is"
                )
            if f.games and sp.args != f.spec.args:
                f.spec = _merged(f.spec, sp)
            f.games.append(game)
    return verbs


def _merged(a: CommandSpec, b: CommandSpec) -> CommandSpec:
    """One command two games take with different arguments (blackjack's ``betting close
    --boxes``): every argument of either, required only where both require it."""
    args = {x.name: x for x in a.args}
    for y in b.args:
        x = args.get(y.name)
        args[y.name] = (
            replace(y, required=False)
            if x is None
            else replace(x, required=x.required and y.required)
        )
    for name in args:
        if name not in {y.name for y in b.args}:
            args[name] = replace(args[name], required=False)
    return replace(a, args=tuple(args.values()))


def _positional(f: Form) -> list[Arg]:
    return [x for x in f.spec.args if not x.option]


def _lead(f: Form) -> str:
    return " ".join(x.name.upper() for x in _positional(f))


def register(
    sub: Any,
    game_commands: dict[str, dict[str, CommandSpec]],
    send: Callable[[argparse.Namespace, str, dict[str, Any]], int],
) -> None:
    """Add one sub-command per verb; ``send(a, command, args)`` runs the chosen command."""
    for verb, by_word in sorted(forms(game_commands).items()):
        literal = {w: f for w, f in by_word.items() if w}
        bare = by_word.get("")
        first = next(iter(by_word.values()))
        if len(by_word) == 1:
            help_text = first.spec.help
        else:
            help_text = "; ".join(f"{w or _lead(f)}: {f.spec.help}" for w, f in by_word.items())
        desc = "\n".join(f"  {verb} {w or _lead(f)}: {f.text()}" for w, f in by_word.items())
        p = sub.add_parser(
            verb,
            help=help_text,
            description=desc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        taken: set[str] = set()
        if literal:
            if bare is not None:
                lead = _positional(bare)
                if not lead:
                    raise GameCommandError(f"{verb}: a bare form beside literal words needs a word")
                taken.add(lead[0].name)
                p.add_argument(
                    "action",
                    metavar=lead[0].name.upper(),
                    help=f"{lead[0].help}, or one of: {', '.join(literal)}",
                )
            else:
                p.add_argument("action", choices=list(literal))
        everyone = list(by_word.values())
        for f in everyone:
            for x in f.spec.args:
                if x.name in taken:
                    continue
                taken.add(x.name)
                needed = all(
                    any(y.name == x.name and y.required for y in g.spec.args) for g in everyone
                )
                if x.option:
                    p.add_argument(
                        f"--{x.name}",
                        dest=f"arg_{x.name}",
                        metavar=x.name.upper(),
                        type=x.type,
                        required=needed,
                        help=x.help,
                    )
                else:
                    p.add_argument(
                        f"arg_{x.name}",
                        metavar=x.name.upper(),
                        type=x.type,
                        nargs=None if needed else "?",
                        help=x.help,
                    )
        p.set_defaults(func=_runner(verb, by_word, send))


def _runner(
    verb: str,
    by_word: dict[str, Form],
    send: Callable[[argparse.Namespace, str, dict[str, Any]], int],
) -> Callable[[argparse.Namespace], int]:
    def run(a: argparse.Namespace) -> int:
        action = getattr(a, "action", None)
        bare = by_word.get("")
        if action is not None and action in by_word and action:
            f, given = by_word[action], {}
        elif bare is not None:
            f = bare
            given = {_positional(bare)[0].name: action} if action is not None else {}
        else:  # argparse's choices make this unreachable
            raise GameCommandError(f"{verb}: no form {action!r}")
        args: dict[str, Any] = {}
        for x in f.spec.args:
            v = given.get(x.name, getattr(a, f"arg_{x.name}", None))
            if v is None and x.required:
                spelt = f"--{x.name}" if x.option else x.name.upper()
                print(f"tablectl {verb}: {f.name} needs {spelt}", file=sys.stderr)
                return 2
            if v is not None:
                args[x.name] = v
        return send(a, f.name, args)

    return run
