"""``tabled-display``: the command line and the process (docs/views.md, docs/operations.md).

Everything it needs to reach the table comes from the table's own config
(``--from-table``: ``[table] id`` and ``game``, ``[bus] publish`` and ``replay``, read as
plain TOML, never through the daemon's code) or from the options. It binds to localhost
unless ``--listen`` says otherwise: the screen at the table runs its browser on the
same PC.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tomllib
from pathlib import Path
from typing import Any

import zmq.auth
from aiohttp import web

from views.display.service import Display, make_app
from views.display.state import Settings

GAMES = ("baccarat", "dragon-tiger", "roulette", "sicbo", "blackjack", "paigow")


class UsageError(Exception):
    """Bad options or an unreadable table config: said in one sentence, exit status 2."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tabled-display",
        description="The table's display: a web page fed by one table's bus.",
        epilog="example: tabled-display --from-table /etc/tabled/bac-07.toml --listen 127.0.0.1:8080",
    )
    p.add_argument(
        "--from-table", metavar="CONFIG", help="the table's config: its id, game and bus endpoints"
    )
    p.add_argument("--table", help="the table id (else from --from-table)")
    p.add_argument(
        "--game", choices=GAMES, help="the game (else from --from-table, else from the events)"
    )
    p.add_argument("--publish", help="the table's PUB endpoint ([bus] publish)")
    p.add_argument("--replay", help="the table's replay endpoint ([bus] replay)")
    p.add_argument(
        "--listen", default="127.0.0.1:8080", help="HOST:PORT to serve on (default %(default)s)"
    )
    p.add_argument(
        "--window",
        type=int,
        default=100,
        help="results counted by the roulette and Sic Bo statistics (default %(default)s)",
    )
    p.add_argument(
        "--hot", type=int, default=5, help="hot and cold numbers shown (default %(default)s)"
    )
    p.add_argument("--last", type=int, default=20, help="last results listed (default %(default)s)")
    p.add_argument("--limits", help='the table limits as shown, e.g. "Min 10 · Max 5 000"')
    p.add_argument(
        "--client-key",
        metavar="FILE",
        help="our CURVE secret certificate, for a table with [security] server_key",
    )
    p.add_argument("--server-key", metavar="FILE", help="the table's public CURVE certificate")
    p.add_argument(
        "--stale-after",
        type=float,
        default=5.0,
        help="seconds without a heartbeat before the page says the table is offline",
    )
    return p


def _from_table(path: str) -> dict[str, Any]:
    try:
        cfg = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"--from-table {path}: {e}") from e
    table, bus = cfg.get("table", {}), cfg.get("bus", {})
    return {
        "table": table.get("id"),
        "game": table.get("game"),
        # the daemon's defaults (docs/config.md, [bus])
        "publish": bus.get("publish", "tcp://127.0.0.1:7700"),
        "replay": bus.get("replay", "tcp://127.0.0.1:7701"),
    }


def resolve(args: argparse.Namespace) -> dict[str, Any]:
    """The options, completed from the table's config; a clear error for what is missing."""
    got = _from_table(args.from_table) if args.from_table else {}
    out = {k: getattr(args, k) or got.get(k) for k in ("table", "game", "publish", "replay")}
    missing = [k for k in ("table", "publish", "replay") if not out[k]]
    if missing:
        raise UsageError(
            f"no {', '.join('--' + m for m in missing)}: give them or --from-table CONFIG"
        )
    if out["game"] is not None and out["game"] not in GAMES:
        raise UsageError(f"game {out['game']!r} has no display; there are: {', '.join(GAMES)}")
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {args.listen!r}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    out["host"], out["port"] = host.strip("[]"), int(port)
    for name in ("window", "hot", "last"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be at least 1, not {getattr(args, name)}")
    if bool(args.client_key) != bool(args.server_key):
        raise UsageError("--client-key and --server-key go together (a CURVE table needs both)")
    out["curve"] = None
    if args.client_key:
        try:
            public, secret = zmq.auth.load_certificate(args.client_key)
            server, _ = zmq.auth.load_certificate(args.server_key)
        except (OSError, ValueError) as e:
            raise UsageError(f"CURVE keys: {e}") from e
        if secret is None:
            raise UsageError(f"--client-key {args.client_key}: not a secret certificate")
        out["curve"] = (public, secret, server)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        o = resolve(args)
    except UsageError as e:
        print(f"tabled-display: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="tabled-display: %(message)s")
    settings = Settings(
        window=args.window, hot=args.hot, last=args.last, game=o["game"], limits=args.limits
    )
    display = Display(
        o["table"],
        o["publish"],
        o["replay"],
        settings,
        curve=o["curve"],
        stale_after=args.stale_after,
    )
    print(
        f"tabled-display: table {o['table']} ({o['publish']}) on http://{args.listen}/",
        file=sys.stderr,
        flush=True,
    )
    web.run_app(
        make_app(display),
        host=o["host"],
        port=o["port"],
        print=None,
        access_log=None,
        shutdown_timeout=2.0,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
