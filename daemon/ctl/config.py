"""``tablectl list`` and ``tablectl config check``: what this PC is set up to run, read
without asking any daemon (the configs in /etc/tabled, the notes in /run/tabled)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from daemon.ctl.shared import EXIT_OK, EXIT_USAGE, default_config, print_json
from daemon.runtime.config import ConfigError, effective, load


def cmd_list(a: argparse.Namespace) -> int:
    from daemon.ctl import tables

    rows = tables.tables()
    if a.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        print(
            f"no tables on this PC (no {tables.etc_root()}/*.toml, nothing in {tables.run_root()})"
        )
        return EXIT_OK
    print(f"{'table':<12} {'state':<8} {'game':<13} sockets you may use")
    for r in rows:
        state = "running" if r.get("running") else "stopped"
        socks = ", ".join(r.get("sockets", {})) or "-"
        print(f"{r['table']:<12} {state:<8} {r.get('game') or '?':<13} {socks}")
    return EXIT_OK


def cmd_config_check(a: argparse.Namespace) -> int:
    try:
        path = (
            a.file
            or a.config
            or (
                str(Path(os.environ.get("TABLED_ETC", "/etc/tabled")) / f"{a.table}.toml")
                if a.table
                else default_config()
            )
        )
        s = load(path)
        from daemon.runtime import host

        if here := host.problems(s):  # what the daemon refuses at start on this PC
            raise ConfigError(s.source, here)
    except ConfigError as e:
        print(f"{len(e.problems)} problem(s) in {e.path}:", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    print_json(effective(s))
    return EXIT_OK


def cmd_complete(a: argparse.Namespace) -> int:
    """Names for the shell's completion, one a line; nothing (never an error) when there
    are none to give: a completion must not print into the command line being typed."""
    from daemon.ctl import tables
    from daemon.ctl.shared import settings

    try:
        if a.kind == "tables":
            names = [r["table"] for r in tables.tables()]
        else:
            names = [d.name for d in settings(a).config.devices]
    except (ConfigError, OSError):
        names = []
    print("\n".join(names))
    return EXIT_OK
