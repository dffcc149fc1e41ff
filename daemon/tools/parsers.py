"""Every built-in ``tablectl`` command's arguments, importing nothing but argparse.

The test suite runs tablectl ~130 times and a technician by hand: building the parser
must not cost the imports of every command (rich for monitor, structlog for gpio,
cryptography for keys, msgspec and the config loader for all). So a command's arguments
are defined here and its implementation is named, ``module:function``, and imported
only when that command runs (:func:`_impl`). The games' own commands are not here:
they come from the installed games (``daemon/tools/game_commands.py``), which the full
parser imports (``daemon/ctl/cli.py`` says when).

``tests/test_tablectl_startup.py`` checks that every named implementation exists and
that a light command imports none of this.

Why long: one declarative table of every built-in command's arguments (~35 commands), kept
in one module so that building the parser is one import; each ``_name`` function is a few
lines of ``add_argument`` calls with no logic to split by.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the control roles, as ``daemon.security.keyfiles.ROLES`` (that package imports zmq and
#: cryptography; a test keeps the two the same)
ROLES = ("viewer", "dealer", "supervisor", "technician")


def names(kind: str) -> dict[str, Any]:
    """A shell completion of this PC's tables or the table's devices, for an argument's
    ``complete`` (what ``shtab.cmd("tablectl complete KIND")`` gives, without importing
    shtab to build a parser): the shell asks tablectl for the names as it completes."""
    command = f"tablectl complete {kind} 2>/dev/null"
    fn = f"_tablectl_complete_{kind}"
    return {
        "bash": fn,
        "zsh": f"($({command}))",
        "tcsh": f"`{command}`",
        "preamble": {"bash": f'{fn}() {{\n  compgen -W "$({command})" -- $1\n}}\n'},
    }


def _impl(target: str) -> Callable[[argparse.Namespace], int]:
    """The command ``module:function``, imported when it runs, not when the parser is built."""
    module, _, name = target.partition(":")

    def run(a: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(module), name)(a))

    run.target = target  # type: ignore[attr-defined]  # for the test that each one exists
    return run


def _traced(a: argparse.Namespace) -> int:
    from daemon.ctl.shared import call
    from daemon.tools import trace

    return trace.run(a, call)


def _config(sub: Any) -> None:
    ls = sub.add_parser(
        "list",
        help="the tables on this PC, running or not, and the sockets you may use",
        epilog="example: tablectl list",
    )
    ls.set_defaults(func=_impl("daemon.ctl.config:cmd_list"))

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
    cc.set_defaults(func=_impl("daemon.ctl.config:cmd_config_check"))


def _game_ref(text: str) -> str:
    import re

    if not re.fullmatch(r"\d+(:\d+)?", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a game: SHOE:HAND (3:41) for card games, N for a spin or round"
        )
    return text


def _journal(sub: Any) -> None:
    v = sub.add_parser("verify", help="check the journal's whole hash chain")
    v.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    v.add_argument(
        "--game",
        help="the journal's game, whose secret rows (a hole card dealt face down) are opened "
        "against their commitments (default: the config's)",
    )
    v.set_defaults(func=_impl("daemon.ctl.journal:cmd_verify"))

    r = sub.add_parser("recall", help="the last games with every card, void and alarm")
    r.add_argument("--last", type=int, default=10, help="how many of the last games (default 10)")
    r.add_argument(
        "--hand",
        type=_game_ref,
        help="one game: SHOE:HAND (card games) or a spin/round number",
    )
    r.add_argument("--game", help="the game the journal is of (default: the config's)")
    r.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    r.set_defaults(func=_impl("daemon.ctl.journal:cmd_recall"))

    pc = sub.add_parser("pace", help="rounds per hour by dealer and by hour, from the journal")
    pc.add_argument("--game", help="the game the journal is of (default: the config's)")
    pc.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    pc.set_defaults(func=_impl("daemon.tools.pace:cmd_pace"))


def _time(text: str) -> str:
    """A ``--since``/``--until`` time, parsed when given (``daemon/ctl/events.py``)."""
    from daemon.ctl.events import parse_time

    try:
        return parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _events(sub: Any) -> None:
    p = sub.add_parser(
        "events",
        help="query the journal by time, type and game, and follow it live (-f)",
        description="The journal's events, oldest first, as journalctl shows a log: "
        "the filters combine (all must match); -f then follows the live table.",
        epilog="example: tablectl events --since '10m ago' --type 'alarm.*' -f",
    )
    p.add_argument(
        "--since",
        type=_time,
        help="from this time on: ISO 8601, 10:00, today, '10 min ago' (or --since=-10m)",
    )
    p.add_argument("--until", type=_time, help="up to this time")
    p.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="TYPE",
        help="an event type, or a pattern such as 'alarm.*'; repeatable (any of them)",
    )
    p.add_argument(
        "--round",
        dest="round_ref",
        type=_game_ref,
        metavar="REF",
        help="one game's events: SHOE:HAND (card games) or a spin/round number",
    )
    p.add_argument(
        "-n", "--lines", type=int, default=None, help="only the last N that match (default: all)"
    )
    p.add_argument(
        "-f", "--follow", action="store_true", help="then follow the live table (Ctrl-C ends)"
    )
    p.add_argument("--seconds", type=float, default=None, help="with -f: stop after this long")
    p.add_argument("--game", help="the game the journal is of (default: the config's)")
    p.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    p.set_defaults(func=_impl("daemon.ctl.events:cmd_events"))


def _get(sub: Any) -> None:
    p = sub.add_parser(
        "get",
        help="one value of the running table for scripts (no KEY: every key and its value)",
        epilog="example: tablectl get device.shoe.health",
    )
    p.add_argument(
        "key", nargs="?", help="journal.seq, device.NAME.health, game.hand, alarms.count, …"
    )
    p.set_defaults(func=_impl("daemon.ctl.get:cmd_get"))


def _status(sub: Any) -> None:
    sub.add_parser("status", help="table, game, journal, devices and alarms").set_defaults(
        func=_impl("daemon.ctl.status:cmd_status")
    )
    sub.add_parser("devices", help="each device's health and counters").set_defaults(
        func=_impl("daemon.ctl.status:cmd_devices")
    )


def _replay(sub: Any) -> None:
    rp = sub.add_parser(
        "replay", help="run captures through the real protocol and table, print events"
    )
    rp.add_argument("captures", nargs="+", help="capture files (docs/captures.md)")
    rp.set_defaults(func=_impl("daemon.ctl.replay:cmd_replay"))


def _trace(sub: Any) -> None:
    p = sub.add_parser("trace", help="a device's raw frames, live (--save writes a capture)")
    dev = p.add_argument("device", help="the device's name in the config (shoe, wheel, …)")
    dev.complete = names("devices")  # type: ignore[attr-defined]
    p.add_argument("--save", metavar="FILE", help="also write the trace as a capture file")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long")
    p.add_argument("--frames", type=int, default=None, help="stop after this many frames")
    p.add_argument(
        "--raw",
        action="store_true",
        help="bytes only: do not decode each frame with the device's driver",
    )
    p.set_defaults(func=_traced)


def _monitor(sub: Any) -> None:
    p = sub.add_parser("monitor", help="live view of the table (--json: the raw events)")
    p.add_argument(
        "--history",
        type=int,
        default=None,
        help="events to read back at start (default: 3000 on a terminal, for the scoreboards; "
        "none into a pipe or with --json)",
    )
    p.add_argument("--seconds", type=float, default=None, help="stop after this long")
    p.set_defaults(func=_impl("daemon.tools.monitor:run"))


def _ports(sub: Any) -> None:
    p = sub.add_parser("ports", help="serial and USB devices, and which configured device each is")
    p.set_defaults(func=_impl("daemon.tools.ports:run_ports"))
    q = sub.add_parser("probe", help="talk to one device without the daemon")
    q.add_argument("--driver", required=True, help="the driver to probe with (shoe-line, …)")
    q.add_argument("--port", required=True, help="path, pyserial URL or usb:VID:PID[:SERIAL]")
    q.add_argument("--seconds", type=float, default=5.0, help="how long to listen (default 5)")
    q.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='a driver option (TOML value), e.g. encoding="boxed"',
    )
    q.set_defaults(func=_impl("daemon.tools.ports:run_probe"))


def _doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check what most often breaks a table, and print the fix")
    p.add_argument("--user", default="tabled", help="the service user (default: tabled)")
    p.set_defaults(func=_impl("daemon.tools.doctor:run"))


def _gpio(sub: Any) -> None:
    p = sub.add_parser("gpio", help="the dealer's GPIO panel, without the daemon")
    gsub = p.add_subparsers(dest="gpio_cmd", required=True, metavar="ACTION")
    t = gsub.add_parser(
        "test", help="show button presses live and cycle each light (stop tabled first)"
    )
    t.add_argument("--device", help="the gpio-panel device (default: the config's only one)")
    t.add_argument(
        "--mock", action="store_true", help="gpiozero's MockFactory instead of the real pins"
    )
    t.add_argument(
        "--press",
        action="append",
        default=[],
        metavar="NAME",
        help="with --mock: press a button (close_betting, …), lift and replace the shoe "
        "(shoe_present) or unplug and replug the panel (panel_sense); repeatable",
    )
    t.add_argument(
        "--seconds", type=float, default=None, help="stop after this long (default: Ctrl-C)"
    )
    t.add_argument(
        "--light-seconds", type=float, default=1.0, help="each light's time on (default 1 s)"
    )
    t.add_argument("--no-lights", action="store_true", help="do not cycle the lights")
    t.set_defaults(func=_impl("daemon.tools.gpio:run_test"))


def _sim(sub: Any) -> None:
    p = sub.add_parser(
        "sim",
        help="start a device simulator on a pty and print its path (practice without hardware)",
        epilog="example: tablectl sim --driver shoe-line --link /tmp/shoe --seconds 60",
    )
    p.add_argument("--driver", required=True, help="the driver whose device to simulate")
    p.add_argument("--link", type=Path, help="also make this symlink point at the pty")
    p.add_argument("--pace", type=float, default=0.5, help="seconds between a shoe's cards")
    p.add_argument("--seed", type=int, default=1, help="the shuffle's seed")
    p.add_argument("--seconds", type=float, default=None, help="stop after this long")
    p.set_defaults(func=_impl("daemon.tools.sim:run"))


def _keys(sub: Any) -> None:
    """``tablectl keys NAME [--dir DIR] [--role ROLE] [--checkpoint]``."""
    k = sub.add_parser(
        "keys",
        help="make a CURVE key pair (or an Ed25519 checkpoint key) for [security]",
        description="Write NAME.key + NAME.key_secret (CURVE, secret mode 0600), or with "
        "--checkpoint NAME.ed25519 + NAME.ed25519.pub; never overwrites a file.",
    )
    k.add_argument("name", help="the key's name: a client's name in the journal and the logs")
    k.add_argument("--dir", default=".", help="where to write the files (default: here)")
    k.add_argument(
        "--role",
        dest="key_role",
        choices=ROLES,
        help="a control client's role, kept in its certificate",
    )
    k.add_argument(
        "--checkpoint", action="store_true", help="an Ed25519 key that signs checkpoints"
    )
    k.set_defaults(func=_impl("daemon.ctl.keys:cmd_keys"))


def _device(sub: Any) -> None:
    dv = sub.add_parser(
        "device",
        help="send a command to a device (technician; journaled first); "
        "`device shake`: shake the table's dice shaker",
    )
    dv.add_argument(
        "device", help="the device's name, or `shake` for the table's dice shaker"
    ).complete = names("devices")  # type: ignore[attr-defined]
    dv.add_argument(
        "command",
        nargs="*",
        help="a command by name (--list shows them: version, status, …) or its text, e.g. '*T D'",
    )
    dv.add_argument(
        "-l",
        "--list",
        action="store_true",
        help="the device's commands by name, and what each does",
    )
    dv.add_argument("--wait", type=float, default=3.0, help="seconds to wait for the replies")
    dv.set_defaults(func=_impl("daemon.ctl.device:cmd_device"))

    wh = sub.add_parser("wheel", help="a wheel's diagnostics (technician)")
    wh.add_argument("action", choices=["version", "selftest", "settings", "log", "reconcile"])
    wh.add_argument(
        "args", nargs="*", help="settings: parameter letters; log, reconcile: page numbers"
    )
    wh.add_argument(
        "--device", default="wheel", help="the wheel's device name (default wheel)"
    ).complete = names("devices")  # type: ignore[attr-defined]
    wh.add_argument("--wait", type=float, default=None, help="seconds to wait for the replies")
    wh.set_defaults(func=_impl("daemon.ctl.device:cmd_wheel"))


def _complete(sub: Any) -> None:
    p = sub.add_parser(
        "complete",
        help="names for shell completion: this PC's tables, or the table's devices",
        epilog="example: tablectl -t bac-07 complete devices",
    )
    p.add_argument("kind", choices=["tables", "devices"], help="which names, one a line")
    p.set_defaults(func=_impl("daemon.ctl.config:cmd_complete"))


def _alarm(sub: Any) -> None:
    al = sub.add_parser("alarm", help="clear a latched alarm")
    al.add_argument("action", choices=["clear"])
    al.add_argument("id", help="alarm id (see status), or `all`")
    al.add_argument("--reason", required=True, help="why it is cleared: it goes into the journal")
    al.set_defaults(func=_impl("daemon.ctl.commands:cmd_alarm_clear"))


def _correct(sub: Any) -> None:
    co = sub.add_parser(
        "correct",
        help="correct a published result from corrected inputs (supervisor)",
        description="The game re-derives the result from the corrected inputs by its rules "
        "and journals result.corrected; the original stays in the chain "
        "(docs/procedures.md, Result corrections).",
    )
    co.add_argument("seq", type=int, help="the seq of the published result (tablectl recall)")
    co.add_argument(
        "inputs",
        nargs="+",
        metavar="NAME=VALUE",
        help="the corrected inputs, as the table's game names them (docs/procedures.md, "
        "Result corrections): the cards of a box (player=9S,KD), a number (number=17), "
        "dice (faces=3,5,6), tiles (tiles=1p,wd,…); a refusal lists the game's",
    )
    co.add_argument("--reason", required=True, help="why: it goes into the journal")
    co.add_argument(
        "--ref", required=True, help="an incident number or a video time code (journaled)"
    )
    co.set_defaults(func=_impl("daemon.ctl.commands:cmd_correct"))


#: the built-in commands in the order ``tablectl --help`` lists them; the games' commands
#: come between the two (``daemon/ctl/cli.py``)
BEFORE_GAMES: tuple[Callable[[Any], None], ...] = (
    _config,
    _journal,
    _events,
    _status,
    _get,
    _replay,
)
AFTER_GAMES: tuple[Callable[[Any], None], ...] = (
    _trace,
    _monitor,
    _ports,
    _doctor,
    _gpio,
    _sim,
    _keys,
    _device,
    _alarm,
    _complete,
    _correct,
)
