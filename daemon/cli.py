"""tablectl: the field technician's and supervisor's tool.

Readable output by default, ``--json`` for scripts. Exit codes: 0 fine,
1 something needs attention (a failed check, a refused command, an alarm),
2 bad usage or a bad config, 3 the daemon could not be reached.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from daemon.config import ConfigError, effective, load
from daemon.ctl import (
    EXIT_ATTENTION,
    EXIT_OK,
    EXIT_USAGE,
    call,
    default_config,
    follower,
    print_json,
    settings,
)


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


# -- config -----------------------------------------------------------------------------------


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


# -- journal ------------------------------------------------------------------------------------


def _journal_path(a: argparse.Namespace) -> Path:
    if getattr(a, "journal", None):
        return Path(a.journal)
    return settings(a).journal_path


def cmd_verify(a: argparse.Namespace) -> int:
    from daemon.journal import verify_file

    path = _journal_path(a)
    if not path.exists():
        print(f"no journal at {path}", file=sys.stderr)
        return EXIT_USAGE
    game, check = _secret_check(a)
    r = verify_file(path, proof_check=_proof_check(a), secrets=check)
    if r.failure is not None:
        print(f"FAILED: {r.failure}")
        return EXIT_ATTENTION
    if not r.head_seq:
        print(f"ok: {path}: empty journal")
        return EXIT_OK
    snaps = f"{r.snapshots} snapshot(s) proven by the chain"
    if r.unsealed:
        snaps += f", {r.unsealed} older unsealed one(s) not used"
    if r.proofs:
        snaps += f", {r.proofs} stored proof(s) matching it"
    if r.secrets and r.secrets_checked:
        snaps += f", {r.secrets} secret row(s) open their commitments"
    elif r.secrets:
        why = f"{game} has no secret check" if game else "no game known"
        snaps += f", {r.secrets} secret row(s) NOT checked ({why}: pass --game)"
    assert r.head_hash is not None
    print(
        f"ok: {path}: {r.checked} events, chain intact, {snaps}, "
        f"head seq {r.head_seq} hash {r.head_hash[:16]}…"
    )
    return EXIT_OK


def _proof_check(a: argparse.Namespace) -> Any:
    """Checks stored proofs' signatures with the table's checkpoint key (its ``.pub`` beside
    it: tablectl need not read the secret); None without a config naming one, or when that
    public key is not there (the proofs are then checked against the chain only)."""
    if getattr(a, "journal", None):
        return None
    from daemon.security import resolve, verify_checkpoint

    s = settings(a)
    key = s.config.security.checkpoint_key
    if key is None:
        return None
    public = Path(f"{resolve(Path(s.source).resolve().parent, key)}.pub")
    if not public.is_file():
        return None
    return lambda cp: verify_checkpoint(public, cp)


def _secret_check(a: argparse.Namespace) -> tuple[str | None, Any]:
    """The journal's game (``--game``, else the config's) and its check of secret rows, if any.

    A journal given by path may come from another table: a config that cannot
    be read then only means the secrets stay unchecked, said so in the result.
    """
    name = getattr(a, "game", None)
    if name is None:
        try:
            name = settings(a).config.table.game
        except (ConfigError, OSError):
            if not getattr(a, "journal", None):
                raise
            return None, None
    return name, getattr(_game(a, name), "check_secrets", None)


def _describer(a: argparse.Namespace) -> Any:
    """The reading of the journal's game: ``--game``, else the config's."""
    return _game(a, getattr(a, "game", None) or settings(a).config.table.game).describe


def _game(a: argparse.Namespace, name: str) -> Any:
    """The installed game class ``name``; an unknown one is a config error naming the games."""
    from daemon import games

    cls = games.find(name)
    if cls is None:
        known = ", ".join(games.names()) or "none installed"
        raise ConfigError(Path(a.config or default_config()), [f"unknown game {name!r} ({known})"])
    return cls


def _game_ref(text: str) -> str:
    import re

    if not re.fullmatch(r"\d+(:\d+)?", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a game: SHOE:HAND (3:41) for card games, N for a spin or round"
        )
    return text


def cmd_recall(a: argparse.Namespace) -> int:
    from daemon.journal import connect, read_events

    path = _journal_path(a)
    describe = _describer(a)
    ends = sorted(describe.ends)
    marks = ",".join("?" * len(ends))
    db = connect(path, readonly=True)
    if a.hand:
        # one game, named by the game's key fields: SHOE:HAND for card games, a spin or round
        parts = a.hand.split(":")
        if len(parts) != len(describe.key) or not all(p.isdigit() for p in parts):
            print(
                f"tablectl recall: --hand {a.hand!r}: this game is named by "
                f"{':'.join(k.upper() for k in describe.key)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
        cond = " AND ".join(f"json_extract(body, '$.data.{k}') = ?" for k in describe.key)
        rows = db.execute(
            f"SELECT seq FROM events WHERE type IN ({marks}) AND {cond} ORDER BY seq DESC LIMIT 1",
            (*ends, *map(int, parts)),
        ).fetchall()
    else:
        rows = db.execute(
            f"SELECT seq FROM events WHERE type IN ({marks}) ORDER BY seq DESC LIMIT ?",
            (*ends, a.last),
        ).fetchall()
    if not rows:
        if not a.hand:
            print("no games in the journal yet")
            return EXIT_OK
        last = db.execute(
            f"SELECT body FROM events WHERE type IN ({marks}) ORDER BY seq DESC LIMIT 1", ends
        ).fetchone()
        if last is None:
            print("no games in the journal yet")
            return EXIT_OK
        d = json.loads(last[0])["data"]
        ref = (
            f"{d['shoe']}:{d['hand']}"
            if "hand" in d and "shoe" in d
            else str(d.get("spin", d.get("round")))
        )
        kind = "SHOE:HAND" if ":" in ref else "a spin or round number"
        print(
            f"no game {a.hand} in the journal: this table's games are named by {kind}; "
            f"the last is {ref}",
            file=sys.stderr,
        )
        return EXIT_ATTENTION
    first_end = rows[-1][0]
    prev = db.execute(
        f"SELECT MAX(seq) FROM events WHERE seq < ? AND type IN ({marks})",
        (first_end, *ends),
    ).fetchone()[0]
    played: list[dict[str, Any]] = []
    cur: dict[str, Any] = {"events": []}
    for ev in read_events(db, (prev or 0) + 1, rows[0][0]):
        cur["events"].append(msgspec.to_builtins(ev))
        if ev.type in describe.ends:
            cur["end"] = msgspec.to_builtins(ev)
            played.append(cur)
            cur = {"events": []}
    if a.json:
        print_json(played)
        return EXIT_OK
    for g in played:
        print(_game_text(g, describe))
    return EXIT_OK


def _game_text(g: dict[str, Any], describe: Any) -> str:
    end = g["end"]
    lines = [f"seq {end['seq']}  {end['time']}  " + describe.recall(end["type"], end["data"])]
    for ev in g["events"]:
        line = describe.step(ev["type"], ev["data"])
        if line is not None:
            lines.append(f"    {ev['seq']:>8}  {line}")
    return "\n".join(lines)


# -- talking to the daemon -------------------------------------------------------------------------


def cmd_status(a: argparse.Namespace) -> int:
    rc, st = call(a, "status")
    if rc:
        return rc
    attention = (
        bool(st["alarms"])
        or not st["journal_ok"]
        or any(d["health"] != "ok" for d in st["devices"])
    )
    if a.json:
        print_json(st)
        return EXIT_ATTENTION if attention else EXIT_OK
    g = st.get("state", {})
    print(f"table {st['table']} ({st['game']})  tabled {st['version']}  up {st['uptime']:.0f} s")
    where = ", ".join(
        f"{k.replace('_', ' ')} {g[k]}"
        for k in ("shoe", "hand", "cards_out", "spin", "round", "wheel_state")
        if g.get(k) is not None
    )
    print(
        f"  game:    {g.get('text') or g.get('phase') or '-'}" + (f"  ({where})" if where else "")
    )
    if (g.get("expects") or {}).get("text"):  # a table that says what it waits for
        print(f"  next:    {g['expects']['text']}")
    print(
        f"  journal: seq {st['last_seq']}  {'ok' if st['journal_ok'] else 'FAILING: ' + str(st['journal_error'])}"
        f"  {st['journal']}"
    )
    print(f"  bus:     publish {st['publish']}  replay {st['replay']}")
    _devices_table(st["devices"])
    if st["alarms"]:
        print("  alarms:")
        for al in st["alarms"]:
            print(f"    {al['id']} [{al['severity']}] {al['message']}")
            print(f"        rule: {al['rule']}")
            print(f"        next: {al['action']}")
    else:
        print("  alarms:  none")
    return EXIT_ATTENTION if attention else EXIT_OK


def _devices_table(devs: list[dict[str, Any]]) -> None:
    print(
        f"  {'device':<10} {'driver':<13} {'health':<13} {'frames':>7} {'malformed':>9} "
        f"{'unknown':>7} {'reconn':>6} {'last frame':>10}  port"
    )
    for d in devs:
        age = d.get("last_frame_age")
        age_text = "-" if age is None else f"{age:.1f} s"
        print(
            f"  {d['name']:<10} {d['driver']:<13} {d['health']:<13} {d['frames']:>7} "
            f"{d['malformed']:>9} {d['unknown']:>7} {d['reconnects']:>6} {age_text:>10}  "
            f"{d.get('port') or '-'}"
        )
        if d["health"] != "ok":
            print(f"  {'':<10} {d['reason']}")


def cmd_devices(a: argparse.Namespace) -> int:
    rc, res = call(a, "devices")
    if rc:
        return rc
    bad = any(d["health"] != "ok" for d in res["devices"])
    if a.json:
        print_json(res)
    else:
        _devices_table(res["devices"])
    return EXIT_ATTENTION if bad else EXIT_OK


def _send(a: argparse.Namespace, cmd: str, args: dict[str, Any]) -> int:
    """Send one table command and say what it did."""
    rc, res = call(a, cmd, **args)
    if rc:
        return rc
    if a.json:
        print_json(res)
    elif res.get("queued"):
        print(f"queued: {cmd}: {res['note']}")
    elif not res["events"] and res.get("note"):
        print(res["note"])  # nothing to do, nothing journaled (alarm clear all)
    else:
        print(f"ok: {cmd} → {', '.join(res['events'])} (seq {res['last_seq']})")
    return EXIT_OK


def _operator(cmd: str) -> Any:
    def run(a: argparse.Namespace) -> int:
        args = {k: v for k in ("reason", "id") if (v := getattr(a, k, None)) is not None}
        return _send(a, cmd, args)

    return run


def _device_session(
    a: argparse.Namespace,
    device: str,
    commands: list[str],
    wait: float,
    until: Any = None,
) -> int:
    """Send commands through the table (journaled), then show the device's replies from the bus."""

    s = settings(a)
    f = follower(a, s)
    try:
        next(f.events(timeout=3.0, heartbeats=True), None)  # live subscription before we ask
        start = None
        for text in commands:
            rc, res = call(a, "device.command", device=device, command=text)
            if rc:
                return rc
            start = res["last_seq"] if start is None else start
        f.rewind((start or 1) - 1)
        replies = []
        deadline = time.monotonic() + wait
        for ev in f.events(timeout=max(0.1, wait), heartbeats=False):
            if ev.type == "device.reply" and ev.data.get("device") == device:
                replies.append(ev.data)
                if not a.json:
                    print(f"{ev.time}  {ev.data['command']:<8} {ev.data['text']}")
            if time.monotonic() > deadline or (until is not None and until(replies)):
                break
        if a.json:
            print_json(replies)
        elif not replies:
            print(f"no reply from {device} within {wait:g} s", file=sys.stderr)
        return EXIT_OK if replies else EXIT_ATTENTION
    finally:
        f.close()


