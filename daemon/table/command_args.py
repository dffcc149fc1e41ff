"""A command's arguments checked against its declared schema before any decide sees them.

Every source of commands (the control socket, a panel's buttons, the croupier, a
capture) reaches the table through :meth:`daemon.table.Table.decide`, which asks
:func:`problem` first: a game's decide then only ever sees the argument names its
command declares (``CommandSpec.args`` and ``more``), each a value of its declared kind.
A malformed command is refused with what is wrong, whoever sends it
(``docs/reliability.md``, A command that cannot be decided). Pure: no state, no clock.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon.table.command_spec import CommandSpec

#: a string argument's length at most (all of them together: 1,024 bytes of JSON, the table's)
MAX_TEXT = 1024
#: nesting at most inside one argument (a reconciliation's mismatch objects are 2 deep)
MAX_DEPTH = 3
_INT_RANGE = (-(2**63), 2**63)


def problem(name: str, spec: CommandSpec, args: Any) -> str | None:
    """What is wrong with ``args`` for command ``name``, or None when they fit its schema."""
    if not isinstance(args, dict):
        return f"{name}: its arguments must be an object, not {json_kind(args)}"
    declared = {a.name: a for a in (*spec.args, *spec.more)}
    unknown = sorted(str(k) for k in args if k not in declared)
    if unknown:
        takes = ", ".join(declared) or "no arguments"
        return f"{name}: unknown argument(s) {', '.join(unknown)} (it takes {takes})"
    for key, value in args.items():
        kind = declared[key].kind
        why = _value(value, kind)
        if why is not None:
            return f"{name}: {key} {why}"
    return None


def _value(v: Any, kind: str) -> str | None:
    if kind == "scalar":
        return _scalar(v)
    if kind == "list":
        if isinstance(v, list):
            for x in v:
                why = _scalar(x)
                if why is not None:
                    return f"lists an item that {why}"
            return None
        return _scalar(v)
    if kind == "objects":
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            return f"must be a list of objects, not {json_kind(v)}"
        return _json(v, 0)
    raise ValueError(f"unknown argument kind {kind!r}")  # a spec's mistake, found by tests


def _scalar(v: Any) -> str | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        return None if len(v) <= MAX_TEXT else f"is longer than {MAX_TEXT} characters"
    if isinstance(v, int):
        return None if _INT_RANGE[0] <= v < _INT_RANGE[1] else "is out of range (64 bits)"
    if isinstance(v, float):
        return None if math.isfinite(v) else "must be a finite number"
    return f"must be a string or a number, not {json_kind(v)}"


def _json(v: Any, depth: int) -> str | None:
    """Plain JSON, finite, not nested deeper than :data:`MAX_DEPTH`."""
    if isinstance(v, dict | list):
        if depth >= MAX_DEPTH:
            return f"is nested deeper than {MAX_DEPTH}"
        items = v.values() if isinstance(v, dict) else v
        for x in items:
            why = _json(x, depth + 1)
            if why is not None:
                return why
        return None
    return None if v is None else _scalar(v)


def json_kind(v: Any) -> str:
    """A JSON value's kind, as an error names it (the control socket's too)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__
