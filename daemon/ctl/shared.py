"""What ``tablectl`` and its tools share: the config to use, the daemon's control socket,
the bus with this user's keys, JSON output and the exit codes.

``daemon/ctl/cli.py`` (the commands) and ``daemon/tools/`` (monitor, trace, ports, doctor, gpio)
both import from here, so no tool imports the CLI and the CLI imports its tools one way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from daemon.runtime.config import ConfigError, Settings, load

EXIT_OK, EXIT_ATTENTION, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


class NoTableGiven(ConfigError):
    """No ``-t``, no ``--config``, no ``$TABLED_CONFIG`` and no single table on this PC: the
    message names no file, since the user named none (issue 15: not ``demo.toml: …``)."""

    def __str__(self) -> str:
        return "tablectl: " + "; ".join(self.problems)


def default_config() -> str:
    from daemon.ctl.tables import etc_root

    env = os.environ.get("TABLED_CONFIG")
    if env:
        return env
    etc = sorted(etc_root().glob("*.toml")) if etc_root().is_dir() else []
    if len(etc) == 1:
        return str(etc[0])
    return "config/demo.toml"


def settings(a: argparse.Namespace) -> Settings:
    from daemon.runtime import structlog_lean  # noqa: F401  the drivers it loads import structlog: see call

    if getattr(a, "table", None) and not a.config:
        # the config if readable, else the daemon's note in /run/tabled
        from daemon.ctl import tables

        return tables.settings_for(a.table)
    path = a.config or default_config()
    if path == "config/demo.toml" and not Path(path).exists():
        from daemon.ctl import tables

        running = [t["table"] for t in tables.tables() if t.get("running")]
        if len(running) == 1:
            return tables.settings_for(running[0])
        raise NoTableGiven(
            path,
            [
                "no table given: pass -t TABLE (`tablectl list` shows this PC's tables) "
                "or --config FILE"
            ],
        )
    return load(path)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def call(a: argparse.Namespace, cmd: str, **args: Any) -> tuple[int, Any]:
    # the client imports daemon.bus.control (ControlError), the config's drivers import structlog:
    # without rich, as the daemon does (~0.1 s of each command); tablectl logs nothing through
    # it (gpio test, which does, imports structlog with rich before it reads the config)
    from daemon.runtime import structlog_lean  # noqa: F401, I001  first: before daemon.bus's structlog

    from daemon.bus.control import ControlError
    from daemon.ctl.control_client import ControlClient, DaemonUnreachable
    from daemon.security import SecurityError, client_curve

    s = settings(a)
    try:  # CURVE keys when the control endpoint is tcp with [security]; else None
        curve = client_curve(s, getattr(a, "key", None))
    except SecurityError as e:
        print(f"tablectl: {e}", file=sys.stderr)
        return EXIT_USAGE, None
    role = a.role
    tech = s.role_endpoints.get("technician", "")
    if role is None and cmd == "device.command" and os.access(tech[6:], os.R_OK | os.W_OK):
        role = "technician"  # device commands are a technician's: that socket, if yours
    client = ControlClient(endpoint(s, role), timeout=a.timeout, actor=a.actor, curve=curve)
    try:
        return EXIT_OK, client.call(cmd, **args)
    except DaemonUnreachable as e:
        print(str(e), file=sys.stderr)
        return EXIT_UNREACHABLE, None
    except ControlError as e:
        print(f"refused: {e}", file=sys.stderr)
        return EXIT_ATTENTION, None
    finally:
        client.close()


ROLE_ORDER = ("supervisor", "technician", "dealer", "viewer")


def endpoint(s: Settings, role: str | None) -> str:
    """The control socket to use: the asked role's, else the first role socket this user may open."""
    if role is not None:
        if role not in s.role_endpoints:
            have = ", ".join(s.role_endpoints) or "none (one socket for all)"
            raise ConfigError(
                s.source, [f"--role {role}: this table has no {role} socket (roles: {have})"]
            )
        return openable(s, s.role_endpoints[role])
    for r in ROLE_ORDER:
        ep = s.role_endpoints.get(r)
        if ep is not None and os.access(ep[6:], os.R_OK | os.W_OK):
            return ep
    return openable(s, s.control_endpoint)


def unreachable(source: str, problems: list[str]) -> ConfigError:
    e = ConfigError(source, problems)
    e.unreachable = True  # type: ignore[attr-defined]  # exit 3, as for a daemon not running
    return e


def openable(s: Settings, endpoint: str) -> str:
    """An ipc socket this user may not open is refused here, saying why (not a time-out)."""
    if not endpoint.startswith("ipc://"):
        return endpoint
    path = endpoint[6:]
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        import grp

        try:
            group = grp.getgrgid(os.stat(path).st_gid).gr_name
        except (KeyError, OSError):
            group = "its group"
        mine = [r for r, ep in s.role_endpoints.items() if os.access(ep[6:], os.R_OK | os.W_OK)]
        raise unreachable(
            s.source,
            [
                f"you may not open {path} (group {group} only)"
                + (f"; yours: --role {' or '.join(mine)}" if mine else "")
                + f": to reach it, a member of group {group} (usermod -aG {group} USER)"
            ],
        )
    return endpoint


def bus_curve(a: argparse.Namespace, s: Settings) -> Any:
    """This user's CURVE keys for the table's bus when the bus is CURVE-protected, else None."""
    from daemon.security import follower_curve, resolve

    sec = s.config.security
    if sec.server_key is None:
        return None
    given = getattr(a, "key", None) or os.environ.get("TABLECTL_KEY")
    if given:
        return follower_curve(s, Path(given).expanduser())
    if sec.client_key:
        return follower_curve(s, resolve(Path(s.source).resolve().parent, sec.client_key))
    raise ConfigError(
        s.source,
        ["the bus is CURVE-protected: pass --key PATH.key_secret (or security.client_key)"],
    )


def follower(a: argparse.Namespace, s: Settings) -> Any:
    from daemon.runtime import structlog_lean  # noqa: F401, I001  as in call: first

    from daemon.bus.subscriber import Follower

    return Follower(s.config.bus.publish, s.config.bus.replay, table=s.table, curve=bus_curve(a, s))
