"""tablectl: the field technician's and supervisor's tool.

Readable output by default, ``--json`` for scripts. Exit codes: 0 fine,
1 something needs attention (a failed check, a refused command, an alarm),
2 bad usage or a bad config, 3 the daemon could not be reached.

This module only assembles the parser and runs the chosen command; the commands
live in ``daemon/ctl/`` by job (config, journal, status, commands, device, replay)
and ``daemon/tools/`` (monitor, trace, ports, doctor, gpio, sim, shell).

Two parsers, so that a call costs what its command needs (``docs/performance-history.md``,
tablectl start-up): :func:`light_parser` has the built-in commands only, whose arguments
``daemon/tools/parsers.py`` defines without importing their code; :func:`parser` adds
the installed games' commands, which means importing the games. A call is parsed by the
light one first; what it cannot answer as the full one would (top-level help, any
error, a game's command) is parsed again by the full one, so every message is its own.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any, NoReturn

from daemon.tools import parsers, shell


def add_global_options(p: argparse.ArgumentParser, suppress: bool = False) -> None:
    """The options every command takes, before or after it (``tablectl status --json``)."""

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    p.add_argument(
        "--config",
        default=default(None),
        help="the table's config (default: $TABLED_CONFIG, the only "
        "/etc/tabled/*.toml, or config/demo.toml)",
    )
    p.add_argument(
        "-t",
        "--table",
        default=default(os.environ.get("TABLED_TABLE")),
        help="the table on this PC: its /etc/tabled config if you may read it, else its "
        "sockets in /run/tabled/TABLE (default: $TABLED_TABLE)",
    ).complete = parsers.names("tables")  # type: ignore[attr-defined]
    p.add_argument(
        "--json", action="store_true", default=default(False), help="machine-readable output"
    )
    p.add_argument(
        "--timeout", type=float, default=default(3.0), help="seconds to wait for the daemon"
    )
    p.add_argument(
        "--actor", default=default(None), help="who is acting (default: your login name)"
    )
    p.add_argument(
        "--role",
        default=default(os.environ.get("TABLED_ROLE")),
        choices=["viewer", "dealer", "supervisor", "technician"],
        help="use this role's control socket (default: $TABLED_ROLE, else the first "
        "role socket you may open)",
    )
    p.add_argument(
        "--key",
        default=default(None),
        help="your CURVE secret key file for a tcp control endpoint "
        "(default: $TABLECTL_KEY, then the config's security.client_key)",
    )


def _version() -> str:
    from drivers.plugins import PackageNotFoundError, version  # not importlib.metadata's ~30 ms

    try:
        return version("tabled")
    except PackageNotFoundError:
        return "0+unknown"


class _NeedsFull(Exception):
    """The light parser met what only the full one can answer: an error, top-level help."""


class _Light(argparse.ArgumentParser):
    """A parser whose errors hand the arguments to the full parser, which says them."""

    def error(self, message: str) -> NoReturn:
        raise _NeedsFull(message)


class _FullHelp(argparse.Action):
    """``tablectl -h``: the list of every command, the games' too, so the full parser's."""

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise _NeedsFull("help")


class _LazyVersion(argparse._VersionAction):
    """``--version`` without reading the package metadata unless it is asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"tablectl {_version()}"
        super().__call__(parser, *args, **kwargs)


def _top(light: bool) -> tuple[argparse.ArgumentParser, Any]:
    cls = _Light if light else argparse.ArgumentParser
    p = cls(
        prog="tablectl",
        description="Talk to tabled, check its journal and config.",
        add_help=not light,
    )
    if light:
        p.add_argument("-h", "--help", action=_FullHelp, nargs=0, help=argparse.SUPPRESS)
    add_global_options(p)
    if light:
        p.add_argument("--version", action=_LazyVersion)
    else:
        p.add_argument("--version", action="version", version=f"tablectl {_version()}")
    return p, p.add_subparsers(dest="command", required=True, metavar="COMMAND")


def parser() -> argparse.ArgumentParser:
    """Every command, the installed games' too: help, completion, the man page, errors."""
    from daemon.ctl import commands

    p, sub = _top(light=False)
    for add in parsers.BEFORE_GAMES:
        add(sub)
    commands.register_games(sub)
    for add in parsers.AFTER_GAMES:
        add(sub)
    shell.register(sub, parser)
    shell.finish(p)
    return p


def light_parser() -> argparse.ArgumentParser:
    """The built-in commands only, each importing its code when it runs (``daemon/tools/parsers.py``).

    For a built-in command it parses exactly as :func:`parser` does (the same
    definitions, the same global options and ``tablectl`` usage); anything else — a
    game's command, top-level help, any error — raises to :func:`main`, which parses
    again with the full parser, so every help text and error message is its own.
    """
    p, sub = _top(light=True)
    for add in (*parsers.BEFORE_GAMES, *parsers.AFTER_GAMES):
        add(sub)
    shell.register(sub, parser)
    shell.finish(p)
    return p


def _user_errors() -> tuple[type[BaseException], ...]:
    """The errors that end in one line and exit 2: a module never imported raised none."""
    errors: list[type[BaseException]] = [ValueError, OSError]
    for module, name in (
        ("drivers.base", "DriverError"),
        ("daemon.pipeline.capture", "CaptureError"),
        ("sqlite3", "Error"),  # a journal path that is not one: recall, events
    ):
        if module in sys.modules:
            errors.append(getattr(sys.modules[module], name))
    return tuple(errors)


def main(argv: list[str] | None = None) -> int:
    try:
        a = shell.parse(light_parser(), add_global_options, argv)
    except _NeedsFull:
        a = shell.parse(parser(), add_global_options, argv)
    if a.actor is None:
        try:
            a.actor = getpass.getuser()
        except (KeyError, OSError):
            a.actor = f"uid:{os.getuid()}"
    # the listed user errors end in one line and exit 2; anything else is a bug, exit 4
    return shell.guarded(lambda: a.func(a), _user_errors)


if __name__ == "__main__":
    sys.exit(main())
