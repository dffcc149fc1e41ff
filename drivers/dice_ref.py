"""The reference dice shaker protocol (Sic Bo), and its driver ``dice-ref``.

Dice shakers publish no common protocol
(``docs/protocols/sources.md``), so this one is ours:
every fact is **[ours]** unless it names another source. Its frame is the
public Chinese dice box's (``Be-Devil/zj_doll``): ``0x7A``, length, command,
data, checksum = (length + command + data) mod 256, ``0x55``. The page for
technicians and integrators is ``docs/protocols/dice-ref.md``.

Wire: ``7A LEN CMD DATA[LEN] CHK 55``; ``LEN`` counts the data bytes only
(0–32), ``CMD`` is an ASCII capital letter. The host asks (shake, status,
version, self-test); the shaker answers and reports on its own: shaking,
the result with three faces, dice not flat (re-shake), faults.

A result frame is passed on as the faces it claims, whatever their number or
values (:class:`~drivers.dice_readings.DiceResult`): the table rejects a bad
claim with an alarm naming the faces. Only a frame that is not a frame (bad
checksum, bad trailer, wrong field count) is ``Malformed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, ClassVar, Final

import msgspec

from drivers.base import Driver, Protocol, SerialDefaults
from drivers.dice_readings import DiceNotFlat, DiceResult, DiceShaking, ShakerFault
from drivers.readings import DeviceReply, Malformed, Reading, Unknown

# --- framing ---------------------------------------------------------------------------------

SOF: Final = 0x7A  # zj_doll's start byte
EOF: Final = 0x55  # zj_doll's end byte
MAX_DATA: Final = 32
OVERHEAD: Final = 5  # SOF, LEN, CMD, CHK, EOF
#: bytes of junk or of a bad frame kept on its Malformed reading (bounded).
SHOWN: Final = 40
#: a run of bytes outside any frame is reported at least every this many bytes.
MAX_JUNK: Final = 256


def checksum(cmd: int, data: bytes) -> int:
    """(length + command + data bytes) mod 256, as the zj_doll dice box computes it."""
    return (len(data) + cmd + sum(data)) & 0xFF


def encode_frame(cmd: bytes | int, data: bytes = b"") -> bytes:
    """One whole frame, as both ends send it: ``encode_frame(b"R", bytes([3, 5, 6]))``."""
    c = cmd[0] if isinstance(cmd, bytes) else cmd
    if len(data) > MAX_DATA:
        raise ValueError(f"{len(data)} data bytes, at most {MAX_DATA}")
    return bytes([SOF, len(data), c, *data, checksum(c, data), EOF])


class Frame(msgspec.Struct, frozen=True):
    """A frame with a good checksum and trailer."""

    cmd: int
    data: bytes
    raw: bytes


class Framer:
    """Bytes in any split → :class:`Frame` or :class:`Malformed`; never raises.

    Resync: a candidate frame that fails (length too big, wrong trailer, bad
    checksum) gives up only its ``0x7A`` and the search goes on from the next
    byte, so a good frame right behind garbage or a damaged frame is still
    found. Bytes outside frames are reported as one ``Malformed`` per run; the
    bytes of a frame already reported as bad are not reported twice. Memory is
    bounded by one frame (37 bytes) plus :data:`SHOWN`.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._junk = bytearray()
        self._junk_len = 0
        self._quiet = 0  # bytes of an already reported bad frame still to pass silently

    def feed(self, data: bytes) -> list[Frame | Malformed]:
        out: list[Frame | Malformed] = []
        buf = self._buf
        buf += data
        while buf:
            i = buf.find(SOF)
            if i < 0:
                self._skip(len(buf), out)
                break
            if i:
                self._skip(i, out)
            if len(buf) < 2:
                break
            n = buf[1]
            if n > MAX_DATA:
                self._skip(1, out)
                continue
            size = n + OVERHEAD
            # A whole good frame inside this candidate's span means its start was noise:
            # the inner frame wins, whether or not the candidate is complete yet, so the
            # verdict is the same however the bytes were split (and a good frame behind
            # noise is not held back). A device's real data cannot hold one: faces are
            # 1–6 and texts are too short for a whole frame.
            j = self._later_frame(size)
            if j is not None:
                self._skip(j, out)
                continue
            if len(buf) < size:
                break
            if buf[size - 1] != EOF:
                self._skip(1, out)
                continue
            raw = bytes(buf[:size])
            cmd, body, chk = raw[2], raw[3 : 3 + n], raw[size - 2]
            self._flush(out)
            if chk != checksum(cmd, body):
                out.append(
                    Malformed(
                        frame=raw[:SHOWN],
                        reason=f"bad checksum: frame says {chk:02X}, its bytes give "
                        f"{checksum(cmd, body):02X}",
                    )
                )
                del buf[:1]
                self._quiet = size - 1
                continue
            out.append(Frame(cmd, body, raw))
            del buf[:size]
            self._quiet = 0
        if self._junk_len >= MAX_JUNK:
            self._flush(out)
        return out

    def eof(self) -> list[Malformed]:
        out: list[Frame | Malformed] = []
        if self._buf:
            rest = bytes(self._buf)
            self._buf.clear()
            if rest[0] == SOF:
                self._flush(out)
                out.append(Malformed(frame=rest[:SHOWN], reason="frame cut short by end of link"))
            else:
                self._junk_len += len(rest)
                self._junk += rest[: max(0, SHOWN - len(self._junk))]
        self._flush(out)
        self._quiet = 0
        return [m for m in out if isinstance(m, Malformed)]

    def _later_frame(self, span: int) -> int | None:
        """Where a complete, good frame ending within the first ``span`` bytes starts after byte 0."""
        buf = self._buf
        limit = min(span, len(buf))
        j = buf.find(SOF, 1)
        while 0 < j and j + 1 < limit:
            n = buf[j + 1]
            end = j + n + OVERHEAD
            if n <= MAX_DATA and end <= limit and buf[end - 1] == EOF:
                cmd, body = buf[j + 2], bytes(buf[j + 3 : j + 3 + n])
                if buf[end - 2] == checksum(cmd, body):
                    return j
            j = buf.find(SOF, j + 1)
        return None

    def _skip(self, n: int, out: list[Frame | Malformed]) -> None:
        """Drop ``n`` bytes from the buffer as junk (silently while inside a reported frame)."""
        quiet = min(n, self._quiet)
        self._quiet -= quiet
        if n > quiet:
            self._junk_len += n - quiet
            room = SHOWN - len(self._junk)
            if room > 0:
                self._junk += self._buf[quiet : quiet + min(room, n - quiet)]
        del self._buf[:n]
        if self._junk_len >= MAX_JUNK:
            self._flush(out)

    def _flush(self, out: list[Frame | Malformed]) -> None:
        if self._junk_len:
            out.append(
                Malformed(frame=bytes(self._junk), reason=f"{self._junk_len} bytes outside a frame")
            )
            self._junk.clear()
            self._junk_len = 0


