"""``tablectl list`` and ``tablectl config check``: what this PC is set up to run, read
without asking any daemon (the configs in /etc/tabled, the notes in /run/tabled)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from daemon.config import ConfigError, effective, load
from daemon.ctl import EXIT_OK, EXIT_USAGE, default_config, print_json


def cmd_list(a: argparse.Namespace) -> int:
    from daemon import tables

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
    except ConfigError as e:
        print(f"{len(e.problems)} problem(s) in {e.path}:", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return EXIT_USAGE
    print_json(effective(s))
    return EXIT_OK


def register(sub: Any) -> None:
    ls = sub.add_parser(
        "list",
        help="the tables on this PC, running or not, and the sockets you may use",
        epilog="example: tablectl list",
    )
    ls.set_defaults(func=cmd_list)

    c = sub.add_parser("config", help="check a config file")
    csub = c.add_subparsers(dest="config_cmd", required=True)
    cc = csub.add_parser(
        "check",
        help="print every problem (exit 2) or the effective config",
        epilog="example: tablectl config check /etc/tabled/bac-07.toml",
    )
    cc.add_argument(
        "file", nargs="?", help="the config (default: --config, $TABLED_CONFIG, -t's, as above)"
    )
    cc.set_defaults(func=cmd_config_check)
