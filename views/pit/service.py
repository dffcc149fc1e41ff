"""The pit view's web service: the floor from JetStream, sessions, CSRF, acknowledgements.

The floor's state is rebuilt from the stream at every start (the durable consumer is
deleted and made again, reading from the first message), so the pit keeps no state of
its own except the acknowledgements, which live in a JetStream key-value bucket
(:mod:`views.pit.acks`). Sessions are in memory: a restart asks people to log in again.

Every POST carries the session's CSRF token (the login form a token of its own, bound to
a cookie); the session cookie is HttpOnly and SameSite=Strict. A viewer sees everything
and acknowledges nothing; a stale, unknown or repeated acknowledgement changes nothing
and says why.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import secrets
import threading
import time
from datetime import UTC, datetime
from html import escape
from typing import Any

import nats
from aiohttp import web
from tabled_client.floor import FloorFollower

from views.pit.acks import AckStore
from views.pit.floor import FloorState, pace
from views.pit.pages import (
    ack_form,
    alarm_rows,
    device_rows,
    login_form,
    pace_table,
    page,
    recent_rows,
    tile,
    wheel_page,
)
from views.pit.users import Tries, User, check_password
from views.pit.wheel import wheel_stats

log = logging.getLogger("tabled-pit")

#: seconds from the start of a stop (SIGTERM) to the end of the process, whatever hangs:
#: nats-py's close can outwait a cancellation on a busy or hung server (make floor saw the
#: pit still running 15 s after SIGTERM). The pit keeps nothing of its own but the
#: acknowledgements, each stored in JetStream before it is answered: leaving loses nothing.
STOP_LIMIT = 8.0


def _hard_exit() -> None:
    os.write(2, b"tabled-pit: the stop took too long: exiting\n")
    os._exit(1)


COOKIE, PRE = "pit_session", "pit_login"


class Pit:
    def __init__(
        self,
        servers: list[str],
        users: dict[str, User],
        *,
        stream: str = "TABLES",
        durable: str = "pit",
        bucket: str = "PIT_ACKS",
        user_header: str | None = None,
    ) -> None:
        self.servers, self.users, self.stream, self.durable = servers, users, stream, durable
        #: a trusted reverse proxy's header naming the logged-in user (docs/views.md)
        self.user_header = user_header
        self._secret = secrets.token_bytes(32)
        self.floor = FloorState()
        self.tries = Tries()
        self.sessions: dict[str, tuple[User, str]] = {}  # token → (user, csrf)
        self.bucket = bucket
        self.acks: AckStore | None = None
        self.nc: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.nc = await nats.connect(self.servers)
        js = self.nc.jetstream()
        self.acks = AckStore(js, self.bucket)
        await self.acks.open()
        self._task = asyncio.create_task(self.follow())

    async def follow(self) -> None:
        js = self.nc.jetstream()
        while True:
            try:
                try:
                    await js.delete_consumer(self.stream, self.durable)
                except Exception:  # not there yet: nothing to delete
                    pass
                self.floor = FloorState()
                async with FloorFollower(
                    self.servers, durable=self.durable, stream=self.stream
                ) as f:
                    n = 0
                    async for fe in f.events():
                        self.floor.apply(fe.table, fe.journal_id, json.loads(fe.raw))
                        n += 1
                        if n % 200 == 0:
                            # a backlog is folded without waiting on the socket: let the
                            # loop answer pages and signals (SIGTERM) between batches
                            await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # no stream yet, NATS restarting: start over in a second
                log.warning("following the floor: %s: %s", type(e).__name__, e)
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        """Stop following and disconnect, bounded: a NATS that does not answer does not hold
        the process (systemd's stop, a test's SIGTERM) past a few seconds."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task], timeout=3.0)
        if self.nc is not None:
            try:
                await asyncio.wait_for(self.nc.close(), 2.0)
            except TimeoutError:
                log.warning("NATS did not close in 2 s: leaving it")

    # -- sessions ---------------------------------------------------------------------

    def session(self, request: web.Request) -> tuple[User, str] | None:
        if self.user_header is not None and self.user_header in request.headers:
            # the proxy authenticated this user; the role is the users file's. The CSRF
            # token is the user's own, keyed by this process's secret
            user = self.users.get(request.headers[self.user_header])
            if user is None:
                return None
            mac = hmac.new(self._secret, user.name.encode(), "sha256").hexdigest()
            return user, mac
        return self.sessions.get(request.cookies.get(COOKIE, ""))

    def _html(
        self,
        title: str,
        body: str,
        request: web.Request,
        *,
        status: int = 200,
        refresh: float = 0,
    ) -> web.Response:
        s = self.session(request)
        text = page(title, body, s[0] if s else None, s[1] if s else "", refresh=refresh)
        return web.Response(
            text=text,
            content_type="text/html",
            status=status,
            headers={
                "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'"
            },
        )

    def _login_page(self, request: web.Request, error: str = "", status: int = 200) -> web.Response:
        pre = request.cookies.get(PRE) or secrets.token_urlsafe(24)
        resp = self._html("log in", login_form(pre, error), request, status=status)
        resp.set_cookie(PRE, pre, httponly=True, samesite="Strict")
        return resp

    async def login_get(self, request: web.Request) -> web.Response:
        return self._login_page(request)

    async def login_post(self, request: web.Request) -> web.Response:
        form = await request.post()
        pre = request.cookies.get(PRE, "")
        if not pre or not hmac.compare_digest(pre, str(form.get("csrf", ""))):
            return self._login_page(
                request, "the form is stale or came from another site: log in again", 403
            )
        name, pw = str(form.get("name", "")), str(form.get("password", ""))
        now = time.monotonic()
        wait = self.tries.wait(name, now)
        if wait > 0:
            return self._login_page(
                request, f"too many wrong passwords for {name}: try again in {wait:.0f} s", 429
            )
        user = self.users.get(name)
        if user is None or not check_password(pw, user.password):
            self.tries.fail(name, now)
            return self._login_page(request, "wrong name or password", 401)
        self.tries.ok(name)
        token = secrets.token_urlsafe(32)
        self.sessions[token] = (user, secrets.token_urlsafe(24))
        resp = web.HTTPSeeOther("/")
        resp.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
        resp.del_cookie(PRE)
        raise resp

    async def logout(self, request: web.Request) -> web.Response:
        s = self.session(request)
        form = await request.post()
        if s is not None and hmac.compare_digest(s[1], str(form.get("csrf", ""))):
            self.sessions.pop(request.cookies.get(COOKIE, ""), None)
        raise web.HTTPSeeOther("/login")

    def _need(self, request: web.Request) -> tuple[User, str]:
        s = self.session(request)
        if s is None and self.user_header is not None and self.user_header in request.headers:
            name = escape(request.headers[self.user_header])
            raise web.HTTPForbidden(text=f"the proxy's user {name} is not in the users file")
        if s is None:
            raise web.HTTPSeeOther("/login")
        return s

    # -- pages ------------------------------------------------------------------------

    async def floor_page(self, request: web.Request) -> web.Response:
        self._need(request)
        tiles = "".join(
            tile(s, self.floor.last_time.get(t, "")) for t, s in sorted(self.floor.tables.items())
        )
        body = f'<p class="dim">{len(self.floor.tables)} tables, {self.floor.events} events</p><div class="tiles" id="tiles">{tiles}</div>'
        return self._html("floor", body, request, refresh=2)

    async def table_page(self, request: web.Request) -> web.Response:
        self._need(request)
        t = request.match_info["table"]
        s = self.floor.tables.get(t)
        if s is None:
            return self._html(
                "no such table",
                f'<p class="error" id="error">no table {escape(repr(t))} on this floor</p>',
                request,
                status=404,
            )
        snap = s.snapshot()
        assert self.acks is not None
        rows = alarm_rows([a for a in self.floor.alarms() if a["table"] == t], self.acks, False)
        results = "".join(f"<li>{escape(json.dumps(r)[:200])}</li>" for r in snap["results"])
        body = (
            tile(s, self.floor.last_time.get(t, ""))
            + f"<h2>Alarms</h2>{rows}"
            + device_rows(self.floor.devices.get(t, {}))
            + recent_rows(list(self.floor.recent.get(t, [])))
            + f"<h2>Last results</h2><ol id='results'>{results}</ol>"
        )
        return self._html(f"table {escape(t)}", body, request, refresh=2)

    async def healthz(self, request: web.Request) -> web.Response:
        """For a monitor (and bench/pit.py): how much of the floor it holds; no login, no detail."""
        body = {"tables": len(self.floor.tables), "events": self.floor.events}
        return web.json_response(body)

    async def pace_page(self, request: web.Request) -> web.Response:
        self._need(request)
        rows = [(t, pace(self.floor.rounds.get(t, []))) for t in sorted(self.floor.tables)]
        return self._html("pace", pace_table(rows), request, refresh=2)

    async def wheel(self, request: web.Request) -> web.Response:
        self._need(request)
        t = request.match_info["table"]
        if t not in self.floor.spins:
            why = f"no roulette table {escape(repr(t))} with spins on this floor"
            return self._html(
                "no such wheel", f'<p class="error" id="error">{why}</p>', request, status=404
            )
        raw = request.query.get("window", "500")
        if not raw.isdigit() or not 1 <= int(raw) <= 1_000_000:
            why = f"window {escape(repr(raw))}: a number of spins, 1 to 1000000"
            return self._html(
                "bad window", f'<p class="error" id="error">{why}</p>', request, status=400
            )
        st = wheel_stats(self.floor.spins[t], int(raw))
        return self._html(f"wheel of {t}", wheel_page(t, st), request)

    async def alarms_page(self, request: web.Request) -> web.Response:
        user, _ = self._need(request)
        assert self.acks is not None
        body = alarm_rows(self.floor.alarms(), self.acks, user.role == "pitboss")
        return self._html("alarms", body, request, refresh=1)

    async def ack_get(self, request: web.Request) -> web.Response:
        user, csrf = self._need(request)
        if user.role != "pitboss":
            return self._html(
                "refused",
                '<p class="error" id="error">a viewer cannot acknowledge alarms</p>',
                request,
                status=403,
            )
        a = self.floor.alarm(request.query.get("table", ""), request.query.get("alarm", ""))
        if a is None:
            return self._html(
                "no such alarm",
                '<p class="error" id="error">no active alarm by that table and id</p>',
                request,
                status=404,
            )
        return self._html("acknowledge", ack_form(a, csrf), request)

    async def ack_post(self, request: web.Request) -> web.Response:
        user, csrf = self._need(request)
        form = await request.post()

        def refused(status: int, why: str) -> web.Response:
            why = escape(why)
            return self._html(
                "not acknowledged", f'<p class="error" id="error">{why}</p>', request, status=status
            )

        if not hmac.compare_digest(csrf, str(form.get("csrf", ""))):
            return refused(
                403, "the form is stale or came from another site: nothing was acknowledged"
            )
        if user.role != "pitboss":
            return refused(403, "a viewer cannot acknowledge alarms")
        table, alarm = str(form.get("table", "")), str(form.get("alarm", ""))
        jid, note = str(form.get("journal_id", "")), str(form.get("note", "")).strip()
        if table not in self.floor.tables:
            return refused(404, f"no table {table!r} on this floor")
        a = self.floor.alarm(table, alarm)
        if a is None or a["journal_id"] != jid:
            return refused(
                409,
                f"alarm {alarm!r} of {table} is not active any more (cleared at the table): nothing was acknowledged",
            )
        if not note or len(note) > 500:
            return refused(400, "a note of 1 to 500 characters says what is being done")
        assert self.acks is not None
        prev = self.acks.get(table, jid, alarm)
        if prev is not None:
            return refused(409, f"already acknowledged by {prev['by']} at {prev['at']}")
        at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        await self.acks.put(
            table, jid, alarm, {"by": user.name, "at": at, "note": note, "kind": a.get("kind")}
        )
        raise web.HTTPSeeOther("/alarms")


def make_app(pit: Pit) -> web.Application:
    app = web.Application()
    r = app.router
    r.add_get("/login", pit.login_get)
    r.add_post("/login", pit.login_post)
    r.add_post("/logout", pit.logout)
    r.add_get("/", pit.floor_page)
    r.add_get("/table/{table}", pit.table_page)
    r.add_get("/alarms", pit.alarms_page)
    r.add_get("/pace", pit.pace_page)
    r.add_get("/healthz", pit.healthz)
    r.add_get("/wheel/{table}", pit.wheel)
    r.add_get("/alarms/ack", pit.ack_get)
    r.add_post("/alarms/ack", pit.ack_post)

    async def on_startup(app: web.Application) -> None:
        await pit.start()

    async def on_cleanup(app: web.Application) -> None:
        await pit.stop()

    async def on_shutdown(app: web.Application) -> None:
        t = threading.Timer(STOP_LIMIT, _hard_exit)  # armed as the stop begins
        t.daemon = True
        t.start()

    app.on_startup.append(on_startup)
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
    return app
