"""A small sd_notify client: tell systemd we are ready, alive, or stopping.

Why our own code and not a package: the notification protocol is tiny and
declared stable by systemd (https://systemd.io/PORTABILITY_AND_STABILITY/), the
available packages are either dormant or need libsystemd headers and a
compiler, and systemd itself publishes a self-contained reference client under
MIT-0 (``man/notify-selfcontained-example.py``) that this module follows in
spirit. The protocol: one datagram per notification, sent to the AF_UNIX
socket named in ``$NOTIFY_SOCKET``, holding newline-separated ``KEY=value``
assignments (``READY=1``, ``STATUS=…``, ``WATCHDOG=1``, ``STOPPING=1``).
Spec: https://www.freedesktop.org/software/systemd/man/latest/sd_notify.html

Two rules shape the code:

* The daemon must run the same without systemd (``make run``, tests, a
  technician's laptop). With no ``NOTIFY_SOCKET`` every call is a no-op that
  returns False, so callers never branch on "are we under systemd?".
* A notification is never worth crashing or stalling the table for. Sends are
  non-blocking; a failure is counted, remembered and returned as False, never
  raised. The watchdog will notice if pings stop getting through, which is the
  right place for that failure to surface.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

__all__ = ["Notifier", "watchdog_interval"]


def _socket_address(value: str | None) -> str | bytes | None:
    """Turn ``$NOTIFY_SOCKET`` into an address for ``sendto``, or None.

    systemd hands out either a filesystem path (``/run/systemd/notify``) or an
    abstract-namespace name written with a leading ``@``; the kernel spells the
    latter with a leading NUL byte. Other forms (``vsock:`` on newer systemd)
    are not supported here and count as "no notify socket": the unit file
    pins ``Type=notify`` on a host where the path form is what systemd uses.
    """
    if not value:
        return None
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return b"\0" + value[1:].encode()
    return None


def watchdog_interval(
    environ: Mapping[str, str] | None = None, pid: int | None = None
) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings, or None when no watchdog is asked for.

    systemd sets ``WATCHDOG_USEC`` from ``WatchdogSec=``; pinging at half that
    period (what ``sd_watchdog_enabled`` callers conventionally do) leaves room
    for one late ping. ``WATCHDOG_PID`` names the process the watchdog is meant
    for: environment variables leak into children, and a child (a helper, a
    test subprocess) must not believe it is the one being watched.
    """
    env = os.environ if environ is None else environ
    raw_usec = env.get("WATCHDOG_USEC")
    if not raw_usec:
        return None
    try:
        usec = int(raw_usec)
    except ValueError:
        return None
    if usec <= 0:
        return None
    raw_pid = env.get("WATCHDOG_PID")
    if raw_pid:
        try:
            target = int(raw_pid)
        except ValueError:
            return None
        if target != (os.getpid() if pid is None else pid):
            return None
    return usec / 2 / 1_000_000


def _clean(value: object) -> str:
    """Render one field value so it cannot inject another assignment.

    STATUS text often carries a device's error message; a newline in it would
    start a new ``KEY=value`` line (``READY=1`` out of a serial error, say).
    """
    return str(value).replace("\r", " ").replace("\n", " ")


class Notifier:
    """Sends sd_notify messages to the socket systemd gave us, if any.

    Build one with :meth:`from_env` at start-up and keep it for the life of the
    process. One unconnected datagram socket is reused; each send names the
    address again, so a systemd re-exec (which re-creates its socket) does not
    strand us on a dead connection.
    """

    def __init__(self, address: str | None, *, watchdog_seconds: float | None = None) -> None:
        """Create a notifier for ``address`` in ``$NOTIFY_SOCKET`` syntax.

        ``address=None`` (or an unsupported form) gives a disabled notifier:
        every call returns False and nothing is sent.
        """
        self._address = _socket_address(address)
        self._watchdog_seconds = watchdog_seconds if self._address is not None else None
        self._sock: socket.socket | None = None
        self.failures = 0
        """Number of notifications that could not be handed to the socket."""
        self.last_error: OSError | None = None
        """The most recent send error, for ``tablectl status`` and logs."""

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, pid: int | None = None
    ) -> Notifier:
        """Read ``NOTIFY_SOCKET`` and the watchdog variables once, at start-up."""
        env = os.environ if environ is None else environ
        return cls(env.get("NOTIFY_SOCKET"), watchdog_seconds=watchdog_interval(env, pid))

    @property
    def enabled(self) -> bool:
        """True when there is a socket to notify (i.e. we run under systemd)."""
        return self._address is not None

    def watchdog_interval(self) -> float | None:
        """Seconds between watchdog pings for this process, or None for none.

        None as well when notifications are disabled: pinging nobody is pointless.
        """
        return self._watchdog_seconds

    def notify(self, message: str | None = None, /, **fields: object) -> bool:
        """Send one notification; True if the datagram was handed to the socket.

        Either a raw message (``"READY=1\\nSTATUS=up"``, sent as is) or keyword
        fields (``notify(READY=1, STATUS="up")``), or both (the raw part first).
        """
        if self._address is None:
            return False
        parts = [message] if message else []
        parts.extend(f"{key}={_clean(value)}" for key, value in fields.items())
        if not parts:
            return False
        data = "\n".join(parts).encode()
        try:
            if self._sock is None:
                # Non-blocking: if systemd is slow to drain its queue we drop this
                # notification (counted) rather than stall the event loop.
                self._sock = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK
                )
            sent = self._sock.sendto(data, self._address)
        except OSError as exc:
            self.failures += 1
            self.last_error = exc
            return False
        if sent != len(data):  # datagrams are all or nothing; be strict anyway
            self.failures += 1
            return False
        return True

    def ready(self, status: str | None = None) -> bool:
        """``READY=1``: start-up finished (journal replayed, sockets bound).

        With ``Type=notify`` systemd holds dependent units and ``systemctl start``
        until this arrives, so send it only when the table can really take events.
        """
        if status is None:
            return self.notify(READY=1)
        return self.notify(READY=1, STATUS=status)

    def status(self, text: str) -> bool:
        """``STATUS=…``: one human line shown by ``systemctl status``."""
        return self.notify(STATUS=text)

    def watchdog(self) -> bool:
        """``WATCHDOG=1``: "still alive". Call it from the code that knows health.

        A ping from a bare timer only proves the timer runs; send it where the
        event loop and the device supervisors have just been seen working.
        """
        return self.notify(WATCHDOG=1)

    def stopping(self, status: str | None = None) -> bool:
        """``STOPPING=1``: shutdown began, so systemd shows "deactivating"."""
        if status is None:
            return self.notify(STOPPING=1)
        return self.notify(STOPPING=1, STATUS=status)

    def close(self) -> None:
        """Release the socket. Later calls re-open it, so closing is always safe."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Notifier:
        """Use as a context manager so the socket closes with the daemon."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the socket; exceptions propagate unchanged."""
        self.close()

    def __repr__(self) -> str:
        """Show where notifications go and how many failed, for logs."""
        return f"Notifier(address={self._address!r}, failures={self.failures})"
