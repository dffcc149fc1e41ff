"""``tabled-bridge``: run the bridge, or show its status (``docs/floor.md``)."""

from __future__ import annotations

# first, before anything imports structlog: structlog without rich, as the daemon does
# (rich and what it brings are ~4 MiB resident; daemon/runtime/structlog_lean.py says why)
from daemon.runtime import structlog_lean  # noqa: F401

# isort: split
import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import structlog

from bridge import config as bridge_config
from bridge.core import FloorBridge
from bridge.natslink import NatsUnreachable
from daemon.runtime import logs
from daemon.runtime.config import ConfigError

log = structlog.get_logger("tabled.bridge")


#: seconds from SIGTERM to the end of the process, whatever hangs (systemd's TimeoutStopSec
#: is 10): the bridge stores nothing of its own, so leaving mid-publish loses nothing
STOP_LIMIT = 4.5


def _hard_exit() -> None:
    os.write(2, b'{"event":"bridge stop took too long: exiting","level":"error","priority":3}\n')
    os._exit(1)


async def _run(cfg: bridge_config.BridgeConfig, base: Path) -> None:
    b = FloorBridge(cfg, base)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping() -> None:
        if not stop.is_set():
            stop.set()
            t = threading.Timer(STOP_LIMIT, _hard_exit)
            t.daemon = True
            t.start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping)
    log.info("bridge starting", tables=len(cfg.tables), servers=cfg.nats.servers)
    await b.run(stop)
    log.info("bridge stopped")
    if b.abandoned:  # nats-py's tasks wait on the hung server: asyncio.run would too
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _show(status: dict[str, Any]) -> str:
    up = time.time() - status["started"]
    lines = [
        f"bridge pid {status['pid']}, up {up:.0f} s, NATS {status['nats']['state']}, "
        f"stream {status['stream']}",
        f"{'table':<16} {'state':<13} {'stored':>8} {'table':>8} {'lag':>6} {'lag s':>7} "
        f"{'dups':>5} {'errors':>6}  last error",
    ]
    for tid, t in sorted(status["tables"].items()):
        lines.append(
            f"{tid:<16} {t['state']:<13} {t['stored_seq']:>8} {t['table_seq'] or '-':>8} "
            f"{t['lag_events'] if t['lag_events'] is not None else '-':>6} "
            f"{t['lag_seconds']:>7.1f} {t['duplicates']:>5} {t['publish_errors']:>6}  "
            f"{t['last_error'][:60]}"
        )
    changes = sorted(
        (when, tid, level, text)
        for tid, t in status["tables"].items()
        for when, level, text in t.get("changes", [])
    )
    if changes:
        lines.append("recent changes (newest last):")
        for when, tid, level, text in changes[-20:]:
            stamp = time.strftime("%H:%M:%S", time.localtime(when))
            lines.append(f"  {stamp} {level:<7} {tid:<16} {text}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """``tabled-bridge``'s commands, and its man page (``daemon/ctl/manpages.py``)."""
    p = argparse.ArgumentParser(
        prog="tabled-bridge",
        description="Carry a floor of tabled tables into NATS JetStream.",
        epilog=(
            "Exit status: 0 after a clean stop; 1 when it cannot run (a NATS server that "
            "refuses the login or is not trusted, a status that cannot be read), with one "
            "line saying why; 2 when the config is refused, naming the file, the key and "
            "what is wrong. Run by systemd as tabled-bridge.service (`tabled-bridge install`)."
        ),
    )
    p.add_argument(
        "--config", type=Path, help="the bridge's TOML file (docs/floor.md); all but uninstall"
    )
    sub = p.add_subparsers(dest="cmd")
    sub.add_parser("run", help="follow every table and publish (the default)")
    st = sub.add_parser("status", help="each table's state, seq and lag, from the running bridge")
    st.add_argument("--json", action="store_true", help="the status as JSON")
    setup = argparse.ArgumentParser(add_help=False)
    setup.add_argument("--dry-run", "-n", action="store_true", help="print the steps, do nothing")
    setup.add_argument("--root", default="/", type=Path, help="into this root (default: /)")
    i = sub.add_parser(
        "install",
        parents=[setup],
        help="install this config, its key files and tabled-bridge.service, and enable it",
        epilog="example: sudo tabled-bridge --config ./bridge.toml install --start",
    )
    i.add_argument("--start", action="store_true", help="also start the bridge now")
    sub.add_parser(
        "uninstall",
        parents=[setup],
        help="disable the bridge and remove its config and unit (key files stay)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.cmd in ("install", "uninstall"):
        from bridge import setup as bridge_setup

        if args.cmd == "install" and args.config is None:
            p.error("install needs --config FILE")
        return bridge_setup.run(
            args.cmd, args.config, args.root, args.dry_run, getattr(args, "start", False)
        )
    if args.config is None:
        p.error("the following arguments are required: --config")
    try:
        cfg = bridge_config.load(args.config)
    except ConfigError as e:
        print(f"tabled-bridge: {e}", file=sys.stderr)
        return 2
    base = args.config.resolve().parent
    if args.cmd == "status":
        url = f"http://{cfg.bridge.listen}/status"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                status = json.loads(r.read())
        except (OSError, ValueError) as e:
            print(
                f"tabled-bridge: no status from {url} ({e}): is the bridge running?",
                file=sys.stderr,
            )
            return 1
        print(json.dumps(status, indent=1, sort_keys=True) if args.json else _show(status))
        return 0
    logs.setup("info", "auto", component="bridge")
    try:
        asyncio.run(_run(cfg, base))
    except KeyboardInterrupt:
        return 130
    except NatsUnreachable as e:
        log.error(str(e))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
