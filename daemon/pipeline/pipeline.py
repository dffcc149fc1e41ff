"""The commit loop: inputs to committed, published events, in order, one writer.

Every input (a device reading, a health change, an operator command) is decided against
the table state; the events of all inputs waiting at that moment are committed in one
SQLite transaction (group commit: one fsync, each input's events together and in order);
only then is the state advanced and are the events published. A failed commit publishes
nothing and advances nothing; one that fails is retried from the loop, which goes on
meanwhile (``asyncio.sleep``): the control socket and the heartbeat say so.

The commit runs on the loop's own thread (``docs/decisions.md``, Where the commit runs),
one transaction at a time, published (``publishers``: the bus, the very bytes stored) the
moment it returns; inputs that arrive during an fsync wait in the kernel and the next
batch takes them all. A commit that does not return blocks the loop; the writer's
sentinel thread reports it and the watchdog's pings stop.

Its neighbours do the other jobs: :mod:`daemon.pipeline.recovery` rebuilds the state from the
journal before the loop takes any input, :mod:`daemon.pipeline.decide_batch` decides a batch
(pure), :mod:`daemon.pipeline.writer` commits and publishes it, :mod:`daemon.pipeline.clock` keeps time.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from daemon.journal import Batch, Journal, JournalError
from daemon.journal.events import Event, utc_text
from daemon.pipeline import decide_batch, recovery
from daemon.pipeline.clock import Clock
from daemon.pipeline.decide_batch import Decided, Item, Mark, mono_of
from daemon.pipeline.writer import PipelineFailed, Publisher, Sentinel, Writer, retryable
from daemon.table import Decision, Input, Table, TableState

log = structlog.get_logger("pipeline")

Listener = Callable[[Sequence[Event]], None]


@dataclass(slots=True)
class Stats:
    inputs: int = 0
    events: int = 0
    commits: int = 0
    refused: int = 0
    commit_failures: int = 0
    last_error: str | None = None
    recovered_events: int = 0
    recovered_from_snapshot: int = 0
    #: events whose hashes were walked at start-up (0 when the journal's seal held)
    verified_events: int = 0
    #: where that walk began: 1, or the seq of the stored proof it started from
    verified_from: int = 0
    dropped: int = 0
    #: inputs whose decide raised: refused, each with a decide-failed alarm
    decide_failures: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class Pipeline:
    def __init__(
        self,
        table: Table,
        journal: Journal,
        *,
        clock: Clock | None = None,
        snapshot_every: int = 1000,
        max_batch: int = 512,
    ) -> None:
        self.table = table
        self.journal = journal
        self.clock = clock or Clock()
        self.snapshot_every = snapshot_every
        self.max_batch = max_batch
        self.state: TableState = table.initial()
        self.listeners: list[Listener] = []
        #: run as soon as a commit returns, before the listeners
        self.publishers: list[Publisher] = []
        #: told ``(ok, error)`` when journal writes start failing and when they work again
        self.on_journal: list[Callable[[bool, str | None], None]] = []
        self.max_pending = 10_000
        self._failed_at = 0.0
        self._fail_base = (0, 0)
        #: called with each input as it is queued, in queue order (the trace tap)
        self.taps: list[Callable[[Input], None]] = []
        self.stats = Stats()
        self._inbox: deque[Item] = deque()
        self._wake = asyncio.Event()
        #: the run loop is running / has nothing in flight and takes nothing more (closed)
        self._running = False
        self._idle = asyncio.Event()
        #: while :meth:`started` commits: the run loop takes no input before it is done
        self._starting: asyncio.Future[None] | None = None
        #: the commit and its publish; its sentinel thread is started by the daemon (:meth:`watch`)
        self.writer = Writer(journal, self.publishers, self.clock.mono)
        self._sentinel: Sentinel | None = None
        self._closed = False
        self.healthy = True
        #: why the writer stopped for good (set once; the daemon stops)
        self.failed: str | None = None
        #: the journal's last event was not ``daemon.stopped``: the last run ended badly
        self.crashed = False

    # -- recovery (daemon/pipeline/recovery.py) -------------------------------------------------

    def recover(self, progress: Callable[[int], None] | None = None) -> None:
        """Rebuild the state from the journal before any input (:func:`daemon.pipeline.recovery.recover`)."""
        r = recovery.recover(self.table, self.journal, progress)
        self.state = r.state
        self.crashed = r.crashed
        self.stats.recovered_events = r.events
        self.stats.recovered_from_snapshot = r.from_snapshot
        self.stats.verified_events = r.verified_events
        self.stats.verified_from = r.verified_from

    # -- input -------------------------------------------------------------------------

    def submit(self, inp: Input, *, reply: bool = False) -> asyncio.Future[Decision] | None:
        """Queue one input; with ``reply`` the future resolves once its events are committed."""
        fut: asyncio.Future[Decision] | None = None
        if reply:
            fut = asyncio.get_running_loop().create_future()
        if self._closed:
            if fut is not None:
                fut.set_exception(RuntimeError("the daemon is stopping"))
            return fut
        if not self.healthy and len(self._inbox) >= self.max_pending:
            # Only while the journal has been failing for long: a bounded queue, counted loss.
            self.stats.dropped += 1
            if fut is not None:
                fut.set_exception(
                    JournalError("the journal is failing and the input queue is full")
                )
            return fut
        for tap in self.taps:
            tap(inp)
        self._inbox.append(Item(inp, fut, None))
        self._wake.set()
        return fut

    def mark(self) -> asyncio.Future[TableState]:
        """The state as every input queued so far leaves it (where a trace starts)."""
        fut: asyncio.Future[TableState] = asyncio.get_running_loop().create_future()
        if self._closed:  # nothing takes the inbox any more: it would wait forever
            fut.set_exception(RuntimeError("the daemon is stopping"))
            return fut
        self._inbox.append(Item(Mark(), None, None, fut))
        self._wake.set()
        return fut

    async def started(
        self, info: dict[str, Any], config: dict[str, Any] | None = None
    ) -> list[Event]:
        """Commit ``daemon.started`` (and what the game does on a restart, and what changed in
        the audited ``config``) before any input."""
        # The run loop may already run (the daemon starts it first) with an input queued
        # (the control socket is up): it waits, so that input is decided from this state.
        gate = self._starting = asyncio.get_running_loop().create_future()
        try:
            # The id in the chain: an edited ``meta`` journal_id is found by the walk.
            info = {**info, "journal_id": self.journal.journal_id}
            d = self.table.started(self.state, info, crashed=self.crashed, config=config)
            return await self._commit([(d, None)], [d.drafts])
        finally:
            gate.set_result(None)
            self._starting = None

    # -- the writer loop ----------------------------------------------------------------

    async def run(self) -> None:
        """Decide, commit, publish, forever: everything queued (up to ``max_batch``) in
        one transaction, one transaction at a time, so a failed commit is retried, or
        stops the daemon, before anything after it is written."""
        self._running = True
        try:
            while True:
                if self._closed:  # drain() commits the rest; shutdown cancels this task
                    self._idle.set()
                    await asyncio.Event().wait()
                if self._starting is not None:  # daemon.started is being committed
                    await self._starting
                    continue
                if not self._inbox:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._commit_next()
        finally:
            self._running = False
            self._idle.set()

    async def _commit_next(self) -> None:
        """Decide the next batch from the state and commit it; a failure answers everyone."""
        items = self._take(self.max_batch)
        try:
            await self._commit_batch(self._decide(items))
        except BaseException as e:
            self._fail(e, items)
            raise

    def _decide(self, items: list[Item]) -> Decided:
        batch = decide_batch.decide(self.table, items, self.state)
        self.stats.decide_failures += batch.failures
        return batch

    def _take(self, n: int) -> list[Item]:
        inbox = self._inbox
        return [inbox.popleft() for _ in range(min(len(inbox), n))]

    def _fail(self, e: BaseException, items: list[Item]) -> None:
        """The writer stops for good: say why, and answer everyone who waits."""
        if self.failed is None:
            what = e if isinstance(e, PipelineFailed) else f"{type(e).__name__}: {e}"
            self.failed = str(what)
        self.healthy = False
        self._closed = True
        if not isinstance(e, asyncio.CancelledError):
            log.error("the pipeline stopped", error=self.failed)
        for it in [*items, *self._inbox]:
            if it.future is not None and not it.future.done():
                it.future.set_exception(JournalError(f"not committed: {self.failed}"))
            if it.mark is not None and not it.mark.done():
                # an error, not a cancel: a command awaiting it (a trace's start) is not
                # itself cancelled, and a cancel would leave its client without a reply
                it.mark.set_exception(JournalError(f"no state: {self.failed}"))
        self._inbox.clear()

    async def drain(self, info: dict[str, Any] | None = None) -> None:
        """Stop taking inputs, commit what is queued, then ``daemon.stopped`` (shutdown).

        The run loop first finishes the batch it is committing and parks; the rest is
        committed here, in order.
        """
        self._closed = True
        if self._running:
            self._wake.set()
            await self._idle.wait()
        if self.failed is None:
            try:
                while self._inbox:
                    await self._commit_next()
            except PipelineFailed:
                pass
        else:
            self._fail(RuntimeError(self.failed), [])
        if info is None:
            return
        d = self.table.stopped(self.state, info)
        if self.failed is None:
            try:
                await self._commit([(d, None)], [d.drafts])
            except PipelineFailed:
                pass
            return
        # The writer failed: one plain try, so the journal says the stop was seen if it can.
        batch = Batch(drafts=d.drafts, time=utc_text(self.clock.wall()), mono=None)
        try:
            self.writer.commit([batch], None, publish=False)
        except Exception as e:
            log.error("daemon.stopped not committed", error=f"{type(e).__name__}: {e}")

    async def _commit_batch(self, batch: Decided) -> None:
        self.stats.inputs += len(batch.decided)
        self.stats.refused += batch.refused
        for fut, state in batch.marks:
            if not fut.done():
                fut.set_result(state)
        await self._commit(batch.decided, batch.draft_lists, batch.tentative)

    async def _commit(
        self,
        decided: list[tuple[Decision, Item | None]],
        draft_lists: list[list[Any]],
        tentative: TableState | None = None,
    ) -> list[Event]:
        """Commit decided inputs (retrying while the disk refuses), then tell everyone."""
        if tentative is None:
            tentative = self.state
            for drafts in draft_lists:
                for x in drafts:
                    tentative = self.table.apply(tentative, x.type, x.data)
        now = utc_text(self.clock.wall())
        batches = [
            Batch(drafts=drafts, time=now, mono=mono_of(it))
            for (_, it), drafts in zip(decided, draft_lists, strict=True)
            if drafts
        ]
        n = sum(len(b.drafts) for b in batches)
        snapshot = None
        j = self.journal
        if n and (j.last_seq + n) // self.snapshot_every > j.last_seq // self.snapshot_every:
            snapshot = (self.table.state_version, self.table.encode_state(tentative))
        attempt = 0
        while True:
            try:
                events = self.writer.commit(batches, snapshot, publish=True)
                break
            except Exception as e:
                if not retryable(e):
                    # Not a disk that may take it later (another writer's rows, a damaged
                    # file, a bug): retrying forever would wedge the table behind live
                    # heartbeats. Nothing of this batch was committed or published.
                    self.stats.last_error = f"{type(e).__name__}: {e}"
                    self.healthy = False
                    self._journal_state(False)
                    failure = PipelineFailed(
                        f"journal {j.path}: commit refused ({self.stats.last_error}); "
                        "the daemon stops: this is not a full disk and retrying would not help"
                    )
                    self.failed = self.failed or str(failure)
                    raise failure from e
                # Nothing committed: nothing published, the state stays where the journal is.
                # The same decisions are retried, in order, until the disk takes them; new
                # inputs wait behind them (bounded), so a short failure loses nothing.
                self.stats.commit_failures += 1
                self.stats.last_error = f"{type(e).__name__}: {e}"
                if self.healthy:
                    self.healthy = False
                    self._failed_at = time.monotonic()
                    # this outage's own counts, not the process's since start
                    self._fail_base = (self.stats.commit_failures - 1, self.stats.dropped)
                    log.error(
                        "journal commit failed: holding inputs until it works again",
                        error=self.stats.last_error,
                        inputs=len(decided),
                    )
                    self._journal_state(False)
                if self._closed and attempt >= 3:  # shutting down: give up, say so
                    for _, it in decided:
                        if it is not None and it.future is not None and not it.future.done():
                            it.future.set_exception(
                                JournalError(f"not committed: {self.stats.last_error}")
                            )
                    return []
                attempt += 1
                await asyncio.sleep(min(2.0, 0.05 * 2**attempt))
        recovered = not self.healthy
        self.healthy = True
        if events and events[-1].seq != tentative.seq:
            # the journal's own event (``journal.snapshot``) took a seq no decision applied:
            # the state counts it, as a recovery that applies it does
            tentative = msgspec.structs.replace(tentative, seq=events[-1].seq)
        self.state = tentative
        self.stats.events += len(events)
        self.stats.commits += 1
        for listener in self.listeners:
            try:
                listener(events)
            except Exception:
                log.exception("event listener failed")
        seq = events[0].seq if events else 0
        for (d, _), drafts in zip(decided, draft_lists, strict=True):
            if drafts:  # the events come back in the order of the batches
                d.seqs = (seq, seq + len(drafts) - 1)
                seq += len(drafts)
        for d, it in decided:
            if it is not None and it.future is not None and not it.future.done():
                it.future.set_result(d)
        if recovered:
            down = time.monotonic() - self._failed_at
            log.warning("journal writes work again", seconds=round(down, 3))
            self._journal_state(True)
            info = {
                "seconds": round(down, 3),
                "error": self.stats.last_error,
                "failures": self.stats.commit_failures - self._fail_base[0],
                "dropped": self.stats.dropped - self._fail_base[1],
            }
            d = self.table.journal_recovered(self.state, info)
            events = events + await self._commit([(d, None)], [d.drafts])
        return events

    def _journal_state(self, ok: bool) -> None:
        for fn in self.on_journal:
            try:
                fn(ok, self.stats.last_error)
            except Exception:
                log.exception("journal state listener failed")

    def watch(
        self, *, interval: float, slow: Callable[[float], None], returned: Callable[[float], None]
    ) -> Sentinel:
        """Start the thread that speaks while a commit is slow to return (``daemon/pipeline/writer.py``)."""
        if self._sentinel is None:
            self._sentinel = Sentinel(self.writer, interval=interval, slow=slow, returned=returned)
            self._sentinel.start()
        return self._sentinel

    def close(self) -> None:
        """Stop the sentinel's thread, if one was started."""
        if self._sentinel is not None:
            self._sentinel.close()
            self._sentinel = None
