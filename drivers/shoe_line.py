"""The serial "electronic shoe": one card code per CR LF line.

Live studios run shoes that print each card as it leaves the shoe, 9600 8N1
(`docs/protocols/sources.md`). The code's encoding
is a device option. Optional codes report the cut card, a read error, a card
turned face up in the shoe and the shoe being lifted; a plain shoe sends
none of them and the dealer's buttons or tablectl report those instead.
The protocol page is ``docs/protocols/shoe-line.md``.
"""

from __future__ import annotations

from drivers.base import Driver, Protocol
from drivers.card_codes import CardCodeOptions, RepeatFilter, decode
from drivers.framing import LineFramer
from drivers.readings import (
    CardDrawn,
    CardUnreadable,
    CutCardOut,
    Malformed,
    Reading,
    ShoeInserted,
    ShoeRemoved,
)

#: longest printable line that may still be a misread card code.
MAX_CODE = 12


class ShoeLineOptions(CardCodeOptions, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A serial shoe's codes (``rank-suit`` by default: ``TH``, ``10H``, ``AS``)."""


class ShoeLineProtocol(Protocol):
    STATS = ("repeats_dropped",)

    def __init__(self, options: ShoeLineOptions) -> None:
        self.o = options
        self.framer = LineFramer(max_line=64)
        self.repeats = RepeatFilter(options)

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for item in self.framer.lines(data, out):
            if self.repeats.repeat(item, now):
                continue
            out.append(self._line(item))
        return out

    @property
    def repeats_dropped(self) -> int:
        return self.repeats.dropped

    def eof(self) -> list[Reading]:
        self.repeats.reset()
        return list(self.framer.eof())

    def _line(self, frame: bytes) -> Reading:
        return line_reading(frame, self.o)


def line_reading(frame: bytes, o: CardCodeOptions) -> Reading:
    """What one complete code means: a card, a marker code, an unreadable card or garbage.

    Shared with the USB HID scanner (``drivers/hid_scanner.py``), whose typed
    code is a line without its terminator: the same codes must mean the same
    thing whichever wire they came on.
    """
    try:
        text = frame.decode("ascii").strip(" ")  # spaces only: a control byte is noise
    except UnicodeDecodeError:
        return Malformed(frame=frame, reason="not ASCII")
    if not text or not text.isprintable():
        return Malformed(frame=frame, reason="unprintable bytes")
    if text == o.cut_card_code:
        return CutCardOut(frame=frame)
    if text == o.shoe_removed_code:
        return ShoeRemoved(frame=frame)
    if text == o.shoe_inserted_code:
        return ShoeInserted(frame=frame)
    if o.read_error_code and text.startswith(o.read_error_code):
        return CardUnreadable(frame=frame, code=text)
    face_up = bool(o.face_up_marker) and text.endswith(o.face_up_marker)  # type: ignore[arg-type]
    code = text[: -len(o.face_up_marker)] if face_up and o.face_up_marker else text
    decoded = decode(code, o.encoding)
    if decoded is not None:
        return CardDrawn(frame=frame, card=decoded[0], box=decoded[1], face_up=face_up)
    if len(code) <= MAX_CODE and code.replace(" ", "").isalnum():
        # Looks like a code the reader produced, not line noise: the
        # card is physically out and must be entered by a supervisor.
        return CardUnreadable(frame=frame, code=text)
    return Malformed(frame=frame, reason=f"not a {o.encoding} card code")


class ShoeLineDriver(Driver):
    name = "shoe-line"
    transport = "serial"
    Options = ShoeLineOptions
    maturity = "stable"

    def protocol(self) -> ShoeLineProtocol:
        assert isinstance(self.options, ShoeLineOptions)
        return ShoeLineProtocol(self.options)
