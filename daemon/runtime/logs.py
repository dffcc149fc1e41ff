"""structlog set-up: JSON lines for journald and pipes, readable lines on a terminal.

Under systemd every line must reach journald at its own priority, or ``journalctl -p
warning`` finds nothing. journald reads a ``<N>`` prefix (sd-daemon(3)) on each line of
a stream it owns and strips it; systemd says which stream it owns in ``JOURNAL_STREAM``
(``device:inode``, systemd.exec(5)). So the prefix is written only when stdout *is* that
stream: a pipe into ``jq`` gets plain JSON. Either way each JSON object carries its
syslog ``priority`` (0–7) as a field, so a reader of the pipe needs no prefix.

The standard library's ``logging`` (asyncio's "Task exception was never retrieved",
libraries) and uncaught exceptions go through the same renderer: nothing on stdout or
stderr is a plain line when stdout is not a terminal.

Every committed event gets an info line (``daemon/runtime/event_log.py``), so a line's cost is
paid per event (``docs/performance-history.md``): the context bound at set-up is added by a
plain processor instead of a walk of every context variable, the time stamp formats
the date and time once a second, tracebacks are looked for only on a line that has
one, and :func:`lines` renders a commit's event lines itself and writes them at once.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

import msgspec
import structlog

from daemon.runtime import structlog_lean

_json = msgspec.json.Encoder(enc_hook=repr)

#: syslog priorities (sd-daemon(3), syslog(3)) of structlog's level names
PRIORITY = {
    "critical": 2,
    "exception": 3,
    "error": 3,
    "warning": 4,
    "warn": 4,
    "info": 6,
    "debug": 7,
    "notset": 7,
}

_state = {"json": False}


def is_json() -> bool:
    """True when log lines are JSON (stdout not a terminal, or ``format = "json"``)."""
    return _state["json"]


def journal_stream(stream: TextIO) -> bool:
    """True when ``stream`` is the journald stream systemd named in ``$JOURNAL_STREAM``."""
    want = os.environ.get("JOURNAL_STREAM", "")
    dev, _, ino = want.partition(":")
    if not (dev.isdigit() and ino.isdigit()):
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    return st.st_dev == int(dev) and st.st_ino == int(ino)


def _add_priority(_: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    level = str(event_dict.get("level", method)).lower()
    event_dict["priority"] = PRIORITY.get(level, 6)
    return event_dict


def _bound(fields: dict[str, Any]) -> Any:
    """The context bound at set-up (the table), added to every line after its own fields,
    as ``merge_contextvars`` would add it (the daemon binds nothing later)."""
    items = tuple(fields.items())

    def bound(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        for k, v in items:
            event_dict.setdefault(k, v)
        return event_dict

    return bound


_second: list[Any] = [None, ""]


def _now_text() -> str:
    """``TimeStamper(fmt="iso", utc=True)``'s text (``2026-12-01T23:40:00.123456Z``), with
    the date and time formatted once a second."""
    t = time.time()
    sec = int(t)
    if sec != _second[0]:
        _second[0], _second[1] = sec, datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    us = int((t - sec) * 1e6)
    return f"{_second[1]}.{us:06d}Z" if us else f"{_second[1]}Z"


def _stamper() -> Any:
    def stamp(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        event_dict["timestamp"] = _now_text()
        return event_dict

    return stamp


#: levels as the filtering logger numbers them
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
#: set by :func:`setup` for JSON lines: (processors, threshold, bound fields, prefix, stream)
_fast: list[Any] = [None]


def lines(rows: list[tuple[str, str, dict[str, Any]]], logger: Any) -> None:
    """Log ``(level, message, fields)`` rows, a commit's event lines, in one write.

    For JSON lines the line is rendered here, field for field what the processors above
    would make of ``logger.<level>(message, **fields)`` (``tests/test_event_log.py`` holds
    it to that), without a trip through structlog per line: every committed event has a
    line, so this is paid per event. On a terminal, or while a test has replaced the
    configuration (``structlog.testing.capture_logs``), each row goes through ``logger``.
    """
    fast = _fast[0]
    if fast is None or structlog.get_config()["processors"] is not fast[0]:
        for level, message, fields in rows:
            getattr(logger, level)(message, **fields)
        return
    _, threshold, bound, prefix, out = fast
    ts = _now_text()
    parts = []
    for level, message, fields in rows:
        if _LEVELS[level] < threshold:
            continue
        d = {**fields, "event": message}
        for k, v in bound:
            d.setdefault(k, v)
        d["level"] = level
        d["timestamp"] = ts
        d["priority"] = p = PRIORITY[level]
        parts.append(b"<%d>" % p + _json.encode(d) if prefix else _json.encode(d))
    if parts:
        parts.append(b"")
        out.write(b"\n".join(parts))
        out.flush()


def _tracebacks() -> Any:
    """A traceback as a field, only for a line that carries an exception, **without the
    frames' locals**.

    structlog's ``dict_tracebacks`` renders every frame's locals; in a table's journald
    they would be readable by whoever reads the logs, and a frame's locals can hold what
    nobody may read there: Blackjack's hole card before it is turned (journaled as a
    secret row, published only as a commitment), a secret key file's contents, a
    client's key. The file, line and function of each frame stay. (Without locals rich
    is not needed either: ``daemon/runtime/structlog_lean.py``.)
    """
    render = structlog.processors.ExceptionRenderer(
        structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    )

    def tracebacks(logger: Any, method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        if "exc_info" in event_dict:
            return render(logger, method, event_dict)
        return event_dict

    return tracebacks


def _renderer(prefix: bool) -> Any:
    def render(_: Any, __: str, event_dict: dict[str, Any]) -> bytes:
        # structlog's JSONRenderer passes ``default=``; msgspec takes enc_hook instead.
        line = _json.encode(event_dict)
        if prefix:
            return b"<%d>" % event_dict.get("priority", 6) + line
        return line

    return render


def setup(level: str = "info", fmt: str = "auto", **bind: Any) -> None:
    as_json = fmt == "json" or (fmt == "auto" and not sys.stdout.isatty())
    _state["json"] = as_json
    shared: list[Any] = [_bound(bind), structlog.processors.add_log_level, _stamper()]
    if as_json:
        prefix = journal_stream(sys.stdout)
        render = _renderer(prefix)
        processors = [*shared, _add_priority, _tracebacks(), render]
        factory: Any = structlog.BytesLoggerFactory(sys.stdout.buffer)
        threshold = getattr(logging, level.upper())
        _fast[0] = (processors, threshold, tuple(bind.items()), prefix, sys.stdout.buffer)
        _route_stdlib(render, level)
        logging.captureWarnings(True)
        sys.excepthook = _log_uncaught
    else:
        structlog_lean.with_rich()  # a terminal: rich's tracebacks, as structlog draws them
        processors = [*shared, structlog.dev.ConsoleRenderer(colors=sys.stdout.isatty())]
        factory = structlog.PrintLoggerFactory(sys.stdout)
        _fast[0] = None
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(**bind)


class _BytesHandler(logging.Handler):
    """Writes the renderer's bytes (one line each) to stdout, like the structlog logger."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            sys.stdout.buffer.write(line.encode() + b"\n")
            sys.stdout.buffer.flush()
        except Exception:
            self.handleError(record)


def _route_stdlib(render: Any, level: str) -> None:
    def as_text(logger: Any, name: str, event_dict: dict[str, Any]) -> str:
        return render(logger, name, event_dict).decode()

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _add_priority,
            _tracebacks(),
            as_text,
        ],
    )
    handler = _BytesHandler()
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(getattr(logging, level.upper()), logging.INFO))


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)
        return
    structlog.get_logger("tabled").critical(
        "tabled crashed", exc_info=(kind, value, tb), error=f"{kind.__name__}: {value}"
    )
