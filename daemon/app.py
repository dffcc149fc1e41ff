"""tabled: wiring config → devices → table → journal → bus, one asyncio loop.

Start order matters: the journal is recovered and every socket is bound
before ``READY=1``; devices start after, so no reading is decided on a state
that is not yet the journal's. Stop order too: devices first (no new
readings), then the queue is committed, then the sockets close with a
bounded LINGER so the ZeroMQ context can never hang the exit.

Devices are ``daemon/devices.py``'s :class:`~daemon.devices.DeviceSet`, each opened by
its transport kind's factory (``daemon/transports.py``). What stays here past 400 lines
is the wiring and what only the daemon as a whole can answer: the start and stop order,
its own control commands (status, devices, trace); the heartbeat, the watchdog and
the journal's state are ``daemon/liveness.py``'s, mixed in.

Why long: the start and stop order is one sequence that must be read in one place;
its parts that are a job of their own (devices, transports, history check, metrics,
hooks) already live in their modules.
"""

from __future__ import annotations

# first, before anything imports structlog: structlog without rich (4 MiB, 0.2 s of a start)
from daemon import structlog_lean  # noqa: F401

# isort: split
import argparse
import asyncio
import functools
import os
import signal
import sys
import threading
import time
from typing import Any

import msgspec
import structlog
import zmq
import zmq.asyncio

from daemon import history, logs, tables
from daemon.bus import Bus
from daemon.config import (
    ConfigError,
    DeviceConfig,
    Settings,
    head_marks,
    load,
    prepare_state_dir,
)
from daemon.connections import ConnectionGuard, guard_listeners
from daemon.control import ControlError, ControlServer, Peer
from daemon.control_commands import TableCommands
from daemon.croupier import Croupier
from daemon.devices import DeviceRunner, DeviceSet
from daemon.event_log import event_logger
from daemon.fd_budget import raise_nofile
from daemon.games import find as game_class
from daemon.journal import Journal, JournalError
from daemon.listeners import Listeners
from daemon.liveness import Liveness
from daemon.pipeline import Clock, Pipeline
from daemon.publisher import io_threads_yield
from daemon.sdnotify import Notifier
from daemon.security import Security
from daemon.table import ROLES, Command, CommandSpec, Input, Table, spec
from daemon.tracer import Tracer
from drivers.plugins import PackageNotFoundError, version

log = structlog.get_logger("tabled")

DEFAULT_CONFIG = "config/demo.toml"


def package_version() -> str:
    try:
        return version("tabled")
    except PackageNotFoundError:
        return "0+unknown"


#: the daemon's own commands, beside the table's (``Table.all_commands``), with their roles
DAEMON_COMMANDS: dict[str, CommandSpec] = {
    "status": spec("the table, its game, journal, devices and alarms", *ROLES),
    "devices": spec("each device's health and counters", *ROLES),
    # raw frames can show what a game event does not (a shuffler's traffic): not for viewers
    "trace": spec("a device's raw frames, live", "technician", "supervisor"),
}


