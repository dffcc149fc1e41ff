"""Alarms every game raises the same way: latched until cleared, one per cause.

``raise_alarm`` adds an ``alarm.raised`` draft; ``raise_or_repeat`` counts a recurring
cause on the alarm already active (``alarm.repeated``); ``device_fault`` latches one
``device-fault`` alarm per device and names it in every ``device.fault`` event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from daemon.table.decision import Alarm, Decision, TableState


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
