"""structlog set-up: JSON lines for journald, readable lines on a terminal."""

from __future__ import annotations

import logging
import sys
from typing import Any

import msgspec
import structlog

_json = msgspec.json.Encoder(enc_hook=repr)


def _render_json(_: Any, __: str, event_dict: dict[str, Any]) -> bytes:
    # structlog's JSONRenderer passes ``default=``; msgspec takes enc_hook instead.
    return _json.encode(event_dict)


def setup(level: str = "info", fmt: str = "auto", **bind: Any) -> None:
    as_json = fmt == "json" or (fmt == "auto" and not sys.stdout.isatty())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if as_json:
        processors = [*shared, structlog.processors.dict_tracebacks, _render_json]
        factory: Any = structlog.BytesLoggerFactory(sys.stdout.buffer)
    else:
        processors = [*shared, structlog.dev.ConsoleRenderer(colors=sys.stdout.isatty())]
        factory = structlog.PrintLoggerFactory(sys.stdout)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(**bind)
