"""The table: inputs in, events out — decide/apply, pure.

``decide(state, input)`` returns the events an input causes (or a refusal
for an operator command, saying why); ``apply(state, event)`` folds one
event into the state. The daemon's state is only ever built by applying
journaled events, so after a crash it is rebuilt exactly. No clock, no I/O:
time comes in on the inputs.

The table owns what every game shares — device health, latched alarms,
operator commands and roles — and hands the rest to the game's own
decide/apply (``games/`` rules, ``procedures/`` house procedures).

Why long: what every game is written against — its inputs, commands and their specs,
alarms, the state, :class:`Decision` and the :class:`Game` protocol — is one vocabulary
a game imports from one place, and :class:`Table` is the only user of all of it. Each
piece is a few dozen lines; split, each game would import the table's words from four
modules and the table's own decide/apply would stand apart from what it decides on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import msgspec
from tabled_client.events import DATA

from daemon import command_args, config_audit, corrections, sessions
from daemon.events import SECRET, Draft, draft
from daemon.games.describe import Describer
from daemon.secrecy import opened, seal_drafts, unsealed
from drivers.readings import BadgeRead, DeviceReply, LineNoise, Reading

# -- inputs ------------------------------------------------------------------------


class DeviceReading(msgspec.Struct, frozen=True):
    device: str
    reading: Reading
    mono: float


class DeviceHealth(msgspec.Struct, frozen=True):
    """A transport or staleness change: ``ok``, ``stale`` or ``disconnected``."""

    device: str
    health: str
    reason: str
    mono: float
    info: dict[str, Any] = {}


class Command(msgspec.Struct, frozen=True):
    """An operator or backend command, or a dealer's button: the table treats them alike."""

    name: str
    args: dict[str, Any]
    actor: str
    role: str
    source: str = "control"
    mono: float | None = None
    #: a control request's id and its sender (``daemon/requests.py``), journaled with it
    request: str | int | None = None
    peer: str | None = None


Input = DeviceReading | DeviceHealth | Command

# -- roles ---------------------------------------------------------------------------

ROLES = ("viewer", "dealer", "supervisor", "technician")


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument of a command, as ``tablectl`` takes it and the command's ``args`` carry it."""

    name: str
    help: str
    required: bool = True
    option: bool = False  # ``--name VALUE``; else a positional word
    type: Callable[[str], Any] = str
    #: what JSON value it takes (``daemon/command_args.py``): ``scalar`` (a string, an
    #: integer, a finite number or a boolean), ``list`` (a scalar or a list of them),
    #: ``objects`` (a list of objects)
    kind: str = "scalar"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """Who may issue a command, what it is for, and how ``tablectl`` spells it.

    ``words`` are the tablectl words (``("void", "hand")`` for ``tablectl void hand``);
    empty means the command's name split at its dot (``betting.open`` → ``betting open``).
    ``tablectl`` builds its game commands from these, so a game lists each command once.
    """

    roles: frozenset[str]
    help: str
    words: tuple[str, ...] = ()
    args: tuple[Arg, ...] = ()
    #: arguments it also takes that ``tablectl`` does not offer (a game server's, a tool's)
    more: tuple[Arg, ...] = ()
    #: roles that may issue it from the dealer's panel only (source ``button``), not from
    #: the control socket (``docs/security.md``, Roles per command)
    button_roles: frozenset[str] = frozenset()

    def allows(self, role: str, source: str) -> bool:
        return role in self.roles or (source == "button" and role in self.button_roles)

    def cli_words(self, name: str) -> tuple[str, ...]:
        return self.words or tuple(name.split("."))


#: the reason every void and clear takes (``--reason``), kept in the journal
REASON = Arg("reason", "why, for the record (journaled)", option=True)


def spec(
    help_text: str,
    *roles: str,
    words: tuple[str, ...] = (),
    args: tuple[Arg, ...] = (),
    more: tuple[Arg, ...] = (),
    button_roles: tuple[str, ...] = (),
) -> CommandSpec:
    return CommandSpec(frozenset(roles), help_text, words, args, more, frozenset(button_roles))


# -- state -----------------------------------------------------------------------------