def cmd_device(a: argparse.Namespace) -> int:
    if a.device == "shake" and not a.command:
        # the one device whose driver can shake (dice-ref: the S frame), journaled like any
        # device command; the shaker's reports then close betting and give the result
        from drivers.base import driver_class

        s = settings(a)
        shakers = [
            d.name
            for d in s.config.devices
            if getattr(driver_class(d.driver), "shake_command", None) is not None
        ]
        if len(shakers) != 1:
            print(
                f"tablectl device shake: {len(shakers)} devices of this table can shake dice "
                f"({', '.join(shakers) or 'none'}); name one: tablectl device NAME shake",
                file=sys.stderr,
            )
            return EXIT_USAGE
        a.device, a.command = shakers[0], ["shake"]
    if not a.command:
        print("tablectl device: give the command text after the device name", file=sys.stderr)
        return EXIT_USAGE
    return _device_session(a, a.device, [" ".join(a.command)], a.wait, lambda r: len(r) >= 1)


#: the tuning parameters a studio technician reads (tests/captures/cammegh-ss2/studio-settings-2025-11.log)
WHEEL_SETTINGS = tuple("CDGHIJKMNPQRSTZ")


def cmd_wheel(a: argparse.Namespace) -> int:
    def each(n: int) -> Any:
        return lambda replies: len(replies) >= n

    if a.action == "version":
        return _device_session(a, a.device, ["*V", "*S"], a.wait or 3.0, each(2))
    if a.action == "selftest":
        # idle only, up to 5 minutes (vendor): *F BUSY, then one *F per fault, *F 0 when none
        def done(replies: list[dict[str, Any]]) -> bool:
            return any(r["text"].strip() in ("0", "F 0", "*F 0") for r in replies)

        return _device_session(a, a.device, ["*F"], a.wait or 330.0, done)
    if a.action == "settings":
        letters = [x.upper() for x in a.args] or list(WHEEL_SETTINGS)
        cmds = [f"*T {x}" for x in letters]
        return _device_session(a, a.device, cmds, a.wait or 5.0, each(len(cmds)))
    if a.action == "reconcile":
        from daemon.tools import reconcile

        return reconcile.run(a)
    pages = a.args or ["0"]
    cmds = [f"*s r {p}" for p in pages]
    return _device_session(a, a.device, cmds, a.wait or 10.0, each(len(cmds)))


