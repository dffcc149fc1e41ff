"""Sans-I/O framers every protocol of ``drivers/`` splits its input with.

A device's bytes arrive in any split (a read returns what the kernel had), so a
protocol never looks at reads: it feeds them to a framer and gets whole frames
back, the same frames whatever the split. Both framers bound their memory (a
flood, a wrong baud rate or a missing terminator costs one counted
:class:`~drivers.readings.Malformed`, never a card and never unbounded memory),
resync on their own, and never raise.

* :class:`LineFramer`: lines ended by CR, LF or CR LF (shoes, tiles, the GPIO
  panel's text, Cammegh wheels).
* :class:`StxFramer`: ``STX body ETX cc CR LF`` with ``cc`` the XOR of the body
  as two hex digits (the reference shuffler); a frame type can be *withheld*:
  counted and checksummed, its bytes never kept (a shuffler's deck order).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

from drivers.readings import Malformed

#: bytes of a too-long line kept on its Malformed reading (for the technician; bounded).
SHOWN_LINE: Final = 64


class LineFramer:
    """Splits a byte stream into lines ended by CR and/or LF, with a bound.

    A line longer than ``max_line`` is garbage (a flood, a wrong baud rate):
    it is reported once as too long and dropped up to its terminator, so
    a flood can never grow memory.
    """

    __slots__ = ("_buf", "_overflow", "_shown", "max_line")

    def __init__(self, max_line: int = 256) -> None:
        self.max_line = max_line
        # bytes of a too-long line kept on its Malformed: never more than the limit, so the
        # same bytes are shown whether the line came in one read or across several
        self._shown = min(SHOWN_LINE, max_line)
        self._buf = bytearray()
        self._overflow = False

    def feed(self, data: bytes) -> list[bytes | Malformed]:
        out: list[bytes | Malformed] = []
        buf = self._buf
        buf += data
        start = 0
        n = len(buf)
        while start < n:
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            end = lf if cr < 0 else cr if lf < 0 else min(cr, lf)
            line = bytes(buf[start:end])
            start = end + 1
            # CR LF is one terminator: swallow the LF that follows a CR.
            if buf[end] == 0x0D and start < n and buf[start] == 0x0A:
                start += 1
            if self._overflow:
                self._overflow = False
                continue
            if len(line) > self.max_line:
                # the same verdict whether the line came in one read or across several
                out.append(
                    Malformed(
                        frame=line[: self._shown], reason=f"line longer than {self.max_line} bytes"
                    )
                )
                continue
            if line:
                out.append(line)
        del buf[:start]
        if len(buf) > self.max_line:
            if not self._overflow:
                out.append(
                    Malformed(
                        frame=bytes(buf[: self._shown]),
                        reason=f"line longer than {self.max_line} bytes",
                    )
                )
            self._overflow = True
            buf.clear()
        return out

    def lines(self, data: bytes, out: list[Any]) -> Iterator[bytes]:
        """The lines ``data`` completes, in order; each Malformed goes into ``out`` in its place.

        What every line protocol's ``feed`` does first: its own readings, appended to
        ``out`` as it reads each line, keep the order of the wire.
        """
        for item in self.feed(data):
            if isinstance(item, Malformed):
                out.append(item)
            else:
                yield item

    def eof(self) -> list[Malformed]:
        rest = bytes(self._buf)
        self._buf.clear()
        overflow, self._overflow = self._overflow, False
        if rest and not overflow:
            return [Malformed(frame=rest, reason="frame cut short by end of link")]
        return []


STX: Final = 0x02
ETX: Final = 0x03
CR: Final = 0x0D
LF: Final = 0x0A
#: longest body between STX and ETX a framer keeps by default.
MAX_BODY: Final = 128
#: longest withheld body skipped by default before giving up on finding its ETX.
MAX_WITHHELD: Final = 4096
#: bytes of a bad frame kept on its Malformed reading (for the technician; bounded).
SHOWN: Final = 32
#: a run of bytes outside any frame is reported at least every this many bytes.
MAX_JUNK: Final = 256


def stx_checksum(body: bytes) -> int:
    """XOR of the bytes between STX and ETX (like NMEA's ``*hh``)."""
    x = 0
    for b in body:
        x ^= b
    return x


def encode_stx_frame(body: bytes) -> bytes:
    """A whole frame for ``body``: STX, body, ETX, the checksum as two hex digits, CR LF."""
    return b"\x02" + body + b"\x03" + b"%02X\r\n" % stx_checksum(body)


class Withheld(msgspec.Struct, frozen=True):
    """A frame dropped unread because of its type (never its content)."""

    kind: bytes


_IDLE, _BODY, _CHECK, _SKIP = range(4)


class StxFramer:
    """Bytes in any split → frame bodies with a good checksum, :class:`Withheld`
    markers, or :class:`Malformed`. Memory is bounded; an STX anywhere starts
    a new frame (resync); CR and LF between frames are ignored."""

    def __init__(
        self,
        *,
        max_body: int = MAX_BODY,
        withheld: frozenset[int] = frozenset(),
        max_withheld: int = MAX_WITHHELD,
    ) -> None:
        self.max_body = max_body
        #: frame types (first body byte) whose content is never kept, only counted
        self.withheld = withheld
        self.max_withheld = max_withheld
        self._state = _IDLE
        self._body = bytearray()
        self._kind: int | None = None  # the type letter of a withheld frame
        self._len = 0
        self._xor = 0
        self._check = bytearray()
        self._junk = bytearray()
        self._junk_len = 0

    def feed(self, data: bytes) -> list[bytes | Withheld | Malformed]:
        out: list[bytes | Withheld | Malformed] = []
        for b in data:
            state = self._state
            if b == STX:
                if state in (_BODY, _CHECK):
                    out.append(self._bad("frame cut short by a new STX"))
                self._flush_junk(out)
                self._start()
            elif state == _IDLE:
                if b in (CR, LF):
                    self._flush_junk(out)
                else:
                    self._junk_len += 1
                    if len(self._junk) < SHOWN:
                        self._junk.append(b)
                    if self._junk_len >= MAX_JUNK:
                        self._flush_junk(out)
            elif state == _BODY:
                self._body_byte(b, out)
            elif state == _CHECK:
                self._check.append(b)
                if len(self._check) == 2:
                    out.append(self._end())
            # _SKIP: drop everything up to the next STX
        return out

    def eof(self) -> list[Malformed]:
        out: list[bytes | Withheld | Malformed] = []
        if self._state in (_BODY, _CHECK):
            out.append(self._bad("frame cut short by end of link"))
        self._flush_junk(out)
        self._state = _IDLE
        return [m for m in out if isinstance(m, Malformed)]

    def _start(self) -> None:
        self._state = _BODY
        self._body.clear()
        self._check.clear()
        self._kind = None
        self._len = 0
        self._xor = 0

    def _body_byte(self, b: int, out: list[bytes | Withheld | Malformed]) -> None:
        if b == ETX:
            self._state = _CHECK
            return
        if self._len == 0 and b in self.withheld:
            self._kind = b
        self._len += 1
        self._xor ^= b
        if self._kind is not None:  # withheld: count and checksum only, keep nothing
            if self._len > self.max_withheld:
                out.append(self._bad(f"frame longer than {self.max_withheld} bytes"))
                self._state = _SKIP
            return
        if not 0x20 <= b <= 0x7E:
            self._body.append(b)
            out.append(self._bad(f"control or non-ASCII byte 0x{b:02X} in frame"))
            self._state = _SKIP
            return
        self._body.append(b)
        if self._len > self.max_body:
            out.append(self._bad(f"frame longer than {self.max_body} bytes"))
            self._state = _SKIP

    def _end(self) -> bytes | Withheld | Malformed:
        self._state = _IDLE
        text = bytes(self._check)
        if any(c not in b"0123456789ABCDEFabcdef" for c in text):
            return self._bad(f"checksum {text!r} is not two hex digits")
        got = int(text, 16)
        if got != self._xor:
            return self._bad(f"bad checksum: frame says {got:02X}, its bytes give {self._xor:02X}")
        if self._kind is not None:
            return Withheld(bytes([self._kind]))
        return bytes(self._body)

    def _bad(self, reason: str) -> Malformed:
        if self._kind is not None:  # never show a withheld frame's bytes
            return Malformed(frame=bytes([self._kind]), reason=f"{reason} (withheld frame)")
        return Malformed(frame=bytes(self._body[:SHOWN]), reason=reason)

    def _flush_junk(self, out: list[bytes | Withheld | Malformed]) -> None:
        if self._junk_len:
            out.append(
                Malformed(frame=bytes(self._junk), reason=f"{self._junk_len} bytes outside a frame")
            )
            self._junk.clear()
            self._junk_len = 0
