"""Table commands from ``tablectl``: every game's own (built from their ``commands``,
``daemon/tools/game_commands.py``) and the table's ``alarm clear``, sent to the daemon and
answered in one line."""

from __future__ import annotations

import argparse
from typing import Any

from daemon.ctl.shared import EXIT_OK, call, print_json


def send(a: argparse.Namespace, cmd: str, args: dict[str, Any]) -> int:
    """Send one table command and say what it did."""
    rc, res = call(a, cmd, **args)
    if rc:
        return rc
    if a.json:
        print_json(res)
    elif res.get("replayed"):
        print(f"ok: {cmd}: {res['note']}")  # a retry: committed the first time, not again
    elif not res["events"] and res.get("note"):
        print(res["note"])  # nothing to do, nothing journaled (alarm clear all)
    else:
        print(f"ok: {cmd} → {', '.join(res['events'])} (seq {res['last_seq']})")
    return EXIT_OK


def operator(cmd: str) -> Any:
    def run(a: argparse.Namespace) -> int:
        args = {k: v for k in ("reason", "id") if (v := getattr(a, k, None)) is not None}
        return send(a, cmd, args)

    return run


def register_games(sub: Any) -> None:
    """One sub-command per command of any installed game."""
    from daemon import games
    from daemon.table import SESSION_COMMANDS
    from daemon.tools import game_commands

    # a dealer's and the table's sessions are every game's (``daemon/table/sessions.py``)
    every = {n: {**SESSION_COMMANDS, **g.commands} for n, g in games.games().items()}
    game_commands.register(sub, every, send)


#: ``tablectl alarm clear ID --reason WHY``
cmd_alarm_clear = operator("alarm.clear")


def cmd_correct(a: argparse.Namespace) -> int:
    """``tablectl correct SEQ NAME=VALUE... --reason WHY --ref REF``: ``result.correct``."""
    args = {"seq": a.seq, "inputs": list(a.inputs), "reason": a.reason, "ref": a.ref}
    return send(a, "result.correct", args)
