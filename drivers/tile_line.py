"""A serial tile reader: one tile code per CR LF line, like the card shoe.

A barcode or RFID reader at the dealer's hand reports each tile as it is
dealt. The line discipline, the read-error code and repeat suppression are
the serial shoe's (``drivers/shoe_line.py``); only the codes differ, so a
shoe-style reader needs no new wiring. Codes are the tile notation of
:mod:`drivers.tile_readings` unless the device has its own numbering
(option ``codes``). The protocol page is ``docs/protocols/tile-line.md``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from drivers.base import Driver, Protocol
from drivers.card_codes import RepeatFilter
from drivers.framing import LineFramer
from drivers.readings import Malformed, Reading
from drivers.tile_readings import TileDrawn, TileUnreadable, tile

#: longest printable line that may still be a misread tile code.
MAX_CODE = 12


class TileLineOptions(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A tile reader's codes."""

    #: the reader's own codes for tiles, e.g. ``{"T01" = "1p", "T10" = "wd"}``; a code not
    #: in it is read as tile notation (``9p``, ``wd``, ``5z``).
    codes: dict[str, str] = {}
    read_error_code: str | None = "ERR"
    drop_repeats: bool = False
    repeat_window: Annotated[float, msgspec.Meta(ge=0)] = 0.3

    def __post_init__(self) -> None:
        bad = [f"{k} = {v}" for k, v in self.codes.items() if tile(v) is None]
        if bad:
            raise ValueError(
                f"codes: not tiles: {', '.join(bad)} (tiles are written 1p–9p, 1m–9m, 1s–9s, "
                "ew sw ww nw, wd gd rd, f1–f4, s1–s4)"
            )


class TileLineProtocol(Protocol):
    STATS = ("repeats_dropped",)

    def __init__(self, options: TileLineOptions) -> None:
        self.o = options
        self.codes = {k.strip().upper(): tile(v) for k, v in options.codes.items()}
        self.framer = LineFramer(max_line=64)
        self.repeats = RepeatFilter(options)  # type: ignore[arg-type]  # same two fields

    @property
    def repeats_dropped(self) -> int:
        return self.repeats.dropped

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for item in self.framer.lines(data, out):
            if not self.repeats.repeat(item, now):
                out.append(self.line(item))
        return out

    def eof(self) -> list[Reading]:
        self.repeats.reset()
        return list(self.framer.eof())

    def line(self, frame: bytes) -> Reading:
        """What one code means: a tile, an unreadable tile, or garbage (never a guessed tile)."""
        try:
            text = frame.decode("ascii").strip()
        except UnicodeDecodeError:
            return Malformed(frame=frame, reason="not ASCII")
        if not text or not text.isprintable():
            return Malformed(frame=frame, reason="unprintable bytes")
        if self.o.read_error_code and text.startswith(self.o.read_error_code):
            return TileUnreadable(frame=frame, code=text)
        named = self.codes.get(text.upper()) or tile(text)
        if named is not None:
            return TileDrawn(frame=frame, tile=named)
        if len(text) <= MAX_CODE and text.replace(" ", "").isalnum():
            # a code the reader produced, not line noise: a tile is out and must be entered
            return TileUnreadable(frame=frame, code=text)
        return Malformed(frame=frame, reason="not a tile code")


class TileLineDriver(Driver):
    name = "tile-line"
    transport = "serial"
    Options = TileLineOptions

    def protocol(self) -> TileLineProtocol:
        assert isinstance(self.options, TileLineOptions)
        return TileLineProtocol(self.options)
