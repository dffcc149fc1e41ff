"""tabled with one change applied at start-up, to measure a proposed fix before it is made.

    python -m bench.variant NAME --config table.toml

Used only by :mod:`bench.experiments`, never by ``make bench``. Each variant
patches the running daemon's code from outside (the daemon's files are not
touched) the way the proposed change would behave:

* ``inline-commit``: the journal's ``append`` runs in the event loop's own
  thread instead of the journal thread (no hand-off and no wake-up of the
  loop by the writer thread); the loop is blocked during the fsync;
* ``none``: no change (the same launcher, as a control).
"""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from typing import Any


class InlineExecutor(concurrent.futures.Executor):
    """``submit`` runs the call at once in the caller's thread."""

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        f: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:
            f.set_exception(e)
        return f

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def _inline_commit() -> None:
    from daemon import pipeline

    init = pipeline.Pipeline.__init__

    def patched(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        self._writer.shutdown(wait=False)
        self._writer = InlineExecutor()

    pipeline.Pipeline.__init__ = patched  # type: ignore[method-assign]


VARIANTS: dict[str, Callable[[], None]] = {"inline-commit": _inline_commit, "none": lambda: None}


def main() -> int:
    name, *rest = sys.argv[1:]
    VARIANTS[name]()
    from daemon.app import main as tabled

    return tabled(rest)


if __name__ == "__main__":
    sys.exit(main())
