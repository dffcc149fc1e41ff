"""The daemon: wiring config → devices → table → journal → bus, one asyncio loop.

Start order matters: the journal is recovered and every socket is bound
before ``READY=1``; devices start after, so no reading is decided on a state
that is not yet the journal's. Stop order too: devices first (no new
readings), then the queue is committed, then the sockets close with a
bounded LINGER so the ZeroMQ context can never hang the exit.

Devices are ``daemon/runtime/devices.py``'s :class:`~daemon.runtime.devices.DeviceSet`, each opened by
its transport kind's factory (``daemon/runtime/transports.py``). The heartbeat, the watchdog and
the journal's state are ``daemon/runtime/liveness.py``'s; the control requests' dispatch and the
daemon's own answers (status, devices, trace) ``daemon/runtime/daemon_control.py``'s: both mixed
in. The ``tabled`` command around it is ``daemon/runtime/app.py``.

Why long: the start and stop order is one sequence that must be read in one place;
its parts that are a job of their own (devices, transports, control, liveness, history
check, metrics, hooks) already live in their modules.
"""

from __future__ import annotations

# first, before anything imports structlog: structlog without rich (4 MiB, 0.2 s of a start)
from daemon.runtime import structlog_lean  # noqa: F401

# isort: split
import asyncio
import functools
import os
import sys
import threading
import time
from typing import Any

import structlog
import zmq
import zmq.asyncio

from daemon.bus.bus import Bus
from daemon.bus.connections import ConnectionGuard, guard_listeners
from daemon.bus.control import ControlServer
from daemon.bus.control_commands import TableCommands
from daemon.bus.fd_budget import raise_nofile
from daemon.bus.publisher import io_threads_yield
from daemon.ctl import tables
from daemon.games import find as game_class
from daemon.journal import Journal, history
from daemon.pipeline.listeners import Listeners
from daemon.pipeline.pipeline import Clock, Pipeline
from daemon.runtime import logs
from daemon.runtime.config import (
    DeviceConfig,
    Settings,
    head_marks,
)
from daemon.runtime.croupier import Croupier
from daemon.runtime.daemon_control import DaemonControl
from daemon.runtime.devices import DeviceRunner, DeviceSet
from daemon.runtime.event_log import event_logger
from daemon.runtime.liveness import Liveness
from daemon.runtime.sdnotify import Notifier
from daemon.runtime.tracer import Tracer
from daemon.security import Security
from daemon.table import Command, Input, Table
from daemon.table.config_audit import audited
from drivers.plugins import PackageNotFoundError, version

log = structlog.get_logger("tabled")


def package_version() -> str:
    try:
        return version("tabled")
    except PackageNotFoundError:
        return "0+unknown"


