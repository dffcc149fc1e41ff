"""``tablectl wheel reconcile``: a device's own log of results against the journal's.

A wheel keeps every winning number in log pages its driver knows how to ask for and
decode (``Driver.result_log``: a SlingShot 2's ``*s r``, newest first, 256 a page, idle
only); the journal holds every result. Reconciling at table close (or between sessions,
with the device idle) finds what neither side shows alone: a number the device recorded
that the table voided or never saw, a result the table settled that the device has no
record of, a different number.

This is the plumbing's half: the pages are asked through the table (journaled as
``device.command``, their replies as ``device.reply``), decoded by the driver, and the
journal's events are read back from the bus; the table's game compares them
(``Game.check_device_log``) and names the command that journals its report (with an
alarm when anything differs), so anyone can redo the comparison from the journal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from drivers.base import Driver

#: the journal events a comparison reads back at most (a night's spins and more)
HISTORY = 50_000


def journal(follower: Any, head: int) -> Iterator[Any]:
    """The last :data:`HISTORY` events up to ``head``, oldest first."""
    follower.rewind(max(0, head - HISTORY))
    for ev in follower.events(timeout=2.0):
        yield ev
        if ev.seq >= head:
            return


def run(a: argparse.Namespace, driver: type[Driver]) -> int:
    from daemon import games
    from daemon.ctl import shared as ctl

    s = ctl.settings(a)
    log = driver.result_log
    game = games.find(s.config.table.game)
    check = None if game is None else game.check_device_log
    if log is None or check is None:
        why = (
            f"{a.device}'s driver ({driver.name}) reads no log of results"
            if log is None
            else f"a {s.config.table.game} table has no log of results to compare"
        )
        print(f"tablectl wheel reconcile: {why}", file=sys.stderr)
        return ctl.EXIT_USAGE
    pages = [int(p) for p in (a.args or ["0"])]
    f = ctl.follower(a, s)
    try:
        hb = next((x for x in f.events(timeout=3.0, heartbeats=True) if isinstance(x, dict)), None)
        if hb is None:
            print(f"no heartbeat from {s.config.bus.publish}: is tabled running?", file=sys.stderr)
            return ctl.EXIT_UNREACHABLE
        start = None
        for p in pages:
            rc, res = ctl.call(a, "device.command", device=a.device, command=log.page_command(p))
            if rc:
                return int(rc)
            start = res["last_seq"] if start is None else start
        assert start is not None
        f.rewind(start - 1)
        found: list[list[int]] = []
        for ev in f.events(timeout=a.wait or 10.0):
            if ev.type != "device.reply" or ev.data.get("device") != a.device:
                continue
            text = str(ev.data["text"])
            busy = log.busy(text)
            if busy is not None:
                print(busy, file=sys.stderr)
                return ctl.EXIT_ATTENTION
            page = log.page(str(ev.data["command"]), text)
            if page is not None:
                found.append(page)
                if len(found) == len(pages):
                    break
        if len(found) < len(pages):
            print(f"the wheel sent {len(found)} of {len(pages)} log pages", file=sys.stderr)
            return ctl.EXIT_ATTENTION
        logged = [n for page in found for n in page]
        report = check(logged, journal(f, start), a.device)
    finally:
        f.close()
    rc, res = ctl.call(
        a,
        report.command,
        device=a.device,
        pages=pages,
        logged=len(logged),
        compared=report.compared,
        mismatches=report.mismatches,
    )
    if rc:
        return int(rc)
    if a.json:
        ctl.print_json({"compared": report.compared, "mismatches": report.mismatches, **res})
    else:
        print(
            f"{len(logged)} results in the wheel's log, {report.journal} in the journal, "
            f"{report.compared} compared"
        )
        for line in report.lines:
            print("  " + line)
        n = len(report.mismatches)
        # the report's own event first (an alarm may follow it)
        journaled = f"journaled as {(res.get('events') or [report.command])[0]} (seq {res['last_seq']})"
        print(f"{n} mismatch(es); {journaled}" if n else f"no mismatch; {journaled}")
    return ctl.EXIT_ATTENTION if report.mismatches else ctl.EXIT_OK
