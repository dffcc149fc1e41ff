"""The reference card shuffler protocol — and the template a vendor shuffler driver copies.

No shuffler vendor publishes its protocol
(``docs/protocols/sources.md``), so this one is ours:
every fact below is **[ours]** unless it names another source. The page for
technicians and integrators is ``docs/protocols/shuffler.md``.

Wire: ``STX type [";" field]* ETX cc CR LF``, printable ASCII between STX
(0x02) and ETX (0x03), ``cc`` the XOR of the bytes between them as two hex
digits. A reply carries the letter of the command it answers; the machine
also reports on its own (shuffle started and done, count mismatch, jam, door,
fault). What a shuffler says is untrusted (CVE-2025-34500, CVE-2025-34503:
deck order readable): a deck order frame (``D``) is dropped *unread* — the
framer never even buffers it — and only counted.

Making a vendor driver from this module (one module, one entry point, the framing shared):

1. Copy this file to ``drivers/shuffler_<vendor>.py``.
2. Keep :func:`framer` (:class:`drivers.framing.StxFramer` with this machine's
   limits) if the machine frames with STX/ETX, or use
   :class:`drivers.framing.LineFramer` for CR/LF lines; otherwise add the
   machine's framer to :mod:`drivers.framing` with the same contract: bytes in
   any split → bodies or :class:`Malformed`, bounded memory, resync, never an
   exception, and tests in ``tests/test_framing.py``.
3. Replace the frame table (``_PARSERS``) and the commands with the
   vendor's, mapping each frame to the readings of
   :mod:`drivers.shuffler_readings` (the table understands only those).
   Cite the vendor document for every fact, like the ``[ours]`` marks here.
4. Rename the driver class and ``name``; register it in ``pyproject.toml``
   under ``[project.entry-points."tabled.drivers"]``.
5. Copy ``tests/test_shuffler.py`` and feed it captures of the real machine.

"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, ClassVar, Final

import msgspec

from drivers.base import Driver, Protocol, SerialDefaults
from drivers.framing import StxFramer, Withheld, encode_stx_frame
from drivers.readings import DeviceReply, Malformed, Reading, Unknown
from drivers.shuffler_readings import (
    ShuffleCountMismatch,
    ShuffleDone,
    ShufflerDoorClosed,
    ShufflerDoorOpen,
    ShufflerFault,
    ShufflerJam,
    ShuffleStarted,
)

# --- framing: drivers.framing's STX/ETX framer, with this protocol's limits -------------

#: longest body between STX and ETX; the longest frame of ours is about 70 bytes.
MAX_BODY: Final = 128
#: longest withheld (deck order) body skipped before giving up on finding its ETX:
#: 12 decks × 52 cards × 3 bytes, with room to spare.
MAX_WITHHELD: Final = 4096
#: frame types whose content must never be kept (untrusted deck order).
WITHHELD: Final = frozenset(b"D")


def framer() -> StxFramer:
    """A framer for one connection: deck order frames withheld unread, never buffered."""
    return StxFramer(max_body=MAX_BODY, withheld=WITHHELD, max_withheld=MAX_WITHHELD)


# --- the frames of this protocol (a vendor driver replaces this part) ----------------------

RANKS: Final = "A23456789TJQK"
STATES: Final = ("IDLE", "SHUFFLING", "READY", "FAULT", "DOOR-OPEN")
#: fault codes of the reference protocol [ours].
FAULTS: Final[dict[int, str]] = {
    1: "card jam in the input tray",
    2: "card jam in the elevator or output",
    3: "card count sensor fault",
    4: "card recognition fault",
    5: "motor fault",
    6: "door opened during a shuffle",
    7: "power supply fault",
    8: "firmware integrity check failed",
    9: "internal temperature out of range",
}


class _Bad(Exception):
    """A frame with the right shape but wrong fields; becomes Malformed."""


def _int(text: str, what: str, lo: int, hi: int) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise _Bad(f"{what} {text!r} is not a number")
    n = int(text)
    if not lo <= n <= hi:
        raise _Bad(f"{what} {n} is out of range {lo}..{hi}")
    return n


def _fields(f: list[str], lo: int, hi: int | None = None) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(f) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise _Bad(f"{len(f)} fields, expected {want}")


def _shuffle_id(text: str) -> int:
    return _int(text, "shuffle id", 0, 999_999)


def _decks(text: str) -> int:
    return _int(text, "decks", 1, 12)


def _version(f: list[str], frame: bytes) -> Reading:
    _fields(f, 4)
    vendor, model, firmware, serial = f
    return DeviceReply(
        frame=frame, command="version", text=f"{vendor} {model} firmware {firmware} serial {serial}"
    )


def _status(f: list[str], frame: bytes) -> Reading:
    _fields(f, 1, 2)
    if f[0] not in STATES:
        raise _Bad(f"unknown status {f[0]!r}")
    text = f[0].lower() + (f": {f[1]}" if len(f) > 1 and f[1] else "")
    # a poll's answer: health, not journaled (``DeviceReply.quiet``)
    return DeviceReply(frame=frame, command="status", text=text, quiet=True)


def _self_test(f: list[str], frame: bytes) -> Reading:
    _fields(f, 1, 3)
    if f[0] == "PASS" and len(f) == 1:
        return DeviceReply(frame=frame, command="self-test", text="pass")
    if f[0] == "FAIL" and len(f) >= 2:
        code = _int(f[1], "fault code", 0, 999)
        meaning = FAULTS.get(code) or (f[2] if len(f) > 2 else "") or "unknown fault"
        return DeviceReply(frame=frame, command="self-test", text=f"fail: {code} {meaning}")
    raise _Bad("self-test result is not PASS or FAIL;<code>")


def _start_reply(f: list[str], frame: bytes) -> Reading:
    _fields(f, 1, 2)
    if f == ["OK"]:
        return DeviceReply(frame=frame, command="start-shuffle", text="accepted")
    if f[0] == "NO":
        why = f[1] if len(f) > 1 and f[1] else "no reason given"
        return DeviceReply(frame=frame, command="start-shuffle", text=f"refused: {why}")
    raise _Bad("start reply is not OK or NO;<reason>")


def _started(f: list[str], frame: bytes) -> Reading:
    _fields(f, 2)
    return ShuffleStarted(frame=frame, shuffle_id=_shuffle_id(f[0]), decks=_decks(f[1]))


def _done(f: list[str], frame: bytes) -> Reading:
    _fields(f, 3, 4)
    cards = _int(f[2], "cards", 0, 999)
    counts: dict[str, int] | None = None
    if len(f) == 4 and f[3]:
        values = f[3].split(",")
        if len(values) != len(RANKS):
            raise _Bad(f"{len(values)} rank counts, expected {len(RANKS)} (A to K)")
        counts = {r: _int(v, f"count of {r}", 0, 999) for r, v in zip(RANKS, values, strict=True)}
        if sum(counts.values()) != cards:
            # An inconsistent machine is not believed: no shoe from this frame.
            raise _Bad(f"rank counts add up to {sum(counts.values())}, the card count is {cards}")
    return ShuffleDone(
        frame=frame,
        shuffle_id=_shuffle_id(f[0]),
        decks=_decks(f[1]),
        cards=cards,
        rank_counts=counts,
    )


def _mismatch(f: list[str], frame: bytes) -> Reading:
    _fields(f, 3)
    expected, counted = _int(f[1], "expected", 0, 999), _int(f[2], "counted", 0, 999)
    if expected == counted:
        raise _Bad("count mismatch with equal counts")
    return ShuffleCountMismatch(
        frame=frame, shuffle_id=_shuffle_id(f[0]), expected=expected, counted=counted
    )


def _jam(f: list[str], frame: bytes) -> Reading:
    _fields(f, 0, 1)
    return ShufflerJam(frame=frame, where=f[0] if f else "")


def _door(f: list[str], frame: bytes) -> Reading:
    _fields(f, 1)
    if f[0] == "OPEN":
        return ShufflerDoorOpen(frame=frame)
    if f[0] == "CLOSED":
        return ShufflerDoorClosed(frame=frame)
    raise _Bad(f"door state {f[0]!r} is not OPEN or CLOSED")


def _fault(f: list[str], frame: bytes) -> Reading:
    _fields(f, 1, 2)
    code = _int(f[0], "fault code", 0, 999)
    meaning = FAULTS.get(code) or (f[1] if len(f) > 1 else "") or "unknown fault"
    return ShufflerFault(frame=frame, code=code, meaning=meaning)


#: frame type → parser of its fields (device → host).
_PARSERS: Final[dict[str, Callable[[list[str], bytes], Reading]]] = {
    "V": _version,
    "Q": _status,
    "T": _self_test,
    "G": _start_reply,
    "S": _started,
    "C": _done,
    "M": _mismatch,
    "J": _jam,
    "O": _door,
    "F": _fault,
}


def parse_body(body: bytes) -> Reading:
    """One checked frame body → its reading; never raises."""
    text = body.decode("ascii")  # the framer let only printable ASCII through
    if not text:
        return Malformed(frame=body, reason="empty frame")
    kind = text[0]
    if not "A" <= kind <= "Z":
        return Malformed(frame=body, reason="frame type is not a capital letter")
    if len(text) > 1 and text[1] != ";":
        return Malformed(frame=body, reason="no ';' after the frame type")
    parser = _PARSERS.get(kind)
    if parser is None:
        return Unknown(frame=body, reason=f"unknown frame type {kind!r}")
    fields = text[2:].split(";") if len(text) > 1 else []
    try:
        return parser(fields, body)
    except _Bad as exc:
        return Malformed(frame=body, reason=f"{kind} frame: {exc}")


# --- commands (host → device) ---------------------------------------------------------------


def command(kind: str, *fields: str | int) -> bytes:
    """A command frame: ``command("G", 8)`` → STX ``G;8`` ETX cc CR LF."""
    body = ";".join([kind, *(str(f) for f in fields)])
    return encode_stx_frame(body.encode("ascii"))


STATUS: Final = command("Q")
VERSION: Final = command("V")
SELF_TEST: Final = command("T")


def start_shuffle(decks: int | None = None) -> bytes:
    """Start a shuffle of ``decks`` decks (the machine's own setting when None)."""
    return command("G") if decks is None else command("G", decks)


# --- protocol and driver ---------------------------------------------------------------------


class ShufflerRefOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    #: seconds between status polls; None: never poll (the machine still reports events).
    poll_interval: Annotated[float, msgspec.Meta(gt=0)] | None = 5.0


class ShufflerRefProtocol(Protocol):
    """Bytes in any split → shuffler readings. A deck order is counted, never read."""

    STATS = ("deck_orders_dropped",)

    def __init__(self) -> None:
        self.framer = framer()
        self.deck_orders_dropped = 0

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for item in self.framer.feed(data):
            if isinstance(item, Malformed):
                out.append(item)
            elif isinstance(item, Withheld):
                self.deck_orders_dropped += 1
                out.append(
                    Unknown(
                        frame=item.kind,
                        reason="deck order frame dropped unread: shuffler data is untrusted "
                        "and a deck order is never published",
                    )
                )
            else:
                out.append(parse_body(item))
        return out

    def eof(self) -> list[Reading]:
        return list(self.framer.eof())


class ShufflerRefDriver(Driver):
    name = "shuffler-ref"
    transport = "serial"
    Options = ShufflerRefOptions
    serial_defaults = SerialDefaults(baudrate=9600)  # 8N1 [ours]
    maturity = "experimental"

    #: sent by name: the protocol is framed, so :meth:`encode_command` takes only these [ours]
    named_commands: ClassVar[Mapping[str, tuple[str, str]]] = {
        "status": ("status", "the machine's state and its deck setting"),
        "version": ("version", "the firmware's version"),
        "self-test": ("self-test", "a self-test: its faults, or none"),
        "shuffle": ("shuffle", "start a shuffle of the machine's own deck setting"),
    }

    def protocol(self) -> ShufflerRefProtocol:
        return ShufflerRefProtocol()

    def encode_command(self, text: str) -> bytes:
        """A technician's command by name: a text line would be garbage to the machine, so
        anything else is refused before it is journaled."""
        frames = {"status": STATUS, "version": VERSION, "self-test": SELF_TEST}
        frames["shuffle"] = start_shuffle()
        frame = frames.get(text.strip().lower())
        if frame is None:
            raise ValueError(
                f"the shuffler-ref machine takes {', '.join(sorted(frames))}, not {text!r}"
            )
        return frame

    def on_connect(self) -> list[bytes]:
        return [VERSION]  # identify the machine first

    def probe_commands(self) -> list[bytes]:
        return [STATUS, SELF_TEST]

    def poll(self) -> tuple[float, bytes] | None:
        assert isinstance(self.options, ShufflerRefOptions)
        if self.options.poll_interval is None:
            return None
        return self.options.poll_interval, STATUS
