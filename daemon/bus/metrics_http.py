"""The metrics endpoint's HTTP, served on the daemon's event loop with a fixed number of places.

prometheus_client's own server starts a thread per connection: 150 idle connections were
150 threads and 150 descriptors, without bound. Here the listening socket is read by the
loop and holds at most ``cap`` connections; at the cap the loop stops accepting (the
kernel's backlog holds a few more, then refuses), and each connection has ``timeout``
seconds for its whole request and answer, so an idle one frees its place; at most
``ACCEPT_RATE`` connections a second, and one rendering every ``RENDER_EVERY`` s, whatever
a client does, so the loop's share stays small. A scrape is one
``GET /metrics`` (or ``/``) answered with ``Connection: close``: what Prometheus sends.
The exposition is rendered on the loop, so it reads the daemon's state in one piece.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger("tabled")

MAX_REQUEST = 8192  # bytes of request line and headers
#: connections accepted a second; past it the endpoint stops accepting for the rest of the
#: second, so a churn of connections costs the loop this many requests a second at most
ACCEPT_RATE = 50
#: a scrape this soon after the last one gets the same bytes: a scrape flood renders (on the
#: loop, a few ms each) at most 1/RENDER_EVERY times a second
RENDER_EVERY = 0.2


class MetricsServer:
    """``render()``'s bytes at ``http://address:port/metrics``; see the module's docstring."""

    def __init__(
        self,
        render: Callable[[], bytes],
        content_type: str,
        *,
        cap: int = 8,
        timeout: float = 2.0,
    ) -> None:
        self.render = render
        self.content_type = content_type
        self.cap = cap
        self.timeout = timeout
        self.counters = {"accepted": 0, "scrapes": 0, "renders": 0, "refused": 0, "timeouts": 0}
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conns: dict[asyncio.Task[None], socket.socket] = {}
        self._accepting = False
        self._warned = float("-inf")
        self._window = 0.0  # when the current second of accepts began
        self._this_second = 0
        self._rendered: tuple[float, bytes] = (float("-inf"), b"")

    def start(self, address: str, port: int) -> int:
        """Listen (from the running loop); the port it listens on."""
        self._loop = asyncio.get_running_loop()
        family, kind, proto, _, addr = socket.getaddrinfo(
            address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            # a restart right after a stop binds again while the last scrape's TIME_WAIT lasts
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(self.cap)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._accept_again()
        return int(sock.getsockname()[1])

    def close(self) -> None:
        self._pause()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for task, conn in list(self._conns.items()):
            task.cancel()
            conn.close()
        self._conns.clear()

    @property
    def connections(self) -> int:
        return len(self._conns)

    def _accept_again(self) -> None:
        if self._sock is not None and self._loop is not None and not self._accepting:
            self._loop.add_reader(self._sock.fileno(), self._accept)
            self._accepting = True

    def _pause(self) -> None:
        if self._accepting and self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
        self._accepting = False

    def _accept(self) -> None:
        """Each waiting connection, up to the cap; at the cap, accept no more until one ends."""
        sock, loop = self._sock, self._loop
        assert sock is not None and loop is not None
        while len(self._conns) < self.cap:
            now = loop.time()
            if now - self._window >= 1.0:
                self._window, self._this_second = now, 0
            if self._this_second >= ACCEPT_RATE:
                self._pause()
                loop.call_at(self._window + 1.0, self._accept_again)
                self._warn("metrics connections too many a second: new ones wait", rate=ACCEPT_RATE)
                return
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and the like: wait a second rather than spin
                self.counters["refused"] += 1
                self._warn("metrics connection not accepted", error=e.strerror)
                self._pause()
                loop.call_later(1.0, self._accept_again)
                return
            self._this_second += 1
            self.counters["accepted"] += 1
            conn.setblocking(False)
            task = loop.create_task(self._serve(conn))
            self._conns[task] = conn
            task.add_done_callback(self._ended)
        self._pause()
        self._warn("metrics connections at the cap: new ones wait", cap=self.cap)

    def _render(self) -> bytes:
        at, body = self._rendered
        now = time.monotonic()
        if now - at >= RENDER_EVERY:
            body = self.render()
            self._rendered = (now, body)
            self.counters["renders"] += 1
        return body

    def _ended(self, task: asyncio.Task[None]) -> None:
        conn = self._conns.pop(task, None)
        if conn is not None:
            conn.close()
            self._accept_again()  # _accept checks the rate

    def _warn(self, what: str, **kw: object) -> None:
        now = time.monotonic()
        if now - self._warned >= 60.0:
            self._warned = now
            log.warning(what, **kw)

    async def _serve(self, conn: socket.socket) -> None:
        try:
            await asyncio.wait_for(self._exchange(conn), self.timeout)
        except TimeoutError:
            self.counters["timeouts"] += 1
        except OSError:
            pass  # the client went away
        except Exception:  # a bug here must not end the loop's other work
            log.exception("metrics request failed")

    async def _exchange(self, conn: socket.socket) -> None:
        loop = self._loop
        assert loop is not None
        buf = b""
        while b"\r\n\r\n" not in buf:
            if len(buf) > MAX_REQUEST:
                await self._answer(conn, 431, b"request too large\n")
                return
            chunk = await loop.sock_recv(conn, 4096)
            if not chunk:
                return  # left without asking
            buf += chunk
        method, _, rest = buf.partition(b" ")
        path = rest.partition(b" ")[0].partition(b"?")[0]
        if method not in (b"GET", b"HEAD"):
            await self._answer(conn, 405, b"only GET\n")
        elif path not in (b"/metrics", b"/"):
            await self._answer(conn, 404, b"not found: the metrics are at /metrics\n")
        else:
            self.counters["scrapes"] += 1
            body = self._render()
            await self._answer(conn, 200, body, self.content_type, head=method == b"HEAD")

    async def _answer(
        self,
        conn: socket.socket,
        status: int,
        body: bytes,
        content_type: str = "text/plain; charset=utf-8",
        *,
        head: bool = False,
    ) -> None:
        reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed"}.get(status, "Error")
        header = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        loop = self._loop
        assert loop is not None
        await loop.sock_sendall(conn, header if head else header + body)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
