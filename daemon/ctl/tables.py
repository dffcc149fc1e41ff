"""The tables on this PC, found without reading their configs.

A table's config (``/etc/tabled/<table>.toml``) is ``0640 root:tabled``: a dealer
cannot read it, yet ``tablectl -t bac-07 betting close`` must find the table's
sockets. So the daemon leaves a public note beside its sockets,
``<runtime_dir>/table.json`` (mode 0644): the table id, game, bus and control
endpoints — addresses only, nothing secret. ``tablectl`` reads the config when
it may, else the note. ``tablectl list`` lists the notes and configs it sees.

``$TABLED_RUN_ROOT`` (default ``/run/tabled``) and ``$TABLED_ETC`` (default
``/etc/tabled``) move both places, for tests and unusual installs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec

from daemon.runtime.config import Config, ConfigError, Settings, load

NOTE = "table.json"


def run_root() -> Path:
    return Path(os.environ.get("TABLED_RUN_ROOT") or "/run/tabled")


def etc_root() -> Path:
    return Path(os.environ.get("TABLED_ETC") or "/etc/tabled")


def note(settings: Settings, version: str, pid: int) -> dict[str, Any]:
    c = settings.config
    return {
        "table": settings.table,
        "game": c.table.game,
        "version": version,
        "pid": pid,
        "publish": c.bus.publish,
        "replay": c.bus.replay,
        "heartbeat_interval": c.bus.heartbeat_interval,
        "control": settings.control_endpoint,
        "roles": dict(settings.role_endpoints),
        "curve": c.security.server_key is not None,
    }


def write_note(settings: Settings, version: str, pid: int) -> Path:
    """Write the note atomically, world-readable (the directory's mode decides who gets in)."""
    path = settings.runtime_dir / NOTE
    tmp = path.with_name(f".{NOTE}.{pid}")
    tmp.write_text(json.dumps(note(settings, version, pid), indent=2) + "\n", encoding="utf-8")
    tmp.chmod(0o644)
    tmp.replace(path)
    return path


def remove_note(settings: Settings) -> None:
    (settings.runtime_dir / NOTE).unlink(missing_ok=True)


def from_note(path: Path) -> Settings:
    """Settings enough to reach a running table: its endpoints, from the daemon's note."""
    from daemon import games

    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(path, ["not running: no note from the daemon here"]) from None
    except (OSError, ValueError) as e:
        raise ConfigError(path, [f"cannot read the daemon's note: {e}"]) from None
    if info.get("curve"):
        raise ConfigError(
            path,
            ["the bus is CURVE-protected: tablectl needs the table's config (--config) and a key"],
        )
    raw = {
        "table": {"id": info["table"], "game": info["game"], "runtime_dir": str(path.parent)},
        "bus": {
            "publish": info["publish"],
            "replay": info["replay"],
            "heartbeat_interval": info.get("heartbeat_interval", 1.0),
        },
        "control": {"endpoint": info["control"]},
    }
    cfg = msgspec.convert(raw, Config)
    game_cls = games.find(cfg.table.game)
    rules = None if game_cls is None else game_cls.Rules
    return Settings(
        source=str(path),
        config=cfg,
        game=msgspec.convert({}, rules) if rules is not None else None,
        device_options={},
        state_dir=path.parent,
        runtime_dir=path.parent,
        journal_path=path.parent / "journal-not-readable-here",
        control_endpoint=info["control"],
        role_endpoints=dict(info.get("roles", {})),
    )


def settings_for(table: str) -> Settings:
    """The table's config when this user may read it, else the running daemon's note."""
    conf = etc_root() / f"{table}.toml"
    if os.access(conf, os.R_OK):
        return load(conf)
    run = run_root() / table
    if (run / NOTE).exists():
        return from_note(run / NOTE)
    if conf.exists():
        raise ConfigError(
            conf,
            [
                f"not readable by you, and table {table} is not running "
                f"(no {run / NOTE}): start it, or run tablectl as root"
            ],
        )
    known = ", ".join(sorted(t["table"] for t in tables())) or "none"
    raise ConfigError(conf, [f"no table {table!r} on this PC (tables: {known})"])


def tables() -> list[dict[str, Any]]:
    """Every table this PC knows of: configs in /etc/tabled and notes in /run/tabled."""
    found: dict[str, dict[str, Any]] = {}
    etc = etc_root()
    if etc.is_dir() and os.access(etc, os.R_OK | os.X_OK):
        for conf in sorted(etc.glob("*.toml")):
            found[conf.stem] = {"table": conf.stem, "config": str(conf), "running": False}
    run = run_root()
    if run.is_dir():
        for d in sorted(p for p in run.iterdir() if p.is_dir()):
            row = found.setdefault(d.name, {"table": d.name, "config": None, "running": False})
            try:
                info = json.loads((d / NOTE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            sockets = {"main": info.get("control", ""), **info.get("roles", {})}
            row.update(
                running=_alive(info.get("pid")),
                game=info.get("game"),
                version=info.get("version"),
                publish=info.get("publish"),
                sockets={
                    name: ep
                    for name, ep in sockets.items()
                    if ep.startswith("ipc://") and os.access(ep[6:], os.R_OK | os.W_OK)
                },
            )
    return sorted(found.values(), key=lambda r: r["table"])


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True
