"""What of the config an auditor follows, and what changed since the journal last saw it.

Ontario's AGCO standard 4.02(8) asks that every configuration change be tracked: each
start compares the audited part of the config (the house rules, with their defaults
filled in, so a new default is a change too; the table's limits and any section of the
house's added later, such as a paytable's; each device's driver and options; the roles) with the one last journaled, and journals the difference as
``config.changed`` — old and new value per key, and the SHA-256 of the whole — right
after ``daemon.started``. An unchanged start journals nothing. The first start of a
journal (or the first since this audit existed) journals every key as new (``first``).

Not audited: where things are (paths, ports, endpoints, a device's serial port and
line settings), logging, metrics and hooks — the plumbing, not what a player meets.
Pure but for :func:`audited`, which reads a loaded ``Settings``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from daemon.runtime.config import Settings

_enc = msgspec.json.Encoder(order="sorted")


#: sections that are where things are and how they are watched, not what a player meets
PLUMBING = frozenset({"journal", "bus", "log", "metrics", "hooks"})
#: sections read key by key below (only their audited keys)
_SPECIAL = frozenset({"table", "devices", "game", "control", "security"})


def audited(settings: Settings) -> dict[str, Any]:
    """The audited config as flat ``key → value`` (``game.commission``, ``devices.shoe.driver``)."""
    cfg = settings.config
    out: dict[str, Any] = {"table.game": cfg.table.game}
    _flat("game", msgspec.to_builtins(settings.game), out)
    raw = msgspec.to_builtins(cfg)
    for section in sorted(raw):  # [limits], and any section of the house's added later
        if section not in _SPECIAL and section not in PLUMBING:
            _flat(section, raw[section], out)
    for dev in cfg.devices:
        out[f"devices.{dev.name}.driver"] = dev.driver
        _flat(
            f"devices.{dev.name}.options",
            msgspec.to_builtins(settings.device_options[dev.name]),
            out,
        )
    out["control.role"] = cfg.control.role
    _flat("control.roles", dict(cfg.control.roles), out)
    _flat("security.roles", dict(cfg.security.roles), out)
    return out


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Tables become dotted keys; a list or a scalar is one value."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}", v, out)
    elif value is not None:
        out[prefix] = value


def digest(config: dict[str, Any]) -> str:
    """SHA-256 of the audited config's canonical JSON (sorted keys)."""
    return hashlib.sha256(_enc.encode(config)).hexdigest()


def changed(
    before: dict[str, Any] | None, before_hash: str | None, now: dict[str, Any]
) -> dict[str, Any] | None:
    """``config.changed``'s data, or None when nothing changed."""
    h = digest(now)
    if before is not None and h == before_hash:
        return None
    old = before or {}
    changes = [
        {"key": k, "old": old.get(k), "new": now.get(k)}
        for k in sorted({*old, *now})
        if old.get(k) != now.get(k)
    ]
    if before is not None and not changes:
        return None
    return {"hash": h, "previous_hash": before_hash, "first": before is None, "changes": changes}


def limits(changed: dict[str, Any], now: dict[str, Any]) -> dict[str, Any] | None:
    """``table.limits``' data when a ``[limits]`` key changed: the config's limits now."""
    if not any(c["key"].startswith("limits.") for c in changed["changes"]):
        return None
    out: dict[str, Any] = {k: now[f"limits.{k}"] for k in ("min", "max") if f"limits.{k}" in now}
    spots = {k[len("limits.spots.") :]: v for k, v in now.items() if k.startswith("limits.spots.")}
    return {**out, "spots": spots}


def fold(before: dict[str, Any] | None, data: dict[str, Any]) -> dict[str, Any]:
    """The audited config after one ``config.changed`` (a key whose new value is null is gone)."""
    out = dict(before or {})
    for c in data["changes"]:
        if c["new"] is None:
            out.pop(c["key"], None)
        else:
            out[c["key"]] = c["new"]
    return out
