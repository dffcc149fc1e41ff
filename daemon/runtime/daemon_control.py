"""The daemon's own control commands (``status``, ``devices``, ``trace``) and the dispatch of
every control request: the daemon's own answered here, the table's through the journal.

Mixed into :class:`daemon.runtime.app.Daemon` (as ``daemon/runtime/liveness.py`` is): what only the daemon as
a whole can answer — its status, its devices' counters, a device's raw frames — kept apart
from the wiring that starts and stops it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from daemon.bus.control import ControlError, Peer
from daemon.table import ROLES, CommandSpec, spec
from daemon.table.sessions import summary as session_summary

if TYPE_CHECKING:
    from daemon.bus.bus import Bus
    from daemon.bus.connections import ConnectionGuard
    from daemon.bus.control_commands import TableCommands
    from daemon.journal import Journal
    from daemon.pipeline.pipeline import Clock, Pipeline
    from daemon.runtime.config import Settings
    from daemon.runtime.devices import DeviceRunner, DeviceSet
    from daemon.runtime.tracer import Tracer
    from daemon.security import Security
    from daemon.table import Table

#: the daemon's own commands, beside the table's (``Table.all_commands``), with their roles
DAEMON_COMMANDS: dict[str, CommandSpec] = {
    "status": spec("the table, its game, journal, devices and alarms", *ROLES),
    "devices": spec("each device's health and counters", *ROLES),
    # raw frames can show what a game event does not (a shuffler's traffic): not for viewers
    "trace": spec("a device's raw frames, live", "technician", "supervisor"),
}


class DaemonControl:
    """The control requests' dispatch and the daemon's own answers (mixed into Daemon)."""

    s: Settings
    clock: Clock
    started_mono: float
    version: str
    table: Table
    journal: Journal
    pipeline: Pipeline
    bus: Bus
    security: Security
    commands: TableCommands
    tracer: Tracer
    devices: dict[str, DeviceRunner]
    device_set: DeviceSet
    connections: ConnectionGuard | None
    hooks: Any

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
        summary = self.table.game.summary
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
            "state": {} if summary is None else summary(g),
            "session": session_summary(st.session),  # the dealer on duty, open, limits
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
            "connections": None if self.connections is None else self.connections.status(),
            "security": self.security.status(),
            "hooks": self.hooks.status() if self.hooks is not None else None,
        }

    async def _trace(self, args: dict[str, Any]) -> dict[str, Any]:
        """Start or renew a trace lease; a new trace gets the state it starts from."""
        import base64

        device = str(args.get("device", ""))
        runner = self.devices.get(device)
        if runner is None:
            known = ", ".join(self.devices) or "none"
            raise ControlError(f"no device {device!r} (devices: {known})")
        renew = bool(args.get("renew"))
        secret = self.table.game.secret_in_play
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