# -- replay ------------------------------------------------------------------------------------------


def cmd_replay(a: argparse.Namespace) -> int:
    from daemon.capture import CaptureError
    from daemon.capture import load as load_capture
    from daemon.replay import replay

    try:
        settings = load(a.config) if a.config else None
        caps = [load_capture(p) for p in a.captures]
        r = replay(caps, settings)
    except (CaptureError, ConfigError, OSError) as e:
        print(f"tablectl replay: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = sys.stdout.buffer
    if sys.stdout.isatty() and not a.json:  # a person: one readable line per event
        from daemon.tools.describe import describe

        for ev in r.events:
            out.write(describe(ev).encode() + b"\n")
    else:  # a pipe or --json: the events themselves, as the bus carries them
        for line in r.lines():
            out.write(line + b"\n")
    st = r.stats
    print(
        f"# {len(r.events)} events from {st.frames} frames ({st.malformed} malformed, "
        f"{st.unknown} unknown), {st.commands} commands ({len(st.refused)} refused)",
        file=sys.stderr,
    )
    for why in st.refused:
        print(f"#   refused: {why}", file=sys.stderr)
    return EXIT_OK


# -- parser ------------------------------------------------------------------------------------------


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
    p = argparse.ArgumentParser(
        prog="tablectl", description="Talk to tabled, check its journal and config."
    )
    add_global_options(p)
    p.add_argument("--version", action="version", version=f"tablectl {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    v = sub.add_parser("verify", help="check the journal's whole hash chain")
    v.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    v.add_argument(
        "--game",
        help="the journal's game, whose secret rows (the blackjack hole card) are opened "
        "against their commitments (default: the config's)",
    )
    v.set_defaults(func=cmd_verify)

    r = sub.add_parser("recall", help="the last games with every card, void and alarm")
    r.add_argument("--last", type=int, default=10, help="how many of the last games (default 10)")
    r.add_argument(
        "--hand",
        type=_game_ref,
        help="one game: SHOE:HAND (card games) or a spin/round number",
    )
    r.add_argument("--game", help="the game the journal is of (default: the config's)")
    r.add_argument("journal", nargs="?", help="journal file (default: the config's)")
    r.set_defaults(func=cmd_recall)

    sub.add_parser("status", help="table, game, journal, devices and alarms").set_defaults(
        func=cmd_status
    )
    sub.add_parser("devices", help="each device's health and counters").set_defaults(
        func=cmd_devices
    )

    rp = sub.add_parser(
        "replay", help="run captures through the real protocol and table, print events"
    )
    rp.add_argument("captures", nargs="+", help="capture files (docs/captures.md)")
    rp.set_defaults(func=cmd_replay)

    from daemon import games
    from daemon.tools import game_commands

    game_commands.register(sub, {n: g.commands for n, g in games.games().items()}, _send)

    from daemon.tools import doctor, gpio, monitor, ports, sim, trace

    trace.register(sub, call)
    monitor.register(sub)
    ports.register(sub)
    doctor.register(sub)
    gpio.register(sub)
    sim.register(sub)

    from daemon.keys import add_parser as add_keys_parser

    add_keys_parser(sub)

    dv = sub.add_parser(
        "device",
        help="send a command to a device (technician; journaled first); "
        "`device shake`: shake the table's dice shaker",
    )
    dv.add_argument("device", help="the device's name, or `shake` for the table's dice shaker")
    dv.add_argument("command", nargs="*", help="the command text, e.g. *V or '*T D', or shake")
    dv.add_argument("--wait", type=float, default=3.0, help="seconds to wait for the replies")
    dv.set_defaults(func=cmd_device)

    wh = sub.add_parser("wheel", help="roulette wheel diagnostics (technician)")
    wh.add_argument("action", choices=["version", "selftest", "settings", "log", "reconcile"])
    wh.add_argument(
        "args", nargs="*", help="settings: parameter letters; log, reconcile: page numbers"
    )
    wh.add_argument("--device", default="wheel", help="the wheel's device name (default wheel)")
    wh.add_argument("--wait", type=float, default=None, help="seconds to wait for the replies")
    wh.set_defaults(func=cmd_wheel)

    al = sub.add_parser("alarm", help="clear a latched alarm")
    al.add_argument("action", choices=["clear"])
    al.add_argument("id", help="alarm id (see status), or `all`")
    al.add_argument("--reason", required=True, help="why it is cleared: it goes into the journal")
    al.set_defaults(func=_operator("alarm.clear"))

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