class Alarm(msgspec.Struct, frozen=True):
    id: str
    kind: str
    message: str
    rule: str
    action: str
    severity: str  # "warning" | "supervisor" (needs a supervisor to clear)
    device: str | None = None
    hand: int | None = None  # the hand it concerns: voiding that hand settles it
    count: int = 1  # occurrences of its cause (alarm.repeated)


class TableState(msgspec.Struct, frozen=True):
    devices: dict[str, str] = {}
    alarms: dict[str, Alarm] = {}
    alarm_no: int = 0
    commands: int = 0
    running: bool = False  # between daemon.started and daemon.stopped
    game: Any = None
    #: the dealer on duty, the table open or closed, its limits (``daemon/sessions.py``)
    session: sessions.Session = sessions.Session()
    #: the audited config as last journaled (``config.changed``; ``daemon/config_audit.py``)
    config: dict[str, Any] | None = None
    config_hash: str | None = None
    #: the openings of the events sealed while the game's card is secret (``daemon/secrecy.py``):
    #: published in ``secret.opened`` when it is turned over; never shown
    sealed: tuple[dict[str, Any], ...] = ()
    #: the seq of the last event applied (a snapshot's is set from its row)
    seq: int = 0
    #: the results a supervisor may still correct (``daemon/corrections.py``)
    recent: tuple[corrections.Recent, ...] = ()


@dataclass(slots=True)
class Decision:
    """What one input decided: drafts in order, or a refusal saying why."""

    drafts: list[Draft] = field(default_factory=list)
    refused: str | None = None
    reply: dict[str, Any] = field(default_factory=dict)
    base: Any = None
    fold: Callable[[Any, str, dict[str, Any]], Any] | None = None
    _folded: int = 0
    #: values this input brought that may be a secret card (frames the table quotes while
    #: one is face down): sealed wherever a draft holds them (``daemon/secrecy.py``)
    sealed_words: tuple[str, ...] = ()
    #: the first and last seq its events were committed at (set by the pipeline)
    seqs: tuple[int, int] | None = None

    def add(self, type_: str, **data: Any) -> None:
        self.drafts.append(draft(type_, data))

    def state(self) -> Any:
        """The state as the drafts so far leave it, for decisions that chain (held cards)."""
        assert self.fold is not None
        drafts = self.drafts
        if self._folded == len(drafts):  # asked again with nothing new: most calls
            return self.base
        for x in drafts[self._folded :]:
            self.base = self.fold(self.base, x.type, x.data)
        self._folded = len(drafts)
        return self.base


class Game(Protocol):
    """What a game gives the table (``docs/architecture.md``, "the game interface").

    Found through the ``tabled.games`` entry-point group (:mod:`daemon.games`).
    Optional hooks the table calls when present: ``on_restart(t, d)`` after a crash,
    ``held_alarm(g)`` for an alarm only the game's own commands settle (``held_help``: how),
    ``summary(g)`` for ``tablectl status``, ``STATE_VERSION`` for snapshots,
    ``check_secrets(events)`` for ``tablectl verify`` when the game journals secret parts,
    ``secret_in_play(g)`` and ``sealed_words(before, inp, after)`` when a card is kept
    secret: what may be it is sealed in every draft until it is over (``daemon/secrecy.py``).
    """

    name: ClassVar[str]
    Rules: ClassVar[type[msgspec.Struct]]
    State: ClassVar[type[msgspec.Struct]]
    commands: ClassVar[dict[str, CommandSpec]]
    #: how the game's events read to people: log lines, recall, the monitor
    describe: ClassVar[Describer]

    def __init__(self, rules: Any) -> None: ...

    def initial(self) -> msgspec.Struct: ...

    def decide(self, t: TableState, inp: Input, d: Decision) -> None: ...

    def apply(self, g: Any, type_: str, data: dict[str, Any]) -> Any: ...


# -- alarms, shared by every game ----------------------------------------------------------


