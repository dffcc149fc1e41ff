"""The table: inputs in, events out — decide/apply, pure.

``decide(state, input)`` returns the events an input causes (or a refusal
for an operator command, saying why); ``apply(state, event)`` folds one
event into the state. The daemon's state is only ever built by applying
journaled events, so after a crash it is rebuilt exactly. No clock, no I/O:
time comes in on the inputs.

The table owns what every game shares — device health, latched alarms,
operator commands and roles — and hands the rest to the game's own
decide/apply (``games/`` rules, ``procedures/`` house procedures).

What a game is written against is imported from the package, ``daemon.table``
(``daemon/table/__init__.py``); each name lives in a module of its job beside this one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import msgspec
from tabled_client.events import DATA

from daemon.journal.events import SECRET, draft
from daemon.table import command_args, config_audit, corrections, sessions, table_commands
from daemon.table.alarms import (
    R_NOISE,
    line_noise_alarm,
    raise_alarm,
    raise_or_repeat,
)
from daemon.table.command_spec import ARGS_MAX_BYTES, CommandSpec
from daemon.table.decision import Alarm, Decision, TableState
from daemon.table.game import Game, GameDefaults
from daemon.table.inputs import Command, DeviceHealth, DeviceReading, Input
from daemon.table.secrecy import opened, seal_drafts, unsealed
from daemon.table.table_commands import SESSION_COMMANDS
from drivers.readings import BadgeRead, DeviceReply, LineNoise


class Table:
    """One table: the shared machinery around one game."""

    #: the commands every table takes (``daemon/table/table_commands.py``), beside its game's
    commands: ClassVar[dict[str, CommandSpec]] = table_commands.COMMANDS

    def __init__(self, game: Game, devices: list[str]) -> None:
        if not isinstance(game, GameDefaults):
            raise TypeError(
                f"{type(game).__name__} is not a daemon.table.game.GameDefaults: load it with "
                "daemon.games.find (which gives it the optional members' defaults)"
            )
        self.game = game
        self.device_names = devices
        self.all_commands = {**self.commands, **game.commands}
        d = game.describe
        self._results = d.results
        #: what ends the corrections' window: a void, a fresh board (a new shoe) or the game's
        closers = game.correction_closers
        self._closers: frozenset[str] = d.voids | d.fresh_board if closers is None else closers
        #: a game that keeps a card secret names what may be it (``daemon/table/secrecy.py``)
        self._sealer: Callable[[Any, Input | None, Any], Any] | None = game.sealed_words
        #: results that name the dealer on duty (their Struct has ``dealer_on_duty``)
        self._stamped = frozenset(
            x
            for x in d.results
            if (s := DATA.get(x)) is not None and "dealer_on_duty" in s.__struct_fields__
        )

    @property
    def state_version(self) -> str:
        return f"{self.game.name}:{self.game.STATE_VERSION}"

    def initial(self) -> TableState:
        return TableState(
            devices={n: "disconnected" for n in self.device_names}, game=self.game.initial()
        )

    # -- decide ------------------------------------------------------------------------

    def decide(self, t: TableState, inp: Input) -> Decision:
        d = self._decide(t, inp)
        if self._sealer is not None and d.drafts:
            self._seal(t, inp, d)
        return d

    def _seal(self, t: TableState, inp: Input | None, d: Decision) -> None:
        """The one place a decision's drafts are sealed, and the round's seals opened.

        Every draft of the decision, whoever added it, is sealed where it holds a value the
        game names as possibly its secret card (``sealed_words``) or a frame the table
        quoted while a card is secret (``Decision.sealed_words``); once the game's secret
        is over, ``secret.opened`` opens every seal (``docs/decisions.md``).
        """
        assert self._sealer is not None
        after: TableState = d.state()
        in_play = self.game.secret_in_play
        words: Any = set()
        # A decision that ends the secret (a hole card dealt and turned over by the same
        # reading, a void) publishes the card with its opening: nothing of it to seal.
        if in_play is None or in_play(after.game):
            words = self._sealer(t.game, inp, after.game)
            if d.sealed_words:
                words = {*words, *d.sealed_words}
        if words and seal_drafts(
            d.drafts,
            words,
            self.game.salt_key,
            f"{t.commands}:{t.alarm_no}:{len(t.sealed)}",
        ):
            d.base, d._folded = t, 0  # fold again: the seals go into the state
            after = d.state()
        if after.sealed and (in_play is None or not in_play(after.game)):
            d.add("secret.opened", opened=list(after.sealed))

    def _decide(self, t: TableState, inp: Input) -> Decision:
        d = Decision(base=t, fold=self.apply)
        if isinstance(inp, DeviceReading):
            r = inp.reading
            if isinstance(r, LineNoise):
                self._line_noise(t, inp.device, r, d)
                return d
            if isinstance(r, BadgeRead):  # a dealer's badge: every game's (daemon/table/sessions.py)
                sessions.badge(t, inp.device, r.code, d, raise_or_repeat)
                return d
            if isinstance(r, DeviceReply):
                # A device's answer is the same for every game: journaled so a technician's
                # session (versions, self-tests, settings) is on the record and replays.
                if not r.quiet:  # a poll's answer is health (``DeviceReply.quiet``)
                    d.add("device.reply", device=inp.device, command=r.command, text=r.text)
                return d
        elif isinstance(inp, DeviceHealth):
            if t.devices.get(inp.device) != inp.health:
                etype = {"ok": "device.connected"}.get(inp.health, f"device.{inp.health}")
                d.add(etype, device=inp.device, reason=inp.reason, **inp.info)
        elif isinstance(inp, Command):
            cmd = self.all_commands.get(inp.name)
            if cmd is None:
                d.refused = (
                    f"unknown command {inp.name!r} (known: {', '.join(sorted(self.all_commands))})"
                )
                return d
            if not cmd.allows(inp.role, inp.source):
                need = " or ".join(sorted(cmd.roles))
                d.refused = f"{inp.name} needs the {need} role; you are {inp.role}" + (
                    f" (the {inp.role} role sends it from the dealer's panel only)"
                    if inp.role in cmd.button_roles
                    else ""
                )
                return d
            bad = command_args.problem(inp.name, cmd, inp.args)
            if bad is not None:
                d.refused = bad
                return d
            size = len(msgspec.json.encode(inp.args))
            if size > ARGS_MAX_BYTES:
                d.refused = (
                    f"{inp.name}: its arguments are {size} bytes of JSON; a command carries at "
                    f"most {ARGS_MAX_BYTES} into the journal (shorten the reason)"
                )
                return d
            d.add(
                "operator.command",
                name=inp.name,
                args=inp.args,
                actor=inp.actor,
                role=inp.role,
                source=inp.source,
                **({} if inp.request is None else {"request": inp.request, "peer": inp.peer}),
            )
            if inp.name == "device.command":
                table_commands.device_command(t, inp, d)
                if d.refused is not None:
                    d.drafts.clear()
                return d
            if inp.name == "result.correct":
                corrections.decide(t, inp, d, self.game)
                if d.refused is not None:
                    d.drafts.clear()
                return d
            if inp.name == "alarm.clear":
                game = self.game
                table_commands.clear_alarm(t, inp, d, game.held_alarm(t.game), game.held_help)
                if d.refused is not None or d.reply.get("note") == "no alarms":
                    d.drafts.clear()  # a refused command, or one with nothing to do, is not journaled
                return d
            if inp.name in SESSION_COMMANDS:
                sessions.decide(t, inp, d)
                if d.refused is not None:
                    d.drafts.clear()
                return d
        self.game.decide(t, inp, d)
        if d.refused is not None:
            d.drafts.clear()
        elif t.session.dealer is not None:
            on_duty = t.session.dealer
            d.drafts[:] = [
                draft(x.type, {**x.data, "dealer_on_duty": on_duty})
                if x.type in self._stamped
                else x
                for x in d.drafts
            ]
        return d

    def _line_noise(self, t: TableState, device: str, r: LineNoise, d: Decision) -> None:
        """A noisy line: one latched alarm per device; the game holds what it reads."""
        if line_noise_alarm(t, device) is not None:
            return
        secret = self.game.secret_in_play
        if secret is not None and secret(t.game):
            # the frames a noisy line read lately may hold the card dealt face down
            d.sealed_words = tuple(r.recent)
        raise_alarm(
            t,
            d,
            "line-noise",
            f"{device}: {r.malformed} of its last {r.lines} lines were garbage; the line is "
            "noisy, so what it reads is held for a supervisor",
            rule=R_NOISE,
            action="check the cable, the ground and the baud rate (`tablectl devices`, "
            "`tablectl trace`); check what the device read lately (recent); clear this alarm "
            "when the line is clean",
            device=device,
            malformed=r.malformed,
            lines=r.lines,
            recent=list(r.recent),
        )
        self.game.on_line_noise(d.state(), d, device)

    def started(
        self,
        t: TableState,
        info: dict[str, Any],
        *,
        crashed: bool | None = None,
        config: dict[str, Any] | None = None,
    ) -> Decision:
        """The daemon (re)started on this state: say so, and let the game react (seed 003 §2.1.8).

        ``crashed``: the last run never said ``daemon.stopped`` (it crashed or lost power),
        so the game may have to void what was in play. The pipeline reads it from the
        journal's last event; without it, the state's ``running`` flag says the same.
        ``config``: the audited config (``daemon/table/config_audit.py``); what changed since
        the one last journaled is journaled as ``config.changed``.
        """
        d = Decision(base=t, fold=self.apply)
        if crashed is None:
            crashed = t.running
        d.add("daemon.started", clean=not crashed, **info)
        if config is not None:
            changed = config_audit.changed(t.config, t.config_hash, config)
            if changed is not None:
                d.add("config.changed", **changed)
                limits = config_audit.limits(changed, config)
                if limits is not None:  # the house's limits changed in the config
                    d.add("table.limits", by="config", source="config", **limits)
        if crashed:
            self.game.on_restart(d.state(), d)
        if self._sealer is not None:
            self._seal(t, None, d)
        return d

    def journal_recovered(self, t: TableState, info: dict[str, Any]) -> Decision:
        """Journal writes failed for a while and work again: a latched alarm says so."""
        d = Decision(base=t, fold=self.apply)
        raise_alarm(
            t,
            d,
            "journal-failure",
            f"journal writes failed for {info['seconds']} s ({info['error']}); "
            f"{info['dropped']} inputs were dropped",
            rule="nothing is published before it is committed; inputs were held in order",
            action="check the disk (space, errors in the kernel log), then clear the alarm",
            severity="supervisor",
            **info,
        )
        return d

    def stopped(self, t: TableState, info: dict[str, Any]) -> Decision:
        """A clean stop is an event too: the next start knows nothing was cut short."""
        d = Decision(base=t, fold=self.apply)
        d.add("daemon.stopped", **info)
        return d

    # -- apply -------------------------------------------------------------------------

    #: the event types the table itself folds; every other goes straight to the game
    _OWN: ClassVar[frozenset[str]] = frozenset(
        {
            "device.connected",
            "device.stale",
            "device.disconnected",
            "alarm.raised",
            "alarm.repeated",
            "alarm.cleared",
            "operator.command",
            "daemon.started",
            "daemon.stopped",
            "secret.opened",
            "config.changed",
            *sessions.TYPES,
        }
    )

    def apply(self, t: TableState, type_: str, data: dict[str, Any]) -> TableState:
        if SECRET in data and (o := opened(data)) is not None:
            # sealed: the table keeps its opening; the game folds the fields as decided,
            # the table's own state (an alarm's message) what was published
            t = msgspec.structs.replace(t, sealed=(*t.sealed, o))
            played = unsealed(data)
        else:
            played = data
        seq = t.seq + 1
        recent = corrections.fold(t.recent, seq, type_, played, self._results, self._closers)
        t = msgspec.structs.replace(t, seq=seq, recent=recent)
        if type_ not in self._OWN:  # a card, a spin, a throw: the game's alone
            g = self.game.apply(t.game, type_, played)
            if type_ in self._stamped and t.session.dealer is not None:
                t = msgspec.structs.replace(t, session=sessions.counted(t.session))
            return t if g is t.game else msgspec.structs.replace(t, game=g)
        if type_ in sessions.TYPES:
            return msgspec.structs.replace(t, session=sessions.apply(t.session, type_, data))
        if type_ == "config.changed":
            return msgspec.structs.replace(
                t, config=config_audit.fold(t.config, data), config_hash=data["hash"]
            )
        if type_.startswith("device."):
            health = "ok" if type_ == "device.connected" else type_[7:]
            t = msgspec.structs.replace(t, devices={**t.devices, data["device"]: health})
        elif type_ == "alarm.raised":
            a = Alarm(
                id=data["id"],
                kind=data["kind"],
                message=data["message"],
                rule=data["rule"],
                action=data["action"],
                severity=data["severity"],
                device=data.get("device"),
                hand=data.get("hand"),
            )
            t = msgspec.structs.replace(t, alarms={**t.alarms, a.id: a}, alarm_no=t.alarm_no + 1)
        elif type_ == "alarm.repeated":
            a = t.alarms.get(data["id"])
            if a is not None:
                a = msgspec.structs.replace(a, count=data["count"])
                t = msgspec.structs.replace(t, alarms={**t.alarms, a.id: a})
        elif type_ == "alarm.cleared":
            alarms = dict(t.alarms)
            alarms.pop(data["id"], None)
            t = msgspec.structs.replace(t, alarms=alarms)
        elif type_ == "operator.command":
            t = msgspec.structs.replace(t, commands=t.commands + 1)
        elif type_ == "daemon.started":
            # A new process holds no device link yet: each reconnect is a fresh event.
            t = msgspec.structs.replace(
                t, devices={n: "disconnected" for n in t.devices}, running=True
            )
        elif type_ == "daemon.stopped":
            t = msgspec.structs.replace(t, running=False)
        elif type_ == "secret.opened":
            return msgspec.structs.replace(t, sealed=())
        g = self.game.apply(t.game, type_, played)
        if g is not t.game:
            t = msgspec.structs.replace(t, game=g)
        return t

    # -- snapshots -----------------------------------------------------------------------

    def encode_state(self, t: TableState) -> bytes:
        return msgspec.msgpack.encode(t)

    def decode_state(self, raw: bytes) -> TableState:
        t = msgspec.msgpack.decode(raw, type=TableState)
        g = msgspec.convert(t.game, self.game.State)
        alarms = {k: msgspec.convert(v, Alarm) for k, v in t.alarms.items()}
        devices = {n: t.devices.get(n, "disconnected") for n in self.device_names}
        return msgspec.structs.replace(t, game=g, alarms=alarms, devices=devices)