class Daemon(Liveness):
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

    # -- life cycle -----------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        s = self.s
        cfg = s.config
        self.nofile = raise_nofile()  # the connection caps share it out (daemon/connections.py)
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
        secret = getattr(self.table.game, "secret_in_play", None)
        if secret is not None:
            self.tracer.hold = lambda: bool(secret(self.pipeline.state.game))
            self.listeners.add(self.tracer.flush)
        self.pipeline.taps.append(self._trace_input)
        self.pipeline.on_journal.append(self._journal_state)
        self.listeners.add(event_logger(cfg.log.events, game_cls.describe))
        summary = getattr(self.table.game, "summary", None)
        self.device_set = DeviceSet(
            self.pipeline.submit,
            lambda: self.pipeline.state,
            None if summary is None else lambda: summary(self.pipeline.state.game),
            self.listeners.add,
            mono=self.clock.mono,
            wall=self.clock.wall,
        )
        self.devices = self.device_set.runners
        self.listeners.add(self.device_set.on_events)
        self.metrics = self._start_metrics()
        self.hooks = None
        if cfg.hooks.command:
            from daemon.hooks import Hooks

            self.hooks = Hooks(s.table, list(cfg.hooks.command), cfg.hooks.timeout, cfg.hooks.queue)
            self.listeners.add(self.hooks.on_events)
            self.pipeline.on_journal.append(self.hooks.on_journal)
            self.hooks.start()
        self._watch(asyncio.create_task(self.pipeline.run(), name="pipeline"))
        # The commit runs on the loop: a slow or stopped disk blocks it, and this thread
        # is what still speaks then (daemon/writer.py, daemon/liveness.py).
        self.watch_journal(asyncio.get_running_loop())
        await self.pipeline.started(
            {
                "version": self.version,
                "recovered_seq": self.journal.last_seq,
                "pid": os.getpid(),
                "boot": self.clock.boot(),
            }
        )

        self.device_set.start(cfg.devices, s.device_options, self._watch_device)
        from daemon.hotplug import Hotplug

        self.hotplug = Hotplug(
            asyncio.get_running_loop(), lambda: [r.transport for r in self.devices.values()]
        )
        self.hotplug.start()
        self.croupier: Croupier | None = None
        if Croupier.wanted(s.game):
            self.croupier = Croupier(s.game, self.pipeline.submit)
            self.listeners.add(self.croupier.on_events)
            self.croupier.start(self.pipeline.state)
        # A game's own timers (a decision clock, a demo's virtual players): clients of the
        # table like the croupier, submitting commands, following the committed events.
        helpers = getattr(self.table.game, "helpers", None)
        self.helpers: list[Any] = (
            []
            if helpers is None
            else list(helpers(self.pipeline.submit, lambda: self.pipeline.state))
        )
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
        """The rows before the stored proof, re-hashed after READY (``daemon/history.py``)."""
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
        from daemon.metrics import Metrics

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
        if getattr(self, "metrics", None) is not None:
            self.metrics.close()
        if getattr(self, "hooks", None) is not None:
            await self.hooks.close()
        if getattr(self, "hotplug", None) is not None:
            self.hotplug.close()
        tables.remove_note(self.s)
        if self.croupier is not None:
            self.croupier.close()
        for helper in getattr(self, "helpers", []):
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
        guard: ConnectionGuard | None = getattr(self, "connections", None)
        if guard is not None:  # first: its copies of the listeners would keep the ports open
            guard.close()
        for server in getattr(self, "role_controls", []):
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
        secret = getattr(self.table.game, "secret_in_play", None)
        if secret is not None:  # a garbled line may hold the card face down: not quoted then
            runner.withhold = lambda: bool(secret(self.pipeline.state.game))

    def _trace_input(self, inp: Input) -> None:
        if isinstance(inp, Command):
            self.tracer.command(inp.name, inp.args, inp.actor, inp.role, inp.source)

    async def _trace(self, args: dict[str, Any]) -> dict[str, Any]:
        """Start or renew a trace lease; a new trace gets the state it starts from."""
        import base64

        device = str(args.get("device", ""))
        runner = self.devices.get(device)
        if runner is None:
            known = ", ".join(self.devices) or "none"
            raise ControlError(f"no device {device!r} (devices: {known})")
        renew = bool(args.get("renew"))
        secret = getattr(self.table.game, "secret_in_play", None)
        if not renew and secret is not None and secret(self.pipeline.state.game):
            # the trace's first line is the table's state, which holds the secret card
            raise ControlError(
                "a card is secret now (dealt face down, not yet turned over): a trace starts "
                "between rounds or once it is turned over; try again in a moment"
            )
        self.tracer.lease(device, float(args.get("seconds", 10)))
        out: dict[str, Any] = {
            "topic": self.tracer.topic.decode(),
            "publish": self.s.config.bus.publish,
        }
        if not renew:
            state = await self.pipeline.mark()
            out.update(
                driver=runner.driver.name,
                name=device,
                table=self.s.table,
                game=self.s.config.table.game,
                rules=msgspec.to_builtins(self.s.game),
                options=msgspec.to_builtins(self.s.device_options[device]),
                state_version=self.table.state_version,
                state=base64.b64encode(self.table.encode_state(state)).decode(),
            )
        return out

    # -- control --------------------------------------------------------------------------------

    async def handle(
        self, msg: dict[str, Any], peer: Peer, role: str | None = None
    ) -> dict[str, Any]:
        cmd = msg["cmd"]
        args = msg.get("args", {})
        role = role or peer.role or self.s.config.control.role
        daemon_cmd = DAEMON_COMMANDS.get(cmd)
        if daemon_cmd is not None:
            if role not in daemon_cmd.roles:
                need = " or ".join(sorted(daemon_cmd.roles))
                raise ControlError(f"{cmd} needs the {need} role; you are {role}")
            if cmd == "status":
                return self.status()
            if cmd == "devices":
                return {"devices": [r.status() for r in self.devices.values()]}
            return await self._trace(args)
        if cmd == "device.command":
            refused = self.device_set.refusal(str(args.get("device")), str(args.get("command", "")))
            if refused is not None:
                raise ControlError(refused)
        if cmd in self.table.all_commands:
            actor = peer.actor(msg.get("actor"))  # a CURVE key's name when there is one
            return await self.commands.run(cmd, args, actor, role, peer, msg.get("id"))
        known = sorted([*DAEMON_COMMANDS, *self.table.all_commands])
        raise ControlError(f"unknown command {cmd!r} (known: {', '.join(known)})")

    def status(self) -> dict[str, Any]:
        st = self.pipeline.state
        last_seq, last_hash = self.journal.head  # one read, as the heartbeat's
        g = st.game
        return {
            "table": self.s.table,
            "game": self.s.config.table.game,
            "version": self.version,
            "uptime": round(self.clock.mono() - self.started_mono, 3),
            "last_seq": last_seq,
            "last_hash": last_hash,
            "journal": str(self.s.journal_path),
            "journal_id": self.journal.journal_id,
            "journal_ok": self.pipeline.healthy,
            "journal_error": self.pipeline.stats.last_error,
            "publish": self.s.config.bus.publish,
            "replay": self.s.config.bus.replay,
            "state": self.table.game.summary(g) if hasattr(self.table.game, "summary") else {},
            "devices": [r.status() for r in self.devices.values()],
            "alarms": [
                {
                    "id": a.id,
                    "kind": a.kind,
                    "message": a.message,
                    "rule": a.rule,
                    "action": a.action,
                    "severity": a.severity,
                    "device": a.device,
                    "count": a.count,
                }
                for a in st.alarms.values()
            ],
            "pipeline": {
                "inputs": self.pipeline.stats.inputs,
                "events": self.pipeline.stats.events,
                "commits": self.pipeline.stats.commits,
                "refused": self.pipeline.stats.refused,
            },
            "bus": dict(self.bus.counters),
            "connections": self.connections.status(),
            "security": self.security.status(),
            "hooks": self.hooks.status() if getattr(self, "hooks", None) is not None else None,
        }


