"""structlog without rich: imported first by ``daemon/runtime/app.py``, before anything imports structlog.

structlog's package imports ``structlog.dev`` and ``structlog.tracebacks``, and they import
rich whenever it is installed — and it is on every table PC, for ``tablectl monitor``.
rich brings pygments and attrs with it: 4.3 MiB resident and ~0.19 s of every start
(``docs/performance-history.md``, memory and start-up), for a daemon that under systemd writes
JSON lines and never draws a rich console.

So structlog is imported here with rich hidden (``sys.modules["rich"] = None`` makes
``import rich`` raise ImportError, which structlog catches as "not installed"), and rich
is importable again right after. rich is put back where structlog would use it:
:func:`with_rich` re-runs those two modules with rich importable, and ``daemon/runtime/logs.py``
calls it once, while it sets up the console renderer (a terminal), before any line is
logged. The JSON lines never need it: their tracebacks carry no locals, the only thing
structlog renders with rich (``daemon/runtime/logs.py`` says why). Every line renders as
structlog renders it with rich installed (``tests/test_lean_start.py`` holds it to that).
Where structlog or rich was imported before this (a test, a tool), this changes nothing.
"""

from __future__ import annotations

import importlib
import sys
import threading

if "structlog" not in sys.modules and "rich" not in sys.modules:
    sys.modules["rich"] = None  # type: ignore[assignment]
    try:
        import structlog.dev
        import structlog.tracebacks
    finally:
        del sys.modules["rich"]

import structlog.dev
import structlog.tracebacks

_lock = threading.Lock()
_done = [False]


def with_rich() -> None:
    """structlog's console renderer and traceback rendering as they are with rich installed.

    Once: reloading re-runs each module in its own namespace, so what was made from it
    before (``structlog.processors.dict_tracebacks``) sees rich too. Without rich
    installed, structlog's own fallbacks stay, as they would anyway.
    """
    with _lock:  # a traceback can be logged from any thread
        if _done[0]:
            return
        _done[0] = True
        if structlog.tracebacks.rich is not None:
            return
        try:
            import rich.pretty  # noqa: F401  (what structlog.tracebacks uses)
        except ImportError:
            return
        importlib.reload(structlog.tracebacks)
        importlib.reload(structlog.dev)
