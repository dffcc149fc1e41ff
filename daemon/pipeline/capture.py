"""The capture format: device traffic and table inputs as readable text.

``docs/captures.md`` is the reference. In short::

    # key: value                         header lines (driver, game, options)
    <ISO-8601 time> rx <bytes>           what the device sent (C-style escapes)
    <ISO-8601 time> tx <bytes>           what the daemon sent
    <ISO-8601 time> rx@wheel <bytes>     the same, for a named device
    <ISO-8601 time> cmd <name> [k=v …]   an operator command (or a button press)
    <ISO-8601 time> link down|up [why]   the device's link went down or came back

The frame starts right after the single space that follows the direction
and may itself start with a space (a Cammegh bare number line ``" 7"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

_LINE = re.compile(r"^(\S+) (rx|tx|cmd|link)(?:@([A-Za-z0-9_.-]+))? ?(.*)$", re.S)
_ESC = re.compile(rb"\\(x[0-9a-fA-F]{2}|[rnt\\0])")
_SIMPLE = {b"r": b"\r", b"n": b"\n", b"t": b"\t", b"\\": b"\\", b"0": b"\0"}


class CaptureError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Line:
    lineno: int
    time: float  # epoch seconds (UTC)
    kind: str  # rx | tx | cmd | link
    device: str | None
    data: bytes  # rx/tx: the frame; cmd/link: the text after the kind
    text: str = ""


@dataclass(slots=True)
class Capture:
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    lines: list[Line] = field(default_factory=list)


def unescape(text: str) -> bytes:
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise CaptureError("a frame may hold only ASCII; write other bytes as \\xNN") from None

    def sub(m: re.Match[bytes]) -> bytes:
        g = m.group(1)
        return bytes([int(g[1:], 16)]) if g[:1] == b"x" else _SIMPLE[g]

    return _ESC.sub(sub, raw)


def escape(data: bytes) -> str:
    out = []
    for b in data:
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == "\r":
            out.append("\\r")
        elif c == "\n":
            out.append("\\n")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def parse_time(text: str) -> float:
    """ISO-8601; a time without a zone is taken as UTC (captures record the device's clock)."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CaptureError(f"not an ISO-8601 time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def format_time(epoch: float) -> str:
    dt = datetime.fromtimestamp(epoch, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def parse(text: str, path: str = "<capture>") -> Capture:
    cap = Capture(path)
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        if raw.startswith("#"):
            key, sep, value = raw[1:].partition(":")
            if sep and not cap.lines:
                cap.headers[key.strip()] = value.strip()
            continue
        m = _LINE.match(raw)
        if m is None:
            raise CaptureError(f"{path}:{n}: expected `<time> rx|tx|cmd|link …`, got {raw[:60]!r}")
        when, kind, dev, rest = m.groups()
        try:
            t = parse_time(when)
        except CaptureError as e:
            raise CaptureError(f"{path}:{n}: {e}") from None
        if kind in ("rx", "tx"):
            cap.lines.append(Line(n, t, kind, dev, unescape(rest)))
        else:
            cap.lines.append(Line(n, t, kind, dev, b"", rest.strip()))
    return cap


def load(path: str | Path) -> Capture:
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), str(p))


def command_args(text: str) -> tuple[str, dict[str, str]]:
    """``card.enter card=KD actor=pit1`` → ``("card.enter", {"card": "KD", "actor": "pit1"})``."""
    parts = text.split()
    if not parts:
        raise CaptureError("a cmd line needs a command name")
    args: dict[str, str] = {}
    for p in parts[1:]:
        k, sep, v = p.partition("=")
        if not sep:
            raise CaptureError(f"command argument {p!r} is not key=value")
        args[k] = v.replace("_", " ") if k == "reason" else v
    return parts[0], args


def iter_frames(cap: Capture) -> Iterator[Line]:
    yield from (ln for ln in cap.lines if ln.kind in ("rx", "tx"))
