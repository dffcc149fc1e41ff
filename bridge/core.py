"""The bridge: every listed table's events into one JetStream stream, exactly once, in order.

Each table is followed with the subscriber recipe (``tabled_client.table.TableFollower``:
replay from the last seq held, heartbeats for gaps, chain check; the live messages read
in groups: ``bridge/feed.py``) and each event is published to ``<prefix>.<table>.<type>``
with the message id ``<table>:<journal id>:<seq>`` once JetStream acked the ones before
it (a backlog as atomic batches: ``bridge/publish.py``), so the stream holds each table's
events in seq order. Each publish is conditional on the table's last stored message
(``bridge/store.py``): a late one (a lost ack's re-send, a second bridge) is refused and
recognised, never stored twice. At start the bridge reads each table's last stored event
and resumes from there by replay. Health and the once-a-second judge: ``bridge/health.py``.

Tables are independent tasks: one that is off, silent (a wrong CURVE key) or behind
holds no other back. A table whose chain breaks, or whose journal went back under
events JetStream holds, is stopped and reported (tampering, a restored backup, or a
bug: not something to paper over); any other failure of a table's task is retried with
backoff. A failure of the bridge itself (NATS unreachable at start for good, the status
writer) ends the process non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import structlog
import zmq
import zmq.asyncio
from tabled_client.chain import ChainBroken
from tabled_client.table import TableFollower

from bridge.config import BridgeConfig, Table, curve_of
from bridge.feed import Groups
from bridge.health import Health, Judged, assess, at_a_glance, judge_all
from bridge.metrics import serve
from bridge.natslink import NatsUnreachable, ensure_stream, nats_identity, reason, refusal, too_old
from bridge.publish import BATCH_MAX, Publisher
from bridge.rollback import Rollbacks
from bridge.store import NOTHING, Ahead, Diverged, Head, Store, keep_checkpoint
from daemon.runtime.sdnotify import Notifier

log = structlog.get_logger("tabled.bridge")

#: seconds a stop waits for NATS to take what is in flight (then it closes regardless)
STOP_GRACE = 2.0
#: libzmq's context option ZMQ_ZERO_COPY_RECV (pyzmq names no constant for it)
ZERO_COPY_RECV = 10


@dataclass(slots=True)
class Link:
    """One table as the bridge follows it (what status and metrics show)."""

    table: Table
    follower: TableFollower | None = None
    state: str = "starting"
    published: int = 0
    duplicates: int = 0
    publish_errors: int = 0
    restarts: int = 0
    last_error: str = ""
    #: the table's last event in JetStream, as far as this bridge knows
    head: Head = NOTHING
    #: the table's time of the last event stored
    last_event_time: str = ""
    #: publish attempts failed in a row (a streak is logged at its start and its end)
    failing: int = 0
    #: heartbeats read on their own path, the lag, the state last logged (bridge/health.py)
    health: Health = field(default_factory=lambda: Health(""))
    #: events another bridge stored before this one could (active-active: skipped here)
    skipped: int = 0
    #: atomic batches stored (a backlog's events, one round trip each: bridge/publish.py)
    batches: int = 0
    #: rolled back: the journal id quarantined, events kept aside, a probe in flight
    rolled: str | None = None
    quarantined: int = 0
    probing: bool = False
    #: the last seq the table and JetStream agree on, once a rollback's fork is found
    fork_seq: int | None = None
    #: the table's signed checkpoints from its heartbeats, by seq, until the event after
    #: each is stored carrying it (bridge/store.py, CHECKPOINT)
    checkpoints: dict[int, bytes] = field(default_factory=dict)


class FloorBridge:
    def __init__(self, cfg: BridgeConfig, base: Path) -> None:
        self.cfg = cfg
        self.base = base
        self.links = {t.id: Link(t, health=Health(t.id)) for t in cfg.tables}
        self.ctx = zmq.asyncio.Context()
        # a DEALER per replay in flight, and a SUB per 64 tables: past the default 1023
        self.ctx.set(zmq.MAX_SOCKETS, 4 * len(self.links) + 64)
        # a frame received is copied out of ZeroMQ's read buffer, which a queued frame
        # kept alive otherwise (~18 KiB each: docs/floor.md, Bounded)
        self.ctx.set(ZERO_COPY_RECV, 0)
        #: tables catching up at once (a replay's chunk read and stored): docs/floor.md
        self.catch_ups = asyncio.Semaphore(cfg.bridge.catch_ups)
        self.nc: Any = None
        self.js: Any = None
        self.store: Store = None  # type: ignore[assignment]  # made by connect()
        self.started = time.time()
        self.nats_state = "connecting"
        self.judged: Judged | None = None  # the judge's last finding over every table
        self.nats_disconnects = 0
        #: the stop left NATS's connection unclosed (a hung server): exit without waiting
        self.abandoned = False
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.groups: Groups | None = None  # every table's live messages (bridge/feed.py)
        #: tables whose journal went back (bridge/rollback.py); its probes
        self.rollbacks = Rollbacks(self)
        self._side = self.rollbacks.probes

    # -- NATS -------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect to NATS, or fail with the reason: refused logins and certificates at once.

        nats-py retries an initial connect for ever when reconnects are unlimited, so a
        wrong password would look like a bridge starting. A refusal the server or TLS
        gives is final (the config is wrong); an unreachable NATS is tried for
        ``connect_timeout`` seconds, then the bridge exits and systemd restarts it.
        """
        final = asyncio.Event()
        last: list[BaseException] = []

        async def disconnected() -> None:
            if self.nc is None:
                return
            self.nats_state = "disconnected"
            self.nats_disconnects += 1
            log.warning("nats disconnected")

        async def reconnected() -> None:
            self.nats_state = "connected"
            log.info("nats reconnected", server=str(self.nc.connected_url.netloc))
            why = too_old(self.nc._server_info.get("version", ""))
            if why:  # a cluster half downgraded: say so loudly; the publishes will tell
                log.error(f"{self.nc.connected_url.netloc}: {why}")

        async def error(e: Exception) -> None:
            if self.nc is None and refusal(e) and not final.is_set():
                last.append(e)  # the refusal is the reason, not the broken pipe after it
                final.set()
            elif not final.is_set():
                last.append(e)
            log.warning("nats error", error=str(e) or type(e).__name__)

        connecting = asyncio.create_task(
            nats.connect(
                self.cfg.nats.servers,
                **nats_identity(self.cfg.nats, self.base),
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                allow_reconnect=True,
                connect_timeout=2,
                disconnected_cb=disconnected,
                reconnected_cb=reconnected,
                error_cb=error,
                name="tabled-bridge",
            )
        )
        refused = asyncio.create_task(final.wait())
        done, _ = await asyncio.wait(
            {connecting, refused},
            timeout=self.cfg.nats.connect_timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
        refused.cancel()
        if connecting not in done:
            connecting.cancel()
            with contextlib.suppress(BaseException):
                await connecting
            why = reason(last[-1]) if last else "no answer"
            raise NatsUnreachable(
                f"cannot connect to NATS {', '.join(self.cfg.nats.servers)}: {why}"
                + ("" if final.is_set() else f" (tried for {self.cfg.nats.connect_timeout:g} s)")
            )
        self.nc = connecting.result()
        why = too_old(self.nc._server_info.get("version", ""))
        if why:
            url = self.nc.connected_url
            await self.nc.close()
            self.nc = None
            raise NatsUnreachable(f"{url.scheme}://{url.netloc}: {why}")
        self.nats_state = "connected"
        self.js = self.nc.jetstream(timeout=self.cfg.nats.publish_timeout)
        publisher = Publisher(self.nc, self.cfg.nats.publish_timeout)
        await publisher.start()
        self.store = Store(self.js, self.cfg.nats.stream, self.cfg.nats.prefix, publisher)
        await ensure_stream(self.js, self.cfg.nats)

    # -- tables -------------------------------------------------------------------------

    async def follow(self, link: Link) -> None:
        """One table for as long as the bridge runs."""
        t = link.table
        delay = 0.5
        while True:
            try:
                head = link.head = await self.store.head(t.id)
                f = self.follower(t, head.journal_id, head.seq, head.hash)
                link.follower, link.state = f, "waiting"
                log.info("following", table=t.id, journal_id=head.journal_id, from_seq=head.seq + 1)
                try:
                    # closed on the way out: a catch-up's slot is given back at once
                    async with contextlib.aclosing(f.batches(limit=BATCH_MAX)) as batches:
                        async for batch in batches:
                            link.state = "following"
                            try:
                                link.head = await self.store.put_many(link, batch)
                            except Ahead as e:
                                if e.head.journal_id != f.journal_id or e.head.seq < batch[-1].seq:
                                    raise
                                link.skipped += e.head.seq - link.head.seq
                                link.head = e.head
                                f.skip_to(e.head.seq, e.head.hash)
                            delay = 0.5
                            del batch  # stored: not kept until the table's next events
                finally:
                    f.close()
            except Ahead as e:
                log.info("resuming from JetStream's head", table=t.id, why=str(e))
                continue
            except Diverged as e:
                self.rollbacks.rolled_back(link, str(e))
                return
            except ChainBroken as e:
                if await self.rollbacks.went_back(link):  # not tampering: a restored journal
                    return
                link.state, link.last_error = "chain-broken", str(e)
                link.health.change(
                    "chain-broken",
                    "error",
                    "chain broken: this table is no longer bridged",
                    error=str(e),
                )
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a table's trouble is retried; it never stops the others
                link.restarts += 1
                link.state, link.last_error = "retrying", f"{type(e).__name__}: {e}"
                log.warning("table follower failed; retrying", table=t.id, error=link.last_error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    def restart(self, link: Link, coro: Any) -> None:
        """Replace the table's task (its follower, or its quarantine) with ``coro``."""
        old = self._tasks.get(link.table.id)
        if old is not None and old is not asyncio.current_task():
            old.cancel()
        self._tasks[link.table.id] = asyncio.create_task(coro, name=f"table {link.table.id}")

    def follower(self, t: Table, journal_id: str | None, seq: int, hash: str) -> TableFollower:
        return TableFollower(
            t.publish,
            t.replay,
            table=t.id,
            last_seq=seq,
            last_hash=hash,
            journal_id=journal_id,
            curve=curve_of(self.cfg, t, self.base),
            ctx=self.ctx,
            replay_timeout=self.cfg.bridge.replay_timeout,
            max_frame=self.cfg.bridge.max_event_bytes,
            replay_max_bytes=self.cfg.bridge.replay_max_bytes,
            catch_ups=self.catch_ups,
            feed=None if self.groups is None else self.groups.feed(t.id),
        )

    # -- health -------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        now = time.monotonic()
        running = time.time() - self.started
        tables = {}
        for tid, link in self.links.items():
            f, h = link.follower, link.health
            state, up, lag, lag_s = assess(
                link.health, link.state, link.head, self.cfg.bridge, now, running
            )
            tables[tid] = {
                "state": state,
                "up": up,
                "journal_id": link.head.journal_id,
                "stream_seq": link.head.stream_seq,
                "skipped": link.skipped,
                "batches": link.batches,
                "quarantined": link.quarantined,
                "fork_seq": link.fork_seq,
                "stored_seq": link.head.seq,
                "table_seq": h.table_seq,
                "lag_events": lag,
                "lag_seconds": round(lag_s, 3),
                "published": link.published,
                "duplicates": link.duplicates,
                "publish_errors": link.publish_errors,
                "repairs": 0 if f is None else f.repairs,
                "replay_errors": 0 if f is None else f.replay_errors,
                "dropped": 0 if self.groups is None else self.groups.inboxes[tid.encode()].dropped,
                "journal_changes": 0 if f is None else f.journal_changes,
                "restarts": link.restarts,
                "last_event_time": link.last_event_time,
                "last_error": link.last_error,
                "changes": [[round(t, 3), lvl, text] for t, lvl, text in h.changes],
            }
        return {
            "time": time.time(),
            "pid": os.getpid(),
            "started": self.started,
            "nats": {
                "state": self.nats_state,
                "servers": self.cfg.nats.servers,
                "disconnects": self.nats_disconnects,
            },
            "stream": self.cfg.nats.stream,
            "tables": tables,
        }

    def health(self) -> dict[str, Any]:
        """``GET /health``: the floor at a glance, from the once-a-second judge."""
        return at_a_glance(self.judged, len(self.links), self.nats_state)

    async def tick(self, notifier: Notifier) -> None:
        """Every second: each table judged (its changes logged; ``/health``), systemd's
        status line, and the watchdog ping, from this loop: a bridge whose event loop is
        stuck is killed by systemd's watchdog rather than looking healthy."""
        while True:
            j = self.judged = judge_all(
                self.links.values(), self.cfg.bridge, time.monotonic(), time.time() - self.started
            )
            notifier.status(
                f"{j.up}/{len(self.links)} tables up, {j.behind} behind; NATS {self.nats_state}"
            )
            if notifier.watchdog_interval() is not None:
                notifier.watchdog()
            await asyncio.sleep(1.0)

    def _heartbeat(self, table: str, data: dict[str, Any]) -> None:
        link = self.links[table]
        link.health.on_heartbeat(data, time.monotonic())
        keep_checkpoint(link.checkpoints, table, data)
        if link.state not in ("starting", "chain-broken"):
            self.rollbacks.watch(link, data)

    # -- run ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        notifier = Notifier.from_env()
        await self.connect()
        server = None
        if self.cfg.bridge.listen:
            server = await serve(self.cfg.bridge.listen, self.status, self.health)
        beats = self.groups = Groups(
            self.ctx,
            ((t.id, t.publish, curve_of(self.cfg, t, self.base)) for t in self.cfg.tables),
            self._heartbeat,
            self.cfg.bridge.max_event_bytes,
        )
        self._tasks[" tables"] = asyncio.create_task(beats.run(), name="tables")
        for tid, link in self.links.items():
            self._tasks[tid] = asyncio.create_task(self.follow(link), name=f"table {tid}")
        status = asyncio.create_task(self.tick(notifier), name="status")
        notifier.ready(f"following {len(self.links)} tables")
        stopper = asyncio.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait({status, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if status in done:
                status.result()  # the status loop failed: say so, loudly
        finally:
            if server is not None:
                server.close()
            for task in [*self._tasks.values(), *self._side, status, stopper]:
                task.cancel()
            for task in [*self._tasks.values(), *self._side, status]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            beats.close()
            if self.nc is not None:
                # a hung server must not hold the stop: what was not stored is stored by
                # the next bridge from the tables' journals. Not wait_for: nats-py's drain
                # swallows the cancellation and then waits on the server again.
                closing = asyncio.ensure_future(self.nc.drain())
                done, _ = await asyncio.wait({closing}, timeout=STOP_GRACE)
                if not done:
                    self.abandoned = True
                    log.warning(
                        "NATS did not answer the stop: leaving without it", seconds=STOP_GRACE
                    )
            self.ctx.destroy(linger=0)
            notifier.close()
