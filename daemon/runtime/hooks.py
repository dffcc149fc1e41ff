"""Alarm hooks: a site's command run on what a person must hear about, as NUT's NOTIFYCMD.

``[hooks] command`` (an argv list, no shell) runs once for each alarm raised or
cleared, device lost or back, and journal failing or recovered, with the event as
one JSON object on stdin and ``TABLED_TABLE`` / ``TABLED_EVENT`` in its
environment. The pipeline only puts the event in a bounded queue: one worker
task runs the hooks in order, each for at most ``timeout`` seconds (then it is
killed and the kill is logged), so a hung or slow hook never delays a card. A
full queue drops the newest and counts it; the journal still has every event.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import structlog

from daemon.pipeline.listeners import follows

log = structlog.get_logger("tabled")

#: committed event types that run the hook (device.connected only after a loss)
TYPES = frozenset({"alarm.raised", "alarm.cleared", "device.disconnected", "device.stale"})


class Hooks:
    def __init__(self, table: str, command: list[str], timeout: float, queue: int) -> None:
        self.table = table
        self.command = command
        self.timeout = timeout
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(queue)
        self._lost: set[str] = set()
        self.counters = {"run": 0, "failed": 0, "timed_out": 0, "dropped": 0}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._worker(), name="hooks")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # -- what runs a hook -------------------------------------------------------------------

    @follows(*TYPES, "device.connected")
    def on_events(self, events: Sequence[Any]) -> None:
        """A pipeline listener: never blocks, never raises."""
        for ev in events:
            if ev.type in TYPES:
                if ev.type.startswith("device."):
                    self._lost.add(str(ev.data.get("device")))
                self._put(_as_dict(ev))
            elif ev.type == "device.connected" and ev.data.get("device") in self._lost:
                self._lost.discard(ev.data.get("device"))
                self._put(_as_dict(ev))

    def on_journal(self, ok: bool, error: str | None) -> None:
        """Journal failing or working again: not an event in the journal while it fails."""
        self._put(
            {
                "table": self.table,
                "type": "journal.state",
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "data": {"ok": ok, "error": error},
            }
        )

    def _put(self, event: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.counters["dropped"] += 1
            log.warning("hook queue full: event not passed to the hook", type=event["type"])

    # -- running ----------------------------------------------------------------------------

    async def _worker(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._run(event)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # every failure is the hook's, logged; the worker goes on
                self.counters["failed"] += 1
                log.error("hook could not run", command=self.command[0], error=str(e))

    async def _run(self, event: dict[str, Any]) -> None:
        env = dict(os.environ, TABLED_TABLE=self.table, TABLED_EVENT=event["type"])
        proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self.counters["run"] += 1
        body = json.dumps(event, sort_keys=True).encode() + b"\n"
        try:
            _, err = await asyncio.wait_for(proc.communicate(body), self.timeout)
        except TimeoutError:
            self.counters["timed_out"] += 1
            proc.kill()
            await proc.wait()
            log.warning("hook timed out and was killed", seconds=self.timeout, type=event["type"])
            return
        if proc.returncode != 0:
            self.counters["failed"] += 1
            log.warning(
                "hook failed",
                type=event["type"],
                returncode=proc.returncode,
                stderr=err.decode(errors="replace")[-500:],
            )

    def status(self) -> dict[str, Any]:
        return {"command": self.command, "queued": self._queue.qsize(), **self.counters}


def _as_dict(ev: Any) -> dict[str, Any]:
    return {"table": ev.table, "seq": ev.seq, "type": ev.type, "time": ev.time, "data": ev.data}
