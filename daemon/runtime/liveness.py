"""What the daemon says of itself: the heartbeat, systemd's watchdog and status, the journal's state.

A mixin of :class:`daemon.runtime.app.Daemon`, split from it for one job: telling the bus and systemd
whether the table works. Two threads speak here: the loop (the heartbeat and watchdog tasks,
the pipeline's journal-state callback) and, while a commit does not return and the loop
waits for it, the journal's sentinel (``daemon/pipeline/writer.py``): what that thread calls only
reads state and sends (the bus's sends hold its lock; systemd's socket is a datagram).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import structlog

from daemon.journal.events import canonical, utc_text

if TYPE_CHECKING:
    from daemon.bus.bus import Bus
    from daemon.journal import Journal
    from daemon.pipeline.pipeline import Clock, Pipeline
    from daemon.runtime.config import Settings
    from daemon.runtime.devices import DeviceRunner
    from daemon.runtime.sdnotify import Notifier

log = structlog.get_logger("tabled")


class Liveness:
    """The heartbeat, the watchdog, ``STATUS=`` and ``journal.state`` (mixed into Daemon)."""

    s: Settings
    clock: Clock
    notifier: Notifier
    bus: Bus
    journal: Journal
    pipeline: Pipeline
    devices: dict[str, DeviceRunner]
    #: the sentinel said a commit does not return, and has not yet said it returned
    _wedged_logged: bool = False
    _stuck_after: float = 5.0
    _slow_beat: float | None = None

    async def _heartbeat(self) -> None:
        interval = self.s.config.bus.heartbeat_interval
        while True:
            self.bus.heartbeat(
                self.heartbeat_data(), utc_text(self.clock.wall()), self.clock.mono()
            )
            await asyncio.sleep(interval)

    def heartbeat_data(self) -> dict[str, Any]:
        # The head of what was published, not of the journal: a commit is published after
        # it returns, and the sentinel's thread builds heartbeats while the loop commits, so
        # the journal's head may name an event still on its way, and a subscriber told of
        # it by this heartbeat would ask to replay it. One read of one (seq, hash) value:
        # a seq beside the hash before it would name no event.
        last_seq, last_hash = self.bus.head or self.journal.head
        return {
            "last_seq": last_seq,
            "last_hash": last_hash,
            "journal_id": self.journal.journal_id,
            "devices": {
                n: {
                    "health": r.health,
                    "frames": r.counters.frames,
                    "malformed": r.counters.malformed,
                }
                for n, r in self.devices.items()
            },
            "alarms": len(self.pipeline.state.alarms),
            "journal_ok": self.pipeline.healthy,
        }

    async def _watchdog(self, interval: float) -> None:
        """The watchdog rule (``docs/operations.md``, Watchdog): ping while the table can work.

        Pinged from the loop itself, so a blocked loop stops the pings. The loop commits on
        its own thread, so a journal write blocks it: while one has been in flight for less
        than a ping interval the journal's sentinel pings in its place, as the loop would
        (:meth:`_journal_slow`); after that nobody pings, and systemd restarts the daemon. A
        journal write that fails (full disk, I/O error) keeps the pings going: it is
        retried, the inputs are held in order, and a restart would neither mend the disk
        nor keep those inputs — the failure is in STATUS=, the heartbeat and the alarms
        instead. A dead pipeline task never pings: it brings the daemon down first.
        """
        while True:
            self.notifier.watchdog()
            self.notifier.status(self.summary())
            await asyncio.sleep(interval)

    def watch_journal(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the journal's sentinel: it speaks for the loop while a commit blocks it."""
        hb = self.s.config.bus.heartbeat_interval
        wd = self.notifier.watchdog_interval()
        #: a commit in flight longer than this is stuck: the watchdog's ping interval
        self._stuck_after = wd or max(5.0, hb)
        self._slow_beat = None

        def returned(seconds: float) -> None:  # told on the loop, in order with its own news
            try:
                loop.call_soon_threadsafe(self._journal_returned, seconds)
            except RuntimeError:  # the loop is closed: nobody to tell
                pass

        # it looks at least once a ping interval, so that it can ping in the loop's place
        self.pipeline.watch(interval=min(hb, wd or hb), slow=self._journal_slow, returned=returned)

    def _journal_slow(self, seconds: float) -> None:
        """From the sentinel's thread, each heartbeat interval while a commit blocks the loop.

        It does what the loop would: the heartbeat, ``STATUS=``, and the watchdog's ping
        while the commit is younger than a ping interval (the write may just be slow: an
        SD card collecting its garbage). Past that the commit is stuck: no more pings, so
        systemd restarts the daemon; the log line and ``journal.state`` say why, once, and
        the heartbeats say ``journal_ok: false``.
        """
        stuck = seconds > self._stuck_after
        if not stuck:
            self.notifier.watchdog()
        elif not self._wedged_logged:
            self._wedged_logged = True
            log.error(
                "a journal write does not return: watchdog pings stopped",
                seconds=round(seconds, 1),
            )
            self._send_journal_state(
                False,
                f"a journal write has not returned for {seconds:.1f} s (the disk does not answer)",
            )
        now = self.clock.mono()
        if self._slow_beat is None or now - self._slow_beat >= self.s.config.bus.heartbeat_interval:
            self._slow_beat = now  # the heartbeat's own interval, however often it looks
            data = self.heartbeat_data()
            if stuck:
                data["journal_ok"] = False
            self.bus.heartbeat(data, utc_text(self.clock.wall()), now)
        note = f" JOURNAL STUCK {seconds:.0f} s" if stuck else f" journal write {seconds:.0f} s"
        self.notifier.status(self.summary() + note)

    def _journal_returned(self, seconds: float) -> None:
        """On the loop, once a commit the sentinel told of has returned."""
        self._slow_beat = None
        if self._wedged_logged:
            self._wedged_logged = False
            log.warning("the journal write returned", seconds=round(seconds, 1))
            self._send_journal_state(self.pipeline.healthy, self.pipeline.stats.last_error)
        else:
            log.warning("a slow journal write returned", seconds=round(seconds, 1))
        self.notifier.status(self.summary())

    def summary(self) -> str:
        devs = " ".join(f"{n}={r.health}" for n, r in self.devices.items())
        alarms = len(self.pipeline.state.alarms)
        journal = "" if self.pipeline.healthy else " JOURNAL FAILING"
        return f"seq {self.journal.last_seq}; {devs or 'no devices'}; {alarms} alarm(s){journal}"

    def _journal_state(self, ok: bool, error: str | None) -> None:
        """The journal cannot be told of its own failure: the bus and systemd are."""
        self._send_journal_state(ok, error)
        self.notifier.status(self.summary())

    def _send_journal_state(self, ok: bool, error: str | None) -> None:
        data = {"ok": ok, "error": None if ok else error, "last_seq": self.journal.last_seq}
        body = canonical(
            {
                "v": 1,
                "table": self.s.table,
                "type": "journal.state",
                "time": utc_text(self.clock.wall()),
                "data": data,
            }
        )
        self.bus.send(f"{self.s.table}.journal.state".encode(), body)
