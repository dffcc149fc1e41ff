"""Roulette's half of ``tablectl wheel reconcile``: the wheel's own log of results against
the journal's ``spin.result``s and ``spin.void``s (``RouletteGame.check_device_log``).

The wheel's log carries numbers only, no game counter, so the two sequences are aligned
(difflib's longest matching blocks, as ``diff`` does) and each difference is named with
the journal's game numbers around it. The wheel's entries older than the journal's first
result are not compared. tablectl reads the log pages through the driver
(``drivers.base.ResultLog``) and journals the report with :data:`COMMAND`
(``reconcile.py``: ``wheel.reconciled``), so anyone can redo the comparison from the journal.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from daemon.table.game import LogReport

#: the game's command that journals the report (``reconcile.py``)
COMMAND = "wheel.reconcile"


@dataclass(frozen=True, slots=True)
class Spin:
    """A spin as the journal has it: its seq, the wheel's game counter, the number or the void."""

    seq: int
    wheel_spin: int | None
    number: int | None  # None: voided
    reason: str = ""


def compare(wheel_newest_first: list[int], journal: list[Spin]) -> tuple[int, list[dict[str, Any]]]:
    """(entries compared, mismatches) between the wheel's log and the journal's spins."""
    results = [s for s in journal if s.number is not None]
    voids = [s for s in journal if s.number is None]
    wheel = wheel_newest_first[::-1]
    table = [s.number for s in results]
    m = difflib.SequenceMatcher(None, wheel, table, autojunk=False)
    out: list[dict[str, Any]] = []
    compared = 0
    ops = m.get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            compared += i2 - i1
            continue
        if n == 0 and op == "delete":
            continue  # the wheel's older entries, from before this journal
        before = results[j1 - 1] if j1 > 0 else None
        after = results[j2] if j2 < len(results) else None
        if op == "replace" and i2 - i1 == j2 - j1:
            for w, s in zip(wheel[i1:i2], results[j1:j2], strict=True):
                compared += 1
                out.append(
                    {
                        "kind": "different-number",
                        "wheel_spin": s.wheel_spin,
                        "wheel_number": w,
                        "table_number": s.number,
                        "seq": s.seq,
                    }
                )
            continue
        for w in wheel[i1:i2]:
            void = _void_between(voids, before, after)
            compared += 1
            out.append(
                {
                    "kind": "voided-by-table" if void is not None else "missed-by-table",
                    "wheel_spin": void.wheel_spin if void is not None else None,
                    "wheel_number": w,
                    "table_number": None,
                    "seq": void.seq if void is not None else None,
                    "after_wheel_spin": before.wheel_spin if before is not None else None,
                    **({"reason": void.reason} if void is not None else {}),
                }
            )
            if void is not None:
                voids.remove(void)
        for s in results[j1:j2]:
            compared += 1
            out.append(
                {
                    "kind": "not-in-wheel-log",
                    "wheel_spin": s.wheel_spin,
                    "wheel_number": None,
                    "table_number": s.number,
                    "seq": s.seq,
                }
            )
    return compared, out


def _void_between(voids: list[Spin], before: Spin | None, after: Spin | None) -> Spin | None:
    lo = before.seq if before is not None else 0
    hi = after.seq if after is not None else 1 << 62
    return next((v for v in voids if lo < v.seq < hi), None)


def describe(m: dict[str, Any]) -> str:
    g = m.get("wheel_spin")
    if m["kind"] == "different-number":
        return f"game {g}: the wheel logged {m['wheel_number']}, the table settled {m['table_number']} (seq {m['seq']})"
    if m["kind"] == "voided-by-table":
        return f"game {g}: the wheel logged {m['wheel_number']}, the table voided the spin ({m['reason']}, seq {m['seq']})"
    if m["kind"] == "missed-by-table":
        return f"after game {m['after_wheel_spin']}: the wheel logged {m['wheel_number']}, the table has no spin for it"
    return f"game {g}: the table settled {m['table_number']} (seq {m['seq']}), the wheel's log does not have it"


def journal_spins(events: Iterable[Any], device: str) -> list[Spin]:
    """The journal's spins of ``device``, oldest first, from its events (oldest first)."""
    out: list[Spin] = []
    for ev in events:
        if ev.type in ("spin.result", "spin.void") and ev.data.get("device", device) == device:
            number = ev.data["number"] if ev.type == "spin.result" else None
            out.append(Spin(ev.seq, ev.data.get("wheel_spin"), number, ev.data.get("reason", "")))
    return out


def check(logged: list[int], events: Iterable[Any], device: str) -> LogReport:
    """The wheel's log (newest first) against the journal's spins of ``device``."""
    spins = journal_spins(events, device)
    compared, mismatches = compare(logged, spins)
    return LogReport(
        journal=f"{len(spins)} spins",
        compared=compared,
        mismatches=mismatches,
        lines=[describe(m) for m in mismatches],
        command=COMMAND,
    )