def raise_alarm(
    t: TableState,
    d: Decision,
    kind: str,
    message: str,
    *,
    rule: str,
    action: str,
    severity: str = "supervisor",
    device: str | None = None,
    **extra: Any,
) -> str:
    """Add an ``alarm.raised`` draft; alarms latch until cleared, across restarts."""
    pending = sum(1 for x in d.drafts if x.type == "alarm.raised")
    alarm_id = f"A{t.alarm_no + pending + 1}"
    d.add(
        "alarm.raised",
        id=alarm_id,
        kind=kind,
        message=message,
        rule=rule,
        action=action,
        severity=severity,
        device=device,
        **extra,
    )
    return alarm_id


#: a command's ``args`` as JSON, at most: each is journaled in ``operator.command`` [ours]
ARGS_MAX_BYTES = 1024

R_NOISE = (
    "[ours] a line without a checksum cannot be proven free of noise: while a device's line "
    "is noisy, what it reads is held for a supervisor"
)


def active_alarm(alarms: Mapping[str, Alarm], kind: str, device: str | None) -> Alarm | None:
    """The active alarm of ``kind`` for ``device``: one alarm per cause, however often it recurs."""
    if not alarms:  # most inputs, at a table without alarms
        return None
    return next((a for a in alarms.values() if a.kind == kind and a.device == device), None)


def line_noise_alarm(t: TableState, device: str) -> str | None:
    """The latched ``line-noise`` alarm that holds ``device`` suspect, if any."""
    a = active_alarm(t.alarms, "line-noise", device)
    return None if a is None else a.id


def device_fault(
    t: TableState,
    d: Decision,
    device: str,
    code: int | None,
    meaning: str,
    *,
    rule: str,
    action: str,
    frames: list[str] | None = None,
    **event: Any,
) -> str:
    """A device reported a fault of its own (a wheel's component, a shaker's motor): its
    ``device-fault`` alarm latches, one per device, until a technician clears it, and every
    report is a ``device.fault`` event naming that alarm; the game decides what stops.
    ``frames``: the raw frames that said so, when the driver keeps them (alarm and event);
    ``event``: what the game adds to the event (the round in play)."""
    evidence: dict[str, Any] = {} if frames is None else {"frames": frames}
    alarms = d.state().alarms if d.fold is not None else t.alarms
    active = active_alarm(alarms, "device-fault", device)
    alarm = (
        active.id
        if active is not None
        else raise_alarm(
            t,
            d,
            "device-fault",
            f"{device}: {meaning}" + ("" if code is None else f" (code {code})"),
            rule=rule,
            action=action,
            device=device,
            code=code,
            **evidence,
        )
    )
    d.add(
        "device.fault", device=device, code=code, meaning=meaning, **evidence, alarm=alarm, **event
    )
    return alarm


def raise_or_repeat(
    t: TableState, d: Decision, kind: str, message: str, *, device: str | None = None, **alarm: Any
) -> str:
    """One alarm per cause: while one of ``kind`` (for ``device``) is active, count this
    occurrence on it (``alarm.repeated``) instead of raising another."""
    same = active_alarm(d.state().alarms if d.fold is not None else t.alarms, kind, device)
    if same is None:
        return raise_alarm(t, d, kind, message, device=device, **alarm)
    d.add("alarm.repeated", id=same.id, kind=kind, count=same.count + 1, message=message)
    return same.id


def _reconciled(t: TableState, c: Command, d: Decision) -> None:
    """``tablectl wheel reconcile``'s report, journaled; a mismatch latches an alarm [ours].

    tablectl compares the wheel's log pages (journaled as ``device.reply``) with the
    journal's spins (``daemon/tools/reconcile.py``), so the report can be redone from
    the journal; the table only records it.
    """
    a = c.args
    mismatches = a.get("mismatches")
    if not isinstance(mismatches, list) or not all(isinstance(m, dict) for m in mismatches):
        d.refused = "wheel.reconcile needs mismatches: a list of objects (tablectl sends it)"
        return
    device = str(a.get("device") or "wheel")
    if device not in t.devices:
        d.refused = f"no device {device!r} (devices: {', '.join(t.devices) or 'none'})"
        return
    try:
        pages = a.get("pages", [])
        if not isinstance(pages, list):
            raise TypeError("pages must be a list")
        d.add(
            "wheel.reconciled",
            device=device,
            by=c.actor,
            pages=[int(p) for p in pages],
            logged=int(a.get("logged", 0)),
            compared=int(a.get("compared", 0)),
            mismatches=mismatches,
        )
    except (TypeError, ValueError, OverflowError, msgspec.ValidationError) as e:
        d.refused = f"wheel.reconcile: not a report tablectl sends ({e})"
        return
    if mismatches:
        raise_alarm(
            t,
            d,
            "wheel-log-mismatch",
            f"the wheel's log and the journal differ in {len(mismatches)} place(s)",
            rule="[ours] every number the wheel recorded is a journaled result or void",
            action="check each listed game against the wheel's log and the journal "
            "(tablectl wheel reconcile), then clear the alarm",
            severity="supervisor",
            device=device,
        )