# --- the frames ------------------------------------------------------------------------------

#: host → shaker commands [ours].
SHAKE: Final = encode_frame(b"S")
STATUS: Final = encode_frame(b"Q")
VERSION: Final = encode_frame(b"V")
SELF_TEST: Final = encode_frame(b"T")
COMMANDS: Final = {
    ord("S"): "shake",
    ord("Q"): "status",
    ord("V"): "version",
    ord("T"): "self-test",
}

#: ``N`` frame codes: why the dice must be re-shaken [ours; seed 002: 相叠 stacked, 斜靠不平 leaning].
NOT_FLAT: Final[dict[int, str]] = {1: "stacked", 2: "leaning", 3: "unreadable"}
#: shaker states in a ``Q`` reply [ours].
STATES: Final[dict[int, str]] = {0: "idle", 1: "shaking", 2: "reading", 3: "fault", 4: "lid-open"}
#: ``A`` frame status codes: the answer to a command [ours].
ACKS: Final[dict[int, str]] = {
    0: "accepted",
    1: "refused: busy",
    2: "refused: fault",
    3: "refused: lid open",
    4: "refused: unknown command",
}
#: fault codes of the reference protocol [ours].
FAULTS: Final[dict[int, str]] = {
    1: "shaker motor fault",
    2: "lid opened during a shake",
    3: "camera fault",
    4: "tray lighting fault",
    5: "fewer than three dice in the tray",
    6: "recognition timed out",
    7: "power supply fault",
    8: "firmware integrity check failed",
    9: "temperature out of range",
}


class _Bad(Exception):
    """A frame with the right shape but wrong fields; becomes Malformed."""


def _size(data: bytes, lo: int, hi: int | None = None) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(data) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise _Bad(f"{len(data)} data bytes, expected {want}")


def _fault_text(code: int) -> str:
    return FAULTS.get(code, "unknown fault")


def _ack(f: Frame) -> Reading:
    _size(f.data, 2)
    cmd = COMMANDS.get(f.data[0], f"?{chr(f.data[0]) if 0x20 < f.data[0] < 0x7F else f.data[0]}")
    return DeviceReply(
        frame=f.raw, command=cmd, text=ACKS.get(f.data[1], f"refused: code {f.data[1]}")
    )


def _shaking(f: Frame) -> Reading:
    _size(f.data, 0)
    return DiceShaking(frame=f.raw)


def _result(f: Frame) -> Reading:
    # Any number of faces, any values: a claim the table judges (and alarms on) itself.
    return DiceResult(frame=f.raw, faces=tuple(f.data))


def _not_flat(f: Frame) -> Reading:
    _size(f.data, 1)
    code = f.data[0]
    return DiceNotFlat(frame=f.raw, reason=NOT_FLAT.get(code, "unknown"), code=code)


