"""``tablectl get [KEY]``: one value of the running table for a script, as ``upsc ups var``.

The keys are the daemon's ``status`` answer, flattened and named for people: ``journal.seq``,
``device.shoe.health``, ``game.hand``, ``alarms.count``. Without a key every key is
listed with its value (``upsc ups``), one ``key: value`` a line. A key that does not exist
is exit 2 naming the keys that start like it, so a typo in a script fails loudly.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from daemon.ctl.shared import EXIT_OK, EXIT_USAGE, call, print_json


def flatten(st: dict[str, Any]) -> dict[str, Any]:
    """Every scalar of a ``status`` answer under its key (``device.shoe.frames``)."""
    out: dict[str, Any] = {
        "table": st["table"],
        "game": st["game"],
        "version": st["version"],
        "uptime": st["uptime"],
        "journal.seq": st["last_seq"],
        "journal.hash": st["last_hash"],
        "journal.id": st["journal_id"],
        "journal.ok": st["journal_ok"],
        "journal.error": st["journal_error"],
        "journal.path": st["journal"],
        "bus.publish": st["publish"],
        "bus.replay": st["replay"],
        "alarms.count": len(st["alarms"]),
        "alarms.ids": ",".join(a["id"] for a in st["alarms"]),
    }
    for k, v in (st.get("state") or {}).items():
        if _scalar(v):
            out[f"game.{k}"] = v
    for k, v in (st.get("pipeline") or {}).items():
        out[f"pipeline.{k}"] = v
    for k, v in (st.get("bus") or {}).items():
        if _scalar(v):
            out[f"bus.{k}"] = v
    for d in st["devices"]:
        for k, v in d.items():
            if k != "name" and _scalar(v):
                out[f"device.{d['name']}.{k}"] = v
        for k, v in (d.get("protocol") or {}).items():
            if _scalar(v):
                out[f"device.{d['name']}.protocol.{k}"] = v
    for a in st["alarms"]:
        for k in ("kind", "severity", "message", "device", "count"):
            out[f"alarm.{a['id']}.{k}"] = a.get(k)
    return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def text(v: Any) -> str:
    """A value as a shell reads it: ``true``/``false``, empty for none, numbers as written."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v if isinstance(v, str) else json.dumps(v)


def cmd_get(a: argparse.Namespace) -> int:
    rc, st = call(a, "status")
    if rc:
        return rc
    values = flatten(st)
    if a.key is None:
        if a.json:
            print_json(values)
        else:
            for k, v in values.items():
                print(f"{k}: {text(v)}")
        return EXIT_OK
    if a.key not in values:
        from difflib import get_close_matches

        near = get_close_matches(a.key, values, n=6, cutoff=0.6) or [
            k for k in values if k.startswith(a.key.split(".", 1)[0])
        ]
        print(
            f"tablectl get: no key {a.key!r}"
            + (f"; keys like it: {', '.join(near[:12])}" if near else "")
            + " "
            "(`tablectl get` lists them all)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if a.json:
        print_json({a.key: values[a.key]})
    else:
        print(text(values[a.key]))
    return EXIT_OK
