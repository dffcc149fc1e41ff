"""Simulated devices on real ptys: the daemon opens the slave end through pyserial
exactly as it opens a USB-serial adapter; a simulator talks on the master end.

What a pty does and doesn't reproduce (measured on the CI kind of machine):

* Closing the master hangs up every slave fd at once, even while another
  slave fd is open: the daemon's ``os.read`` returns ``b''`` (poll says
  IN|ERR|HUP), its ``os.write`` fails with EIO, and ``/dev/pts/N`` disappears.
  That is what a USB-serial unplug looks like. The hangup also flushes the
  slave's input queue: bytes the daemon had not read yet are lost, so a test
  that wants them delivered waits for them *before* calling :meth:`hangup`.
* The kernel reuses the lowest free pts number at once, so a closed
  ``/dev/pts/3`` can come back as an unrelated pty. :meth:`hangup` removes
  the link (udev removes ``/dev/serial/by-id/…`` on unplug too) and
  :meth:`reopen` allocates the new pair before dropping the old one.
* Before pyserial configures the slave, the line discipline is cooked with
  ECHO, and pyserial's ``open()`` flushes the input queue: bytes a simulator
  writes before the daemon opened the port are echoed back to it and then
  lost. The slave is set raw here so nothing is echoed, but early bytes are
  still lost, so **a simulator must not talk before :attr:`PtyLink.opened`
  is set**. The owner sets it when the daemon reports the port open (the
  transport's ``on_connected``, in the same process); hangup clears it.
* Baud rate, parity, modem lines (ENOTTY), breaks received, FTDI latency:
  not emulated.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import tty
from pathlib import Path

__all__ = ["PtyLink"]

_READ_SIZE = 4096


class PtyLink:
    """The device end of a pty pair: a simulator reads commands from, and writes
    frames to, the master."""

    def __init__(self, *, link: Path | None = None) -> None:
        self.link = link
        #: set by the owner once the daemon has opened the port; the simulator
        #: waits for it before sending (early bytes are flushed by pyserial).
        self.opened = asyncio.Event()
        self._master = -1
        self._slave = -1
        self.slave_path = ""
        self._out = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._writing = False
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._connect(*self._new_pair())

    @property
    def path(self) -> str:
        """What the daemon opens: the link if there is one, else the slave's path."""
        return str(self.link) if self.link is not None else self.slave_path

    @property
    def plugged(self) -> bool:
        return self._master >= 0

    @staticmethod
    def _new_pair() -> tuple[int, int, str]:
        master, slave = os.openpty()  # glibc opens the slave O_NOCTTY
        os.set_blocking(master, False)
        # Raw, so nothing written before the daemon opens is echoed back.
        tty.setraw(slave)
        return master, slave, os.ttyname(slave)

    def _connect(self, master: int, slave: int, name: str) -> None:
        # The held slave fd keeps the master from reading EIO while the
        # daemon has the port closed (between reconnects); it never reads.
        self._master, self._slave, self.slave_path = master, slave, name
        if self.link is not None:
            self.link.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.link.with_name(f".{self.link.name}.{os.getpid()}.tmp")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(name)
            os.replace(tmp, self.link)  # atomic: the daemon never sees no link

    def write(self, data: bytes) -> None:
        """Send bytes to the daemon. Never blocks: what the pty can't take now is
        buffered and written when it can. Bytes written while unplugged are
        discarded, like a device talking into an unplugged cable."""
        if not self.plugged or not data:
            return
        if not self._out:
            try:
                n = os.write(self._master, data)
            except BlockingIOError:
                n = 0
            data = data[n:]
            if not data:
                return
        self._out += data
        if not self._writing:
            self._loop = asyncio.get_running_loop()
            self._loop.add_writer(self._master, self._on_writable)
            self._writing = True

    def _on_writable(self) -> None:
        try:
            n = os.write(self._master, bytes(self._out))
        except BlockingIOError:
            return
        except OSError:  # EIO: no slave left; nothing can be delivered
            n = len(self._out)
        del self._out[:n]
        if not self._out and self._loop is not None:
            self._loop.remove_writer(self._master)
            self._writing = False

    async def read(self) -> bytes:
        """The next chunk the daemon wrote. Raises EOFError once unplugged or closed."""
        while True:
            if not self.plugged:
                raise EOFError("pty link is unplugged")
            try:
                data = os.read(self._master, _READ_SIZE)
            except BlockingIOError:
                await self._wait_readable()
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:  # no slave open at all
                    raise EOFError("pty link has no slave open") from None
                raise
            if not data:
                raise EOFError("pty link closed")
            return data

    async def _wait_readable(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        master = self._master

        def ready() -> None:
            if not waiter.done():
                waiter.set_result(None)

        loop.add_reader(master, ready)
        try:
            await waiter
        finally:
            self._waiter = None
            if self._master == master:  # hangup() removed it already otherwise
                loop.remove_reader(master)

    def hangup(self) -> None:
        """Unplug: close the master. The daemon's fd reads b'' (EOF) from now on,
        and unread input in it is flushed, as on a real USB-serial unplug."""
        if not self.plugged:
            return
        master, slave = self._master, self._slave
        if self._loop is not None:
            if self._writing:
                self._loop.remove_writer(master)
            if self._waiter is not None:
                self._loop.remove_reader(master)
        self._writing = False
        self._out.clear()
        self._master = self._slave = -1
        os.close(master)
        os.close(slave)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)  # read() sees it is unplugged and raises EOFError
        self.opened.clear()
        if self.link is not None:
            with contextlib.suppress(OSError):
                if os.readlink(self.link) == self.slave_path:
                    self.link.unlink()

    def reopen(self) -> None:
        """Replug: a NEW pty pair behind the same link (re-enumeration at a new
        /dev/pts/N). Unplugs the old pair first if it is still plugged.

        The kernel hands out the lowest free pts number, which after a hangup
        is the old one; a second pair is taken then, so the number always
        changes, as ttyUSB0 → ttyUSB1 does when the old node was still held.
        """
        if self._closed:
            raise RuntimeError("PtyLink is closed")
        pair = self._new_pair()
        if pair[2] == self.slave_path:
            spare, pair = pair, self._new_pair()
            os.close(spare[0])
            os.close(spare[1])
        self.hangup()
        self._connect(*pair)

    def close(self) -> None:
        """Unplug for good and remove the link. Idempotent."""
        self.hangup()
        self._closed = True
