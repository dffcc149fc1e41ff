"""``tabled``: the command that runs one table's daemon (:class:`daemon.runtime.wiring.Daemon`).

Reads and checks the config (a refusal is one line per problem, exit 2), sets up the log,
checks the host, runs the daemon until SIGTERM or SIGINT and says why it could not run
(exit 1). ``build_parser`` is also the man page's source (``daemon/ctl/manpages.py``).
"""

from __future__ import annotations

# first, before anything imports structlog: structlog without rich (4 MiB, 0.2 s of a start)
from daemon.runtime import structlog_lean  # noqa: F401

# isort: split
import argparse
import asyncio
import os
import signal
import sys

import structlog
import zmq

from daemon.journal import JournalError
from daemon.runtime import host, logs
from daemon.runtime.config import ConfigError, Settings, load, prepare_state_dir
from daemon.runtime.daemon_control import DAEMON_COMMANDS
from daemon.runtime.wiring import Daemon, package_version

#: the daemon and its commands are ``daemon/runtime/wiring.py``'s and ``daemon/runtime/daemon_control.py``'s,
#: importable from here as before
__all__ = ["DAEMON_COMMANDS", "Daemon", "build_parser", "main", "package_version"]

log = structlog.get_logger("tabled")

DEFAULT_CONFIG = "config/demo.toml"


# -- entry point ------------------------------------------------------------------------------


def default_config() -> str:
    return os.environ.get("TABLED_CONFIG") or DEFAULT_CONFIG


def build_parser() -> argparse.ArgumentParser:
    """``tabled``'s options, and its man page (``daemon/ctl/manpages.py``)."""
    p = argparse.ArgumentParser(
        prog="tabled",
        description=(
            "Table controller daemon: reads the table's devices, applies the game's rules, "
            "journals every event and publishes it on the table's ZeroMQ bus. Run by "
            "systemd as tabled@TABLE.service; `tablectl` talks to it."
        ),
        epilog=(
            "Exit status: 0 after a clean stop (SIGTERM or SIGINT: the queued inputs are "
            "committed, then daemon.stopped); 1 when it cannot run or must stop (a journal "
            "that is damaged or refuses a write that retrying cannot mend, a socket it cannot "
            "bind), with one line saying why; 2 when the config is refused, naming the file, "
            "the key and what is wrong. Environment: TABLED_CONFIG, the config when --config "
            "is not given; NOTIFY_SOCKET, systemd's READY, WATCHDOG and STATUS notifications."
        ),
    )
    p.add_argument(
        "--config", default=None, help=f"table config (default: $TABLED_CONFIG or {DEFAULT_CONFIG})"
    )
    p.add_argument("--version", action="version", version=f"tabled {package_version()}")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    path = a.config or default_config()
    try:
        settings = load(path)
    except ConfigError as e:
        # before the config's own [log] section is known: the default, so that under
        # journald the refusal is one JSON line at priority 3, on a terminal plain text
        logs.setup("info", "auto")
        if logs.is_json():
            log.error("tabled refusing to start", config=e.path, problems=str(e).splitlines())
        else:
            print(
                f"tabled: refusing to start: {len(e.problems)} problem(s) in {e.path}",
                file=sys.stderr,
            )
            print(str(e), file=sys.stderr)
        return 2
    logs.setup(settings.config.log.level, settings.config.log.format, table=settings.table)
    try:
        if here := host.problems(settings, keys=False):  # `tablectl config check` makes them too
            raise ConfigError(settings.source, here)
        fresh = host.fresh_dirs(settings)
        prepare_state_dir(settings)
    except ConfigError as e:
        if logs.is_json():
            log.error("tabled refusing to start", config=e.path, problems=e.problems)
        else:
            print(f"tabled: refusing to start: {e}", file=sys.stderr)
        return 2
    rc = asyncio.run(_run(settings))
    if rc == 1 and fresh:  # a start that failed leaves no new state directory behind
        host.undo_failed_start(settings, fresh)
    return rc


async def _run(settings: Settings) -> int:
    daemon = Daemon(settings)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, daemon.stop)
    try:
        return await daemon.run()
    except (JournalError, OSError, zmq.ZMQError) as e:
        log.error("tabled cannot run", error=str(e))
        if not logs.is_json():
            print(f"tabled: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