def _chgrp(path: str, group: str) -> None:
    import grp

    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise OSError(
            f"control.roles: unix group {group!r} does not exist (groupadd {group})"
        ) from None
    os.chown(path, -1, gid)


# -- entry point ------------------------------------------------------------------------------


def default_config() -> str:
    return os.environ.get("TABLED_CONFIG") or DEFAULT_CONFIG


def build_parser() -> argparse.ArgumentParser:
    """``tabled``'s options, and its man page (``daemon/manpages.py``)."""
    p = argparse.ArgumentParser(
        prog="tabled",
        description=(
            "Table controller daemon: reads the table's devices, applies the game's rules, "
            "journals every event and publishes it on the table's ZeroMQ bus. Run by "
            "systemd as tabled@TABLE.service; `tablectl` talks to it."
        ),
        epilog=(
            "Exit status: 0 after a clean stop (SIGTERM or SIGINT: the queued inputs are "
            "committed, then daemon.stopped); 1 when it cannot run or must stop (a journal "
            "that is damaged or refuses a write that retrying cannot mend, a socket it cannot "
            "bind), with one line saying why; 2 when the config is refused, naming the file, "
            "the key and what is wrong. Environment: TABLED_CONFIG, the config when --config "
            "is not given; NOTIFY_SOCKET, systemd's READY, WATCHDOG and STATUS notifications."
        ),
    )
    p.add_argument(
        "--config", default=None, help=f"table config (default: $TABLED_CONFIG or {DEFAULT_CONFIG})"
    )
    p.add_argument("--version", action="version", version=f"tabled {package_version()}")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    path = a.config or default_config()
    try:
        settings = load(path)
    except ConfigError as e:
        # before the config's own [log] section is known: the default, so that under
        # journald the refusal is one JSON line at priority 3, on a terminal plain text
        logs.setup("info", "auto")
        if logs.is_json():
            log.error("tabled refusing to start", config=e.path, problems=str(e).splitlines())
        else:
            print(
                f"tabled: refusing to start: {len(e.problems)} problem(s) in {e.path}",
                file=sys.stderr,
            )
            print(str(e), file=sys.stderr)
        return 2
    logs.setup(settings.config.log.level, settings.config.log.format, table=settings.table)
    try:
        prepare_state_dir(settings)
    except ConfigError as e:
        if logs.is_json():
            log.error("tabled refusing to start", config=e.path, problems=e.problems)
        else:
            print(f"tabled: refusing to start: {e}", file=sys.stderr)
        return 2
    return asyncio.run(_run(settings))


async def _run(settings: Settings) -> int:
    daemon = Daemon(settings)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, daemon.stop)
    try:
        return await daemon.run()
    except (JournalError, OSError, zmq.ZMQError) as e:
        log.error("tabled cannot run", error=str(e))
        if not logs.is_json():
            print(f"tabled: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
