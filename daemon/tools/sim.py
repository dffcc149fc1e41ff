"""``tablectl sim --driver shoe-line``: a device simulator on a pty, to practise without hardware.

gpsfake's role for tabled: it prints the pty's path (or makes ``--link PATH`` point
at it), and ``tablectl probe``, ``ports`` or a table config (``port = "<path>"``)
can then open it like a real device. A shoe deals a shuffled 8-deck shoe card by
card at ``--pace`` seconds, over and over; a simulator that runs by itself (the
SlingShot 2 wheel) just runs. Ctrl-C or ``--seconds`` ends it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import Any


def run(a: argparse.Namespace) -> int:
    from drivers.base import DriverError, driver_class

    try:
        cls = driver_class(a.driver)
    except DriverError as e:
        print(f"tablectl sim: {e}", file=sys.stderr)
        return 2
    try:
        driver = cls(cls.Options())
    except (TypeError, ValueError) as e:  # an option with no default (the Mercury's level)
        print(
            f"tablectl sim: {a.driver} has options without a default ({e}); "
            'run its simulator inside the daemon with port = "sim" and [devices.options]',
            file=sys.stderr,
        )
        return 2
    if driver.transport != "serial":
        print(
            f"tablectl sim: {a.driver} is not a serial device ({driver.transport}); "
            'its simulator runs inside the daemon with port = "sim"',
            file=sys.stderr,
        )
        return 2
    try:
        sim = driver.simulator(_given(a.driver, {"seed": a.seed, "pace": a.pace}))
    except (NotImplementedError, ValueError, TypeError) as e:
        print(f"tablectl sim: {a.driver}: {e}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(sim, a))


def _given(driver: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The flags this simulator has: a shuffler takes a seed but no pace."""
    import msgspec

    from drivers.sim import options_type

    cls = options_type(driver)
    if cls is None:
        return flags
    keys = {f.encode_name for f in msgspec.structs.fields(cls)}
    return {k: v for k, v in flags.items() if k in keys}


async def _serve(sim: Any, a: argparse.Namespace) -> int:
    from drivers.sim.pty import PtyLink

    link = PtyLink(link=a.link)
    sim.attach(link)
    link.opened.set()  # no daemon to say when the port is open: bytes flow from the start
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before the path: who reads it may stop us
        loop.add_signal_handler(sig, stop.set)
    print(link.path, flush=True)
    print(f"# {a.driver} simulator on {link.slave_path}; Ctrl-C ends it", file=sys.stderr)
    tasks = [asyncio.create_task(sim.run())]
    if hasattr(sim, "free_run"):  # a shoe follows a table; alone it deals shoe after shoe
        tasks.append(asyncio.create_task(sim.free_run()))
    try:
        await asyncio.wait_for(stop.wait(), a.seconds)
    except TimeoutError:
        pass
    for t in tasks:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await t
    link.close()
    return 0
