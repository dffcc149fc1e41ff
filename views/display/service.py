"""The display's web service: one table's follower, its folded state, the page and its feed.

A :class:`~tabled_client.table.TableFollower` (live SUB, replay catch-up, chain check)
feeds :class:`~views.display.state.DisplayState`; every browser holds a server-sent-events
stream (``/events``) that gets the whole snapshot when anything changed. A snapshot, not
the events, because a browser that reconnects (the display restarted, the network came
back) then needs nothing but the next message, and the page keeps no state of its own.

Snapshots are built when a browser asks for one, at most once per change, so catching up a
long journal after a start costs the fold alone. When the table stops sending heartbeats
the page says so (``online`` false); the follower's SUB reconnects by itself and its
replay fills what was missed when the table comes back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from importlib import resources
from typing import Any

from aiohttp import web
from tabled_client.chain import ChainBroken
from tabled_client.table import Curve, TableFollower

from views.display.state import DisplayState, Settings

log = logging.getLogger("tabled-display")

#: the page and its two files, package data of views.display (no build step, nothing external)
STATIC = {
    "/": ("display.html", "text/html"),
    "/display.css": ("display.css", "text/css"),
    "/display.js": ("display.js", "text/javascript"),
}
#: seconds between keep-alive comments on an idle stream, and between liveness checks
KEEPALIVE = 15.0
CHECK_EVERY = 1.0


class Display:
    """One table's display: follows the table, keeps its state, tells the browsers."""

    def __init__(
        self,
        table: str,
        publish: str,
        replay: str,
        settings: Settings,
        *,
        curve: Curve | None = None,
        stale_after: float = 5.0,
    ) -> None:
        self.state = DisplayState(table, settings)
        self.follower = TableFollower(publish, replay, table=table, curve=curve)
        self.stale_after = stale_after
        self.version = 0
        self.error: str | None = None
        self._changed = asyncio.Event()
        self._online = False
        self._cached: tuple[int, bytes] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        #: set at shutdown: every stream ends, so the process stops at once
        self.closing = False

    # -- the table side ------------------------------------------------------------------

    def _bump(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self) -> None:
        """Fold every verified event; a new journal starts the display afresh."""
        try:
            async for got in self.follower.received():
                if got.journal_id != self.state.journal_id:
                    self.state.reset(got.journal_id)
                self.state.apply(json.loads(got.raw))
                self._bump()
        except ChainBroken as e:
            # never show what the chain does not vouch for: the page says why it stopped
            self.error = f"the table's hash chain is broken: {e}"
            log.error("%s", self.error)
            self._bump()

    async def watch(self) -> None:
        """Tell the browsers when the table's heartbeats stop or come back."""
        while True:
            online = self.follower.up(self.stale_after)
            if online != self._online:
                self._online = online
                self._bump()
            await asyncio.sleep(CHECK_EVERY)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self.follow()), asyncio.create_task(self.watch())]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.follower.close()

    # -- the browser side ----------------------------------------------------------------

    def snapshot(self) -> bytes:
        if self._cached is None or self._cached[0] != self.version:
            snap: dict[str, Any] = self.state.snapshot()
            snap |= {"online": self._online, "error": self.error, "now": time.time()}
            self._cached = (self.version, json.dumps(snap, separators=(",", ":")).encode())
        return self._cached[1]

    async def events(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        sent = -1
        try:
            await resp.write(b"retry: 1000\n\n")
            while not self.closing:
                if sent != self.version:
                    sent = self.version
                    await resp.write(b"data: " + self.snapshot() + b"\n\n")
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), KEEPALIVE)
                except TimeoutError:
                    await resp.write(b": keep-alive\n\n")
        except ConnectionResetError:
            pass  # the browser went away
        return resp

    async def state_json(self, request: web.Request) -> web.Response:
        return web.Response(body=self.snapshot(), content_type="application/json")


def static_handler(name: str, content_type: str) -> Any:
    body = resources.files("views.display").joinpath("static", name).read_bytes()

    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            body=body,
            content_type=content_type,
            charset="utf-8",
            headers={"Cache-Control": "no-cache", **SECURITY_HEADERS},
        )

    return handler


#: the page loads nothing from anywhere else, and no other site may frame it
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def make_app(display: Display) -> web.Application:
    app = web.Application()
    for path, (name, ctype) in STATIC.items():
        app.router.add_get(path, static_handler(name, ctype))
    app.router.add_get("/events", display.events)
    app.router.add_get("/state", display.state_json)

    async def no_icon(request: web.Request) -> web.Response:
        return web.Response(status=204)

    app.router.add_get("/favicon.ico", no_icon)

    async def on_startup(app: web.Application) -> None:
        display.start()

    async def on_shutdown(app: web.Application) -> None:
        display.closing = True
        display._bump()

    async def on_cleanup(app: web.Application) -> None:
        await display.stop()

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
    return app