#: a dealer's and the table's sessions, every game's (``daemon/sessions.py``)
SESSION_COMMANDS: dict[str, CommandSpec] = {
    "dealer.sign-in": spec(
        "sign a dealer in (relieves the dealer on duty): dealer sign-in DEALER",
        "dealer",
        "supervisor",
        words=("dealer", "sign-in"),
        args=(Arg("dealer", "the dealer's id (staff number or badge)"),),
    ),
    "dealer.sign-out": spec(
        "sign the dealer on duty out: dealer sign-out [DEALER]",
        "dealer",
        "supervisor",
        words=("dealer", "sign-out"),
        args=(
            Arg("dealer", "the dealer on duty (checked when given)", required=False),
            replace(REASON, required=False),
        ),
    ),
    "table.open": spec("open the table (journaled)", "supervisor", words=("table", "open")),
    "table.close": spec(
        "close the table; signs the dealer on duty out",
        "supervisor",
        words=("table", "close"),
        args=(replace(REASON, required=False),),
    ),
    "table.limits": spec(
        "set the table's limits: table limits --min N --max N [--spot SPOT=MIN-MAX]",
        "supervisor",
        words=("table", "limits"),
        args=(
            Arg("min", "the table minimum", required=False, option=True, type=int),
            Arg("max", "the table maximum", required=False, option=True, type=int),
            Arg("spot", "a spot's limits, SPOT=MIN-MAX", required=False, option=True, kind="list"),
        ),
    ),
}


