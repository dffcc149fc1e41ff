"""A TOML table checked against a typed struct, every problem at once, each in words.

The table's config (``daemon/runtime/config.py``), the bridge's (``bridge/config.py``) and a
replay's options share it: msgspec stops at the first problem and says it in its own
terms (``Expected `int`, got `str` - at `$.devices[0].baudrate```); a technician
fixing a config should see every wrong key in one run, named by its path, in words
(``devices[0].baudrate: expected an integer, got "fast"``).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Union, get_args, get_origin

import msgspec

_HUMAN = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "object": "a table",
    "array": "an array",
    "null": "nothing",
}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def _humanise(msg: str, value: Any) -> str:
    m = re.match(r"Expected `(.+?)`(?:, got `(\w+)`)?", msg)
    if m:
        # TOML has no null: an optional key is simply left out, so "or nothing" is noise.
        kinds = [t.strip() for t in m.group(1).split("|") if t.strip() != "null"]
        wanted = " or ".join(_HUMAN.get(t, t) for t in kinds)
        rest = msg[m.end() :].split(" - at ")[0]
        return f"expected {wanted}{rest}, got {_show(value)}"
    m = re.match(r"Invalid enum value (.+)", msg)
    if m:
        return f"{_show(value)} is not one of the allowed values"
    return msg.split(" - at ")[0]


def _literal_choices(tp: Any) -> list[Any] | None:
    if get_origin(tp) is Literal:
        return list(get_args(tp))
    if get_origin(tp) in (Union, type(int | None)):
        out: list[Any] = []
        for a in get_args(tp):
            if a is type(None):
                continue
            c = _literal_choices(a)
            if c is None:
                return None
            out += c
        return out or None
    return None


def endpoint_problem(endpoint: str) -> str | None:
    """What is wrong with a ZeroMQ endpoint the daemon binds, or None.

    Caught here rather than at bind time so that ``tablectl config check`` says it,
    with the key, before a table PC is rolled out.
    """
    scheme, sep, rest = endpoint.partition("://")
    if not sep or scheme not in ("tcp", "ipc", "inproc"):
        return f'"{endpoint}" is not an endpoint: use tcp://HOST:PORT or ipc://PATH'
    if scheme != "tcp":
        return None if rest else f'"{endpoint}" has no path'
    host, colon, port = rest.rpartition(":")
    if not colon or not host:
        return f'"{endpoint}" needs a host and a port: tcp://HOST:PORT'
    if port == "*":
        return None  # any free port, chosen at bind
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f'port {port} in "{endpoint}" is not a TCP port (1–65535)'
    return None


def check(value: Any, tp: Any, path: str, errors: list[str]) -> None:
    """Collect every problem of ``value`` against ``tp`` (a Struct, list, or plain type)."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a table, got {_show(value)}")
            return
        fields = {f.encode_name: f for f in msgspec.structs.fields(tp)}
        before = len(errors)
        for key in value:
            if key not in fields:
                known = ", ".join(fields)
                errors.append(f"{_join(path, key)}: unknown key (known keys: {known})")
        for name, f in fields.items():
            if name in value:
                check(value[name], f.type, _join(path, name), errors)
            elif f.required:
                errors.append(f"{_join(path, name)}: missing required key")
        if len(errors) == before:
            try:
                msgspec.convert(value, tp)
            except msgspec.ValidationError as e:
                errors.append(f"{path or '(top level)'}: {e}")
        return
    table = _table_of(tp)
    if table is not None and isinstance(value, dict):
        # a table of values (tile → copies): each value checked, named by its key
        for k, v in value.items():
            check(v, table, _join(path, str(k)), errors)
        return
    if get_origin(tp) is list:
        (item,) = get_args(tp)
        if not isinstance(value, list):
            errors.append(f"{path}: expected an array, got {_show(value)}")
            return
        for i, v in enumerate(value):
            check(v, item, f"{path}[{i}]", errors)
        return
    try:
        msgspec.convert(value, tp)
    except msgspec.ValidationError as e:
        choices = _literal_choices(tp)
        if choices is not None:
            shown = ", ".join(_show(c) for c in choices)
            errors.append(f"{path}: {_show(value)} is not one of {shown}")
        else:
            errors.append(f"{path}: {_humanise(str(e), value)}")


def _table_of(tp: Any) -> Any:
    """The value type of ``dict[str, X]`` (or ``dict[str, X] | None``), else None."""
    args = (
        [a for a in get_args(tp) if a is not type(None)]
        if get_origin(tp) in (Union, type(int | None))
        else [tp]
    )
    if len(args) == 1 and get_origin(args[0]) is dict:
        key, value = get_args(args[0])
        if key is str and value is not Any:
            return value
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
