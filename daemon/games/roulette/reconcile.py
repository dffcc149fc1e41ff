"""``wheel.reconcile``: the report of ``tablectl wheel reconcile`` (the wheel's own log of
results against the journal's spins), journaled as ``wheel.reconciled``; a mismatch latches
a ``wheel-log-mismatch`` alarm. Roulette's own command: a table of another game has none.
"""

from __future__ import annotations

import msgspec

from daemon.table import Arg, Command, CommandSpec, Decision, TableState, raise_alarm, spec

#: sent by ``tablectl wheel reconcile`` (``daemon/tools/reconcile.py``, with ``log_check.py``),
#: which builds its arguments: not one of tablectl's game commands
COMMAND: dict[str, CommandSpec] = {
    "wheel.reconcile": spec(
        "journal a reconciliation of a wheel's log (tablectl wheel reconcile)",
        "technician",
        "supervisor",
        words=("wheel", "reconcile"),
        more=(
            Arg("device", "the wheel"),
            Arg("pages", "the log pages read", kind="list"),
            Arg("logged", "numbers in the wheel's log"),
            Arg("compared", "numbers compared"),
            Arg("mismatches", "where they differ", kind="objects"),
        ),
        tool=True,
    ),
}


def reconciled(t: TableState, c: Command, d: Decision) -> None:
    """``tablectl wheel reconcile``'s report, journaled; a mismatch latches an alarm [ours].

    tablectl compares the wheel's log pages (journaled as ``device.reply``) with the
    journal's spins (``log_check.py``), so the report can be redone from
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