class Table:
    """One table: the shared machinery around one game."""

    commands: ClassVar[dict[str, CommandSpec]] = {
        **SESSION_COMMANDS,
        "alarm.clear": spec(
            "clear a latched alarm: alarm clear ID --reason",
            "supervisor",
            "technician",
            more=(Arg("id", "the alarm, or all"), REASON),
        ),
        "device.command": spec(
            "send a command to a device (journaled first)",
            "technician",
            more=(Arg("device", "the device"), Arg("command", "the text sent")),
        ),
        "wheel.reconcile": spec(
            "journal a reconciliation of a wheel's log (tablectl wheel reconcile)",
            "technician",
            "supervisor",
            more=(
                Arg("device", "the wheel"),
                Arg("pages", "the log pages read", kind="list"),
                Arg("logged", "numbers in the wheel's log"),
                Arg("compared", "numbers compared"),
                Arg("mismatches", "where they differ", kind="objects"),
            ),
        ),
        "result.correct": spec(
            "correct a published result from corrected inputs; the game re-derives it",
            "supervisor",
            words=("correct",),
            args=(
                Arg("seq", "the seq of the published result it corrects", type=int),
                Arg(
                    "inputs",
                    "the corrected inputs, NAME=VALUE (player=9S,KD banker=8H,2C; "
                    "number=17; faces=3,5,6; tiles=1p,wd,... dice=2,5,6)",
                    kind="list",
                ),
                Arg("reason", "why, for the record (journaled)", option=True),
                Arg("ref", "an incident number or a video time code", option=True),
            ),
        ),
    }
    #: periodic status answers (a shuffler's poll) are health, not a session worth journaling
    QUIET_REPLIES: ClassVar[frozenset[str]] = frozenset({"status", "*X"})

    def __init__(self, game: Game, devices: list[str]) -> None:
        self.game = game
        self.device_names = devices
        self.all_commands = {**self.commands, **game.commands}
        d = game.describe
        self._results = d.results
        #: what ends the corrections' window: a void, a fresh board (a new shoe) or the game's
        self._closers: frozenset[str] = getattr(game, "correction_closers", d.voids | d.fresh_board)
        #: a game that keeps a card secret names what may be it (``daemon/secrecy.py``)
        self._sealer: Callable[[Any, Input | None, Any], Any] | None = getattr(
            game, "sealed_words", None
        )
        #: results that name the dealer on duty (their Struct has ``dealer_on_duty``)
        self._stamped = frozenset(
            x
            for x in getattr(game.describe, "results", ())
            if "dealer_on_duty" in getattr(DATA.get(x), "__struct_fields__", ())
        )

    @property
    def state_version(self) -> str:
        return f"{self.game.name}:{getattr(self.game, 'STATE_VERSION', 1)}"

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
        in_play = getattr(self.game, "secret_in_play", None)
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
            getattr(self.game, "salt_key", b""),
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
            if isinstance(r, BadgeRead):  # a dealer's badge: every game's (daemon/sessions.py)
                sessions.badge(t, inp.device, r.code, d, raise_or_repeat)
                return d
            if isinstance(r, DeviceReply):
                # A device's answer is the same for every game: journaled so a technician's
                # session (versions, self-tests, settings) is on the record and replays.
                if r.command not in self.QUIET_REPLIES:
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
                dev, text = str(inp.args.get("device", "")), str(inp.args.get("command", ""))
                if dev not in t.devices:
                    d.refused = f"no device {dev!r} (devices: {', '.join(t.devices) or 'none'})"
                elif not text:
                    d.refused = "device.command needs a command"
                elif t.devices[dev] != "ok":
                    d.refused = f"device {dev} is {t.devices[dev]}: the command would not reach it"
                else:
                    d.add("device.command", device=dev, command=text, by=inp.actor)
                if d.refused is not None:
                    d.drafts.clear()
                return d
            if inp.name == "wheel.reconcile":
                _reconciled(t, inp, d)
                if d.refused is not None:
                    d.drafts.clear()
                return d
            if inp.name == "result.correct":
                corrections.decide(t, inp, d, self.game)
                if d.refused is not None:
                    d.drafts.clear()
                return d
            if inp.name == "alarm.clear":
                self._clear_alarm(t, inp, d)
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
        secret = getattr(self.game, "secret_in_play", None)
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
        hook = getattr(self.game, "on_line_noise", None)
        if hook is not None:
            hook(d.state(), d, device)

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
        ``config``: the audited config (``daemon/config_audit.py``); what changed since
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
        hook = getattr(self.game, "on_restart", None)
        if hook is not None and crashed:
            hook(d.state(), d)
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

    def _clear_alarm(self, t: TableState, c: Command, d: Decision) -> None:
        alarm_id = str(c.args.get("id", ""))
        if alarm_id == "all" and not t.alarms:
            d.reply["note"] = "no alarms"  # nothing to clear is not a refusal, nor an event
            return
        if alarm_id == "all":
            ids = list(t.alarms)
        elif alarm_id in t.alarms:
            ids = [alarm_id]
        else:
            active = ", ".join(t.alarms) or "none"
            d.refused = f"no active alarm {alarm_id!r} (active: {active})"
            return
        # An alarm the game is still waiting on (a paused hand) is settled by the game's own
        # command, not by clearing it: otherwise the table stays paused with no alarm shown.
        held = getattr(self.game, "held_alarm", lambda g: None)(t.game)
        if held is not None and held in ids:
            if alarm_id == "all":
                ids.remove(held)
            else:
                # the game says how its pause ends (a card game's default below)
                how = getattr(
                    self.game,
                    "held_help",
                    "it clears when the card is entered (`tablectl card CODE`), accepted "
                    "(`tablectl card accept`), or the hand is voided (`tablectl void hand`)",
                )
                d.refused = f"alarm {held} holds the table paused: {how}"
                return
        for i in ids:
            d.add("alarm.cleared", id=i, by=c.actor, reason=str(c.args.get("reason", "")))

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
