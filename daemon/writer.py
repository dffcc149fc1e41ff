"""The journal's one writing thread: commit, publish what was committed, tell the loop.

Split from ``daemon/pipeline.py``, which decides and owns every failure rule; this is
only the hand-off: one queue in, and per commit one publish (the very bytes stored)
and one ``call_soon_threadsafe`` back to the loop. No executor future per commit.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence

import structlog

from daemon import faults
from daemon.events import Event
from daemon.journal import Batch, Journal

log = structlog.get_logger("pipeline")

#: told each commit's events and their stored bytes, in the writer thread (thread-safe, never
#: blocking: the bus's PUB send)
Publisher = Callable[[Sequence[Event], Sequence[bytes]], None]

Job = tuple[
    Sequence[Batch],
    "tuple[str, bytes] | None",
    bool,
    asyncio.AbstractEventLoop,
    "asyncio.Future[list[Event]]",
]


class Writer:
    """The journal's one writing thread: commit, publish what was committed, tell the loop.

    Started with the first commit. Commits run one at a time in queue order, so seqs
    stay gapless and the chain unbroken; nothing is published before its commit
    returned, and a failed commit publishes nothing (its error goes to the awaiting
    task, which retries or stops the daemon).
    """

    def __init__(self, journal: Journal, publishers: list[Publisher]) -> None:
        self.journal = journal
        self.publishers = publishers
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def commit(
        self, batches: Sequence[Batch], snapshot: tuple[str, bytes] | None, *, publish: bool
    ) -> asyncio.Future[list[Event]]:
        """Queue one transaction; the future has its events once committed (and published)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[list[Event]] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="journal", daemon=True)
            self._thread.start()
        self.submit((batches, snapshot, publish, loop, fut))
        return fut

    def submit(self, job: Job) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            self.run_job(job)

    def run_job(self, job: Job) -> None:
        batches, snapshot, publish, loop, fut = job
        try:
            events, raws = self.journal.commit(batches, snapshot)
        except BaseException as e:
            _tell(loop, fut, None, e)
            return
        if publish:
            faults.after_commit()
            for fn in self.publishers:
                try:
                    fn(events, raws)
                except Exception:
                    log.exception("publishing committed events failed")
        _tell(loop, fut, events, None)

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None


def _tell(
    loop: asyncio.AbstractEventLoop,
    fut: asyncio.Future[list[Event]],
    events: list[Event] | None,
    error: BaseException | None,
) -> None:
    try:
        loop.call_soon_threadsafe(_settle, fut, events, error)
    except RuntimeError:  # the loop is closed: nobody waits any more
        pass


def _settle(
    fut: asyncio.Future[list[Event]], events: list[Event] | None, error: BaseException | None
) -> None:
    if fut.done():  # the awaiting task was cancelled
        return
    if error is not None:
        fut.set_exception(error)
    else:
        assert events is not None
        fut.set_result(events)
