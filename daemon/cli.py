"""tablectl: the field technician's and supervisor's tool.

Readable output by default, ``--json`` for scripts. Exit codes: 0 fine,
1 something needs attention (a failed check, a refused command, an alarm),
2 bad usage or a bad config, 3 the daemon could not be reached.

This module only assembles the parser and runs the chosen command; the commands
live in ``daemon/ctl/`` by job (config, journal, status, commands, device, replay)
and ``daemon/tools/`` (monitor, trace, ports, doctor, gpio, sim, shell).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

from daemon.ctl import call


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
    )
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
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tabled")
    except PackageNotFoundError:
        return "0+unknown"


def parser() -> argparse.ArgumentParser:
    from daemon.ctl import commands, config, device, journal, replay, status

    p = argparse.ArgumentParser(
        prog="tablectl", description="Talk to tabled, check its journal and config."
    )
    add_global_options(p)
    p.add_argument("--version", action="version", version=f"tablectl {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config.register(sub)
    journal.register(sub)
    status.register(sub)
    replay.register(sub)
    commands.register_games(sub)

    from daemon.tools import doctor, gpio, monitor, ports, sim, trace

    trace.register(sub, call)
    monitor.register(sub)
    ports.register(sub)
    doctor.register(sub)
    gpio.register(sub)
    sim.register(sub)

    from daemon.keys import add_parser as add_keys_parser

    add_keys_parser(sub)

    device.register(sub)
    commands.register_alarm(sub)

    from daemon.tools import shell

    shell.register(sub, parser)
    shell.finish(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from daemon.capture import CaptureError
    from daemon.tools import shell
    from drivers.base import DriverError

    a = shell.parse(parser(), add_global_options, argv)
    if a.actor is None:
        try:
            a.actor = getpass.getuser()
        except (KeyError, OSError):
            a.actor = f"uid:{os.getuid()}"
    # the listed user errors end in one line and exit 2; anything else is a bug, exit 4
    return shell.guarded(lambda: a.func(a), (DriverError, CaptureError, ValueError, OSError))


if __name__ == "__main__":
    sys.exit(main())