class Daemon(Liveness, DaemonControl):
    def __init__(
        self, settings: Settings, *, clock: Clock | None = None, notifier: Notifier | None = None
    ) -> None:
        self.s = settings
        self.clock = clock or Clock()
        self.notifier = notifier or Notifier.from_env()
        self.started_mono = self.clock.mono()
        self.devices: dict[str, DeviceRunner] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self.version = package_version()
        #: the process's exit status: 1 once a task failed and brought the daemon down
        self.exit_code = 0
        #: the re-hash of the history behind a stored proof, and how it is told to stop
        self._history: asyncio.Task[None] | None = None
        self._stopping = threading.Event()
        # the optional parts, None (or empty) until ``run`` starts them: ``shutdown`` and
        # ``status`` read what a start that failed early left
        self.metrics: Any = None
        self.hooks: Any = None
        self.hotplug: Any = None
        self.croupier: Croupier | None = None
        self.helpers: list[Any] = []
        self.connections: ConnectionGuard | None = None
        self.role_controls: list[ControlServer] = []

    # -- life cycle -----------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        s = self.s
        cfg = s.config
        self.nofile = raise_nofile()  # the connection caps share it out (daemon/bus/connections.py)
        self.security = Security.from_settings(s)  # keys checked before anything opens
        game_cls = game_class(cfg.table.game)
        assert game_cls is not None  # config validation names the game
        self.table = Table(game_cls(s.game), [d.name for d in cfg.devices])
        history.refuse_if_marked(s.journal_path)
        self.journal = Journal(s.journal_path, s.table, head_marks=head_marks(s)[1:])
        if self.security.signer is not None:  # stored proofs: a crash start walks from the newest
            self.journal.prover = self.security.signer
            self.journal.proof_check = self.security.signer.verify
        self.pipeline = Pipeline(
            self.table, self.journal, clock=self.clock, snapshot_every=cfg.journal.snapshot_every
        )
        t0 = time.perf_counter()
        try:
            self.pipeline.recover(progress=self._verifying)
        except BaseException:
            self.journal.close()
            raise
        log.info(
            "journal recovered",
            journal=str(s.journal_path),
            last_seq=self.journal.last_seq,
            sealed=self.journal.sealed is not None,
            verified=self.pipeline.stats.verified_events,
            verified_from=self.pipeline.stats.verified_from,
            replayed=self.pipeline.stats.recovered_events,
            from_snapshot=self.pipeline.stats.recovered_from_snapshot,
            seconds=round(time.perf_counter() - t0, 3),
        )

        self.ctx = zmq.asyncio.Context()
        io_threads_yield(self.ctx)  # before its first socket: the I/O threads take it at start
        self.bus = Bus(
            self.ctx,
            table=s.table,
            publish=cfg.bus.publish,
            replay=cfg.bus.replay,
            journal_path=str(s.journal_path),
            sndhwm=cfg.bus.sndhwm,
            replay_hwm=cfg.bus.replay_hwm,
            replay_max=cfg.bus.replay_max,
            journal_id=self.journal.journal_id,
            curve=self.security.bus_curve,
            signer=self.security.signer,
        )
        # the request ids the journal committed, before any request is answered
        self.commands = TableCommands(self.pipeline, self.journal, self.clock.mono)
        journaled = self.table.all_commands.__contains__  # only these take a request id's memory
        self.control = ControlServer(
            self.ctx,
            s.control_endpoint,
            self.handle,
            ipc_mode=cfg.control.mode,
            curve=self.security.control_curve,
            remember=journaled,
        )
        # One socket per role: who can open it is decided by its file's group and mode.
        self.role_controls = [
            ControlServer(
                self.ctx,
                ep,
                functools.partial(self.handle, role=role),
                ipc_mode=cfg.control.mode,
                remember=journaled,
            )
            for role, ep in s.role_endpoints.items()
        ]
        try:
            self.security.start(self.ctx)  # ZAP before any bind: else CURVE admits any key
            await self.bus.start()
            await self.control.start()
            for role, server in zip(s.role_endpoints, self.role_controls, strict=True):
                await server.start()
                if cfg.control.roles[role]:  # "": the daemon's own group (a demo)
                    _chgrp(s.role_endpoints[role][6:], cfg.control.roles[role])
            # every bound listener capped: a flood cannot take the table's descriptors
            auth = self.security.auth
            roles = zip(s.role_endpoints, self.role_controls, strict=True)
            self.connections, self.metrics_cap = guard_listeners(
                [
                    *self.bus.listeners(),
                    ("control", self.control.socket),
                    *((f"control-{role}", server.socket) for role, server in roles),
                ],
                cfg.bus.max_connections,
                metrics=cfg.metrics.port is not None,
                take_monitor=lambda sock: None if auth is None else auth.take_monitor(sock),
            )
            self.connections.start()
        except Exception:
            await self._close_sockets()
            raise
        # the moment each commit returns, before the listeners
        self.bus.resume(self.journal.head)
        self.pipeline.publishers.append(self.bus.publish)
        # every commit's listeners, each called only for the event types it follows
        self.listeners = Listeners()
        self.pipeline.listeners.append(self.listeners)
        self.tracer = Tracer(s.table, self.bus.send, self.clock.mono, self.clock.wall)
        game = self.table.game
        secret = game.secret_in_play
        if secret is not None:
            self.tracer.hold = lambda: bool(secret(self.pipeline.state.game))
            self.listeners.add(self.tracer.flush)
        self.pipeline.taps.append(self._trace_input)
        self.pipeline.on_journal.append(self._journal_state)
        self.listeners.add(event_logger(cfg.log.events, game_cls.describe))
        summary = game.summary
        self.device_set = DeviceSet(
            self.pipeline.submit,
            lambda: self.pipeline.state,
            None if summary is None else lambda: summary(self.pipeline.state.game),
            self.listeners.add,
            acknowledged=game.acknowledged,
            mono=self.clock.mono,
            wall=self.clock.wall,
        )
        self.devices = self.device_set.runners
        self.listeners.add(self.device_set.on_events, self.device_set.followed)
        self.metrics = self._start_metrics()
        if cfg.hooks.command:
            from daemon.runtime.hooks import Hooks

            self.hooks = Hooks(s.table, list(cfg.hooks.command), cfg.hooks.timeout, cfg.hooks.queue)
            self.listeners.add(self.hooks.on_events)
            self.pipeline.on_journal.append(self.hooks.on_journal)
            self.hooks.start()
        self._watch(asyncio.create_task(self.pipeline.run(), name="pipeline"))
        # The commit runs on the loop: a slow or stopped disk blocks it, and this thread
        # is what still speaks then (daemon/pipeline/writer.py, daemon/runtime/liveness.py).
        self.watch_journal(asyncio.get_running_loop())
        await self.pipeline.started(
            {
                "version": self.version,
                "recovered_seq": self.journal.last_seq,
                "pid": os.getpid(),
                "boot": self.clock.boot(),
            },
            audited(s),  # what changed since the last start: config.changed
        )

        self.device_set.start(cfg.devices, s.device_options, self._watch_device)
        from daemon.runtime.hotplug import Hotplug

        self.hotplug = Hotplug(
            asyncio.get_running_loop(), lambda: [r.transport for r in self.devices.values()]
        )
        self.hotplug.start()
        if Croupier.wanted(s.game):
            self.croupier = Croupier(s.game, self.pipeline.submit, game.describe)
            self.listeners.add(self.croupier.on_events, self.croupier.followed)
            self.croupier.start(self.pipeline.state)
        # A game's own timers (a decision clock, a demo's virtual players): clients of the
        # table like the croupier, submitting commands, following the committed events.
        self.helpers = list(game.helpers(self.pipeline.submit, lambda: self.pipeline.state))
        for helper in self.helpers:
            self.listeners.add(helper.on_events)
            helper.start(self.pipeline.state)
        self._watch(asyncio.create_task(self._heartbeat(), name="heartbeat"))
        if self.pipeline.stats.verified_from > 1:  # started from a stored proof
            self._history = asyncio.create_task(self._check_history(), name="history check")
        tables.write_note(s, self.version, os.getpid())  # tablectl -t finds us without the config
        self.notifier.ready(self.summary())
        wd = self.notifier.watchdog_interval()
        if wd:
            self._watch(asyncio.create_task(self._watchdog(wd), name="watchdog"))
        log.info(
            "tabled ready",
            table=s.table,
            game=cfg.table.game,
            publish=cfg.bus.publish,
            replay=cfg.bus.replay,
            control=s.control_endpoint,
            last_seq=self.journal.last_seq,
        )
        if not logs.is_json():  # a person at a terminal; journald has the line above
            print(
                f"tabled {self.version}: table {s.table} ({cfg.table.game}) publishing on "
                f"{cfg.bus.publish}, replay on {cfg.bus.replay}, control {s.control_endpoint}",
                file=sys.stderr,
                flush=True,
            )

        await self._stop.wait()
        await self.shutdown()
        return self.exit_code

    def _watch(self, task: asyncio.Task[Any]) -> None:
        """A background task that ends, other than by shutdown, brings the daemon down."""
        self._tasks.append(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or self._stop.is_set():
            return
        e = task.exception()
        what = f"{type(e).__name__}: {e}" if e is not None else "ended"
        if task.get_name() == "pipeline" and self.pipeline.failed is not None:
            what = self.pipeline.failed
        log.error("tabled stops: a task failed", task=task.get_name(), error=what)
        if not logs.is_json():
            print(f"tabled: stopping: {task.get_name()} failed: {what}", file=sys.stderr)
        self.exit_code = 1
        self._stop.set()

    async def _check_history(self) -> None:
        """The rows before the stored proof, re-hashed after READY (``daemon/journal/history.py``)."""
        t0 = time.perf_counter()
        try:
            n = await asyncio.to_thread(history.check, self.s.journal_path, self._stopping)
        except history.Stopped:
            return
        except Exception as e:  # a broken history (or an unreadable file) ends the daemon
            log.error("tabled stops: the journal's history is broken", error=str(e))
            if not logs.is_json():
                print(f"tabled: stopping: {e}", file=sys.stderr)
            self.exit_code = 1
            self._stop.set()
            return
        log.info("journal history verified", events=n, seconds=round(time.perf_counter() - t0, 3))

    def _verifying(self, checked: int) -> None:
        """A long walk of the chain at start-up: tell systemd we are busy, not hung."""
        self.notifier.notify(
            EXTEND_TIMEOUT_USEC=30_000_000,
            STATUS=f"verifying the journal's chain: {checked:,} events so far",
        )

    def _start_metrics(self) -> Any:
        m = self.s.config.metrics
        if m.port is None:
            return None
        from daemon.bus.metrics import Metrics

        metrics = Metrics(self.s.table, self.status)
        self.journal.commit_observers.append(metrics.on_commit)
        self.listeners.add(metrics.on_events)
        self.metrics_port = metrics.serve(m.address, m.port, self.metrics_cap)
        log.info("metrics", url=f"http://{m.address}:{self.metrics_port}/metrics")
        return metrics

    async def shutdown(self) -> None:
        self.notifier.stopping("stopping")
        self._stopping.set()
        if self._history is not None:
            await self._history
        if self.metrics is not None:
            self.metrics.close()
        if self.hooks is not None:
            await self.hooks.close()
        if self.hotplug is not None:
            self.hotplug.close()
        tables.remove_note(self.s)
        if self.croupier is not None:
            self.croupier.close()
        for helper in self.helpers:
            helper.close()
        await self.device_set.stop()
        await self.pipeline.drain({"reason": "signal"})
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.pipeline.close()  # its sentinel sends on the bus: stopped before the sockets close
        await self._close_sockets()
        # Sealed only when this process verified the chain and alone wrote to it since.
        self.journal.close(seal=self.pipeline.failed is None)
        self.device_set.close()
        log.info("tabled stopped", last_seq=self.journal.last_seq)

    async def _close_sockets(self) -> None:
        if self.connections is not None:  # first: its copies of the listeners keep the ports
            self.connections.close()
        for server in self.role_controls:
            await server.close()
        await self.control.close()
        await self.bus.close()
        await self.security.close()
        self.ctx.term()

    # -- devices ----------------------------------------------------------------------------

    def _watch_device(self, dc: DeviceConfig, runner: DeviceRunner) -> None:
        """Each device's frames and link changes, for ``tablectl trace``; its frames withheld
        from the log while a card is secret."""
        runner.taps.append(lambda d, data, mono, n=dc.name: self.tracer.frame(n, d, data, mono))
        runner.on_link.append(lambda up, n=dc.name, r=runner: self.tracer.link(n, up, r.reason))
        secret = self.table.game.secret_in_play
        if secret is not None:  # a garbled line may hold the card face down: not quoted then
            runner.withhold = lambda: bool(secret(self.pipeline.state.game))

    def _trace_input(self, inp: Input) -> None:
        if isinstance(inp, Command):
            self.tracer.command(inp.name, inp.args, inp.actor, inp.role, inp.source)

def _chgrp(path: str, group: str) -> None:
    import grp

    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise OSError(
            f"control.roles: unix group {group!r} does not exist (groupadd {group})"
        ) from None
    os.chown(path, -1, gid)