def _fault(f: Frame) -> Reading:
    _size(f.data, 1)
    return ShakerFault(frame=f.raw, code=f.data[0], meaning=_fault_text(f.data[0]))


def _version(f: Frame) -> Reading:
    _size(f.data, 1, MAX_DATA)
    if not all(0x20 <= b <= 0x7E for b in f.data):
        raise _Bad("version text is not printable ASCII")
    parts = f.data.decode("ascii").split(";")
    if len(parts) != 4:
        raise _Bad(f"version has {len(parts)} fields, expected vendor;model;firmware;serial")
    vendor, model, firmware, serial = parts
    return DeviceReply(
        frame=f.raw, command="version", text=f"{vendor} {model} firmware {firmware} serial {serial}"
    )


def _status(f: Frame) -> Reading:
    _size(f.data, 1, 2)
    state = STATES.get(f.data[0])
    if state is None:
        raise _Bad(f"unknown state {f.data[0]}")
    text = state + (f": {f.data[1]} {_fault_text(f.data[1])}" if len(f.data) > 1 else "")
    # a poll's answer: health, not journaled (``DeviceReply.quiet``)
    return DeviceReply(frame=f.raw, command="status", text=text, quiet=True)


def _self_test(f: Frame) -> Reading:
    _size(f.data, 1)
    code = f.data[0]
    text = "pass" if code == 0 else f"fail: {code} {_fault_text(code)}"
    return DeviceReply(frame=f.raw, command="self-test", text=text)


#: frame command → parser (shaker → host).
_PARSERS: Final[dict[int, Callable[[Frame], Reading]]] = {
    ord("A"): _ack,
    ord("S"): _shaking,
    ord("R"): _result,
    ord("N"): _not_flat,
    ord("F"): _fault,
    ord("V"): _version,
    ord("Q"): _status,
    ord("T"): _self_test,
}


def parse_frame(f: Frame) -> Reading:
    """One checked frame → its reading; never raises."""
    parser = _PARSERS.get(f.cmd)
    if parser is None:
        return Unknown(frame=f.raw, reason=f"unknown frame command 0x{f.cmd:02X}")
    try:
        return parser(f)
    except _Bad as exc:
        return Malformed(frame=f.raw, reason=f"{chr(f.cmd)} frame: {exc}")


# --- protocol and driver ---------------------------------------------------------------------


class DiceRefOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: seconds between status polls; None: never poll (the shaker reports on its own).
    poll_interval: Annotated[float, msgspec.Meta(gt=0)] | None = None


class DiceRefProtocol(Protocol):
    """Bytes in any split → shaker readings."""

    def __init__(self) -> None:
        self.framer = Framer()

    def feed(self, data: bytes, now: float) -> list[Reading]:
        return [x if isinstance(x, Malformed) else parse_frame(x) for x in self.framer.feed(data)]

    def eof(self) -> list[Reading]:
        return list(self.framer.eof())


class DiceRefDriver(Driver):
    name = "dice-ref"
    transport = "serial"
    Options = DiceRefOptions
    serial_defaults = SerialDefaults(baudrate=9600)  # 8N1 [ours]
    maturity = "experimental"

    def protocol(self) -> DiceRefProtocol:
        return DiceRefProtocol()

    def on_connect(self) -> list[bytes]:
        return [VERSION]  # identify the machine first

    def probe_commands(self) -> list[bytes]:
        return [STATUS, SELF_TEST]

    def poll(self) -> tuple[float, bytes] | None:
        assert isinstance(self.options, DiceRefOptions)
        if self.options.poll_interval is None:
            return None
        return self.options.poll_interval, STATUS

    #: the command a dealer's tool sends to shake (``tablectl device shake``)
    shake_command: ClassVar[str] = "shake"
    #: sent by name: :meth:`encode_command` takes the names [ours]
    named_commands: ClassVar[Mapping[str, tuple[str, str]]] = {
        "shake": ("shake", "shake the dice (a Sic Bo round's throw, betting closed)"),
        "status": ("status", "the shaker's state: idle, shaking, reading, fault, lid open"),
        "version": ("version", "the firmware's version and serial number"),
        "self-test": ("self-test", "a self-test: its faults, or none"),
    }

    def encode_command(self, text: str) -> bytes:
        """A technician's command by name (``shake``, ``status``, ``version``, ``self-test``).

        The protocol is binary: a text line would be garbage to the shaker, so only these
        names are sent; anything else is refused before it is journaled.
        """
        by_name = {name: encode_frame(bytes([c])) for c, name in COMMANDS.items()}
        frame = by_name.get(text.strip().lower())
        if frame is None:
            raise ValueError(
                f"the dice-ref shaker takes {', '.join(sorted(by_name))}, not {text!r}"
            )
        return frame
