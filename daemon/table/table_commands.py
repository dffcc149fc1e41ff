"""The commands every table takes, whatever its game, and how the table decides them.

A dealer's and the table's sessions (``daemon/table/sessions.py``), clearing a latched alarm, a
technician's command to a device, a supervisor's correction (``daemon/table/corrections.py``).
A game's own commands are its ``commands``; the table refuses any other, naming those.
"""

from __future__ import annotations

from dataclasses import replace

from daemon.table.command_spec import REASON, Arg, CommandSpec, spec
from daemon.table.decision import Decision, TableState
from daemon.table.inputs import Command

#: a dealer's and the table's sessions, every game's (``daemon/table/sessions.py``)
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

#: the table's own commands beside the sessions'
COMMANDS: dict[str, CommandSpec] = {
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


def device_command(t: TableState, c: Command, d: Decision) -> None:
    """A technician's text for a device, journaled before it is sent (``device.command``)."""
    dev, text = str(c.args.get("device", "")), str(c.args.get("command", ""))
    if dev not in t.devices:
        d.refused = f"no device {dev!r} (devices: {', '.join(t.devices) or 'none'})"
    elif not text:
        d.refused = "device.command needs a command"
    elif t.devices[dev] != "ok":
        d.refused = f"device {dev} is {t.devices[dev]}: the command would not reach it"
    else:
        d.add("device.command", device=dev, command=text, by=c.actor)


def clear_alarm(t: TableState, c: Command, d: Decision, held: str | None, how: str) -> None:
    """``alarm clear ID|all``: every alarm named, except one the game still waits on
    (``held``: a paused hand), which its own command settles (``how`` says which)."""
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
    if held is not None and held in ids:
        if alarm_id == "all":
            ids.remove(held)
        else:
            d.refused = f"alarm {held} holds the table paused: {how}"
            return
    for i in ids:
        d.add("alarm.cleared", id=i, by=c.actor, reason=str(c.args.get("reason", "")))
