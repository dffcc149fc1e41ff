"""The journal's commit, on the event loop's own thread, and the thread that sees it stuck.

The commit runs where the inputs were decided: no hand-off to another thread and no
wake back (``docs/decisions.md``, Where the commit runs). Measured on this project's
two-vCPU VM, the two hand-offs were the largest cost of an event above the durable
relay floor (``docs/performance.md``, Round 4). The price is that a slow or stopped disk
blocks the loop; :class:`Sentinel` is what still speaks then: a thread that wakes once a
heartbeat interval and, while a commit is in flight, does what the loop would (the
heartbeat, the watchdog's ping while the commit is younger than a ping interval), then
says the journal is stuck (``daemon/runtime/liveness.py``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence

import structlog

from daemon.journal import Batch, Journal, JournalError
from daemon.journal.events import Event
from daemon.runtime import faults

log = structlog.get_logger("pipeline")

#: told each commit's events and their stored bytes, right after the commit (never blocking:
#: the bus's PUB send)
Publisher = Callable[[Sequence[Event], Sequence[bytes]], None]


class PipelineFailed(JournalError):
    """The writer cannot go on; the daemon must stop (``docs/reliability.md``)."""


def retryable(e: BaseException) -> bool:
    """A disk that refuses a write now may take it later; nothing else gets better by retrying."""
    if isinstance(e, sqlite3.IntegrityError):
        return False
    return isinstance(e, OSError | sqlite3.OperationalError)


class Writer:
    """One transaction at a time, then its publish: the very bytes stored.

    Called by the pipeline only, from the loop, so commits are in order, seqs gapless
    and the chain unbroken; nothing is published before its commit returned, and a
    failed commit publishes nothing (its error goes to the caller, which retries or
    stops the daemon).
    """

    def __init__(
        self,
        journal: Journal,
        publishers: list[Publisher],
        mono: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal
        self.publishers = publishers
        self.mono = mono
        #: monotonic time the commit in flight began (one store; read by the sentinel)
        self.since: float | None = None

    def commit(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None, *, publish: bool
    ) -> list[Event]:
        """Commit one transaction, then publish it; its events."""
        self.since = self.mono()
        try:
            events, raws = self.journal.commit(batches, snapshot)
        finally:
            self.since = None
        if publish:
            faults.after_commit()
            for fn in self.publishers:
                try:
                    fn(events, raws)
                except Exception:
                    log.exception("publishing committed events failed")
        return events


class Sentinel:
    """A thread that wakes every ``interval`` and tells when a commit is slow to return.

    ``slow(seconds)`` is called from this thread at each wake while a commit has been in
    flight for at least ``interval`` (the loop, blocked in it, sends no heartbeat and no
    watchdog ping meanwhile); ``returned(seconds)`` once, also from this thread, at the
    first wake after it returned. What they call must be safe beside the blocked loop:
    read, log, send (the bus's sends hold its lock), or hand over to the loop.
    """

    def __init__(
        self,
        writer: Writer,
        *,
        interval: float,
        slow: Callable[[float], None],
        returned: Callable[[float], None],
    ) -> None:
        self.writer = writer
        self.interval = interval
        self._slow, self._returned = slow, returned
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: the start of the commit last told slow, until it is seen returned
        self.slow_since: float | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="journal-sentinel", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def check(self) -> None:
        """One look (the thread's, each interval; a test's, directly)."""
        since, now = self.writer.since, self.writer.mono()
        try:
            if self.slow_since is not None and since != self.slow_since:
                was, self.slow_since = self.slow_since, None
                self._returned(now - was)
            if since is not None and now - since >= self.interval:
                self.slow_since = since
                self._slow(now - since)
        except Exception:  # this thread must outlive any one report
            log.exception("the journal sentinel's report failed")

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
