"""``tablectl wheel reconcile``: the wheel's own log of results against the journal's.

The SlingShot 2 keeps every winning number in checksummed log pages (``*s r``,
newest first, 256 a page, idle only [dev]); the journal holds every
``spin.result`` with the wheel's game counter (``wheel_spin``). Reconciling at
table close (or between sessions, with the wheel idle) finds what neither side
shows alone: a number the wheel recorded that the table voided or never saw, a
result the table settled that the wheel has no record of, a different number.

The pages carry numbers only, no game counter, so the two sequences are aligned
(difflib's longest matching blocks, as ``diff`` does) and each difference is
named with the journal's game numbers around it. The wheel's entries older than
the journal's first result are not compared. The pages come back through the
table as journaled ``device.reply`` events, and the report is journaled as
``wheel.reconciled`` (with a ``wheel-log-mismatch`` alarm when anything differs),
so anyone can redo the comparison from the journal.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from typing import Any

from drivers.cammegh import LOG_PAGE_BYTES, decode_log_page

#: the journal events a comparison reads back at most (a night's spins and more)
HISTORY = 50_000


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


def journal_spins(follower: Any, head: int, device: str) -> list[Spin]:
    """The journal's spins of ``device``, oldest first, from the last :data:`HISTORY` events."""
    follower.rewind(max(0, head - HISTORY))
    out: list[Spin] = []
    for ev in follower.events(timeout=2.0):
        if ev.type in ("spin.result", "spin.void") and ev.data.get("device", device) == device:
            number = ev.data["number"] if ev.type == "spin.result" else None
            out.append(Spin(ev.seq, ev.data.get("wheel_spin"), number, ev.data.get("reason", "")))
        if ev.seq >= head:
            break
    return out


def run(a: argparse.Namespace) -> int:
    from daemon import ctl

    pages = [int(p) for p in (a.args or ["0"])]
    s = ctl.settings(a)
    f = ctl.follower(a, s)
    try:
        hb = next((x for x in f.events(timeout=3.0, heartbeats=True) if isinstance(x, dict)), None)
        if hb is None:
            print(f"no heartbeat from {s.config.bus.publish}: is tabled running?", file=sys.stderr)
            return ctl.EXIT_UNREACHABLE
        start = None
        for p in pages:
            rc, res = ctl.call(a, "device.command", device=a.device, command=f"*s r {p}")
            if rc:
                return int(rc)
            start = res["last_seq"] if start is None else start
        assert start is not None
        f.rewind(start - 1)
        texts: dict[int, str] = {}
        for ev in f.events(timeout=a.wait or 10.0):
            if ev.type != "device.reply" or ev.data.get("device") != a.device:
                continue
            text = str(ev.data["text"])
            if "BUSY" in text:
                print(
                    "the wheel is busy: it gives its log pages only while idle (state 6); "
                    "reconcile at table close",
                    file=sys.stderr,
                )
                return ctl.EXIT_ATTENTION
            if str(ev.data["command"]).startswith("*s") and len(text) == LOG_PAGE_BYTES:
                texts[len(texts)] = text
                if len(texts) == len(pages):
                    break
        if len(texts) < len(pages):
            print(f"the wheel sent {len(texts)} of {len(pages)} log pages", file=sys.stderr)
            return ctl.EXIT_ATTENTION
        wheel = [n for i in range(len(pages)) for n in decode_log_page(texts[i]) if n is not None]
        spins = journal_spins(f, start, a.device)
    finally:
        f.close()
    compared, mismatches = compare(wheel, spins)
    rc, res = ctl.call(
        a,
        "wheel.reconcile",
        device=a.device,
        pages=pages,
        logged=len(wheel),
        compared=compared,
        mismatches=mismatches,
    )
    if rc:
        return int(rc)
    if a.json:
        ctl.print_json({"compared": compared, "mismatches": mismatches, **res})
    else:
        print(
            f"{len(wheel)} results in the wheel's log, {len(spins)} spins in the journal, "
            f"{compared} compared"
        )
        for m in mismatches:
            print("  " + describe(m))
        print(
            f"{len(mismatches)} mismatch(es); journaled as wheel.reconciled (seq {res['last_seq']})"
            if mismatches
            else f"no mismatch; journaled as wheel.reconciled (seq {res['last_seq']})"
        )
    return ctl.EXIT_ATTENTION if mismatches else ctl.EXIT_OK
