"""What the SS2 and Mercury 360 protocols share: line framing, resync on ``*``,
the bare winning-number line and reply matching; each model adds its letters.
"""

from __future__ import annotations

from collections.abc import Callable

from drivers.base import Protocol
from drivers.cammegh.frames import (
    SENSOR_EVENT,
    Bad,
    ascii_text,
    bonus_frame,
    pocket_number,
    split_line,
    status_frame,
)
from drivers.cammegh.replies import Asked
from drivers.framing import LineFramer
from drivers.readings import (
    DeviceReply,
    Malformed,
    Reading,
    Unknown,
    WinningNumber,
)


class CammeghProtocol(Protocol):
    """What the two models share: line framing, resync on ``*``, bare lines, replies."""

    #: longest line: a log page is ~270 bytes [dev].
    MAX_LINE = 512
    _mercury = False

    def __init__(self, double_zero: bool, untracked: frozenset[str]) -> None:
        self.double_zero = double_zero
        self._framer = LineFramer(max_line=self.MAX_LINE)
        self._asked = Asked(untracked)

    def feed(self, data: bytes, now: float) -> list[Reading]:
        out: list[Reading] = []
        for line in self._framer.lines(data, out):
            garbage, frames = split_line(line)
            if garbage and frames:
                out.append(Malformed(frame=garbage, reason="bytes before the '*' of a frame"))
            elif garbage:
                out.extend(self._safe(self._bare, garbage, now))
            for frame in frames:
                out.extend(self._safe(self._frame, frame, now))
        return out

    def sent(self, data: bytes, now: float) -> list[Reading]:
        try:
            self._asked.sent(data, now)
        except Exception:  # pragma: no cover - our own bytes; never let them break a link
            pass
        return []

    def eof(self) -> list[Reading]:
        self._asked.clear()
        return list(self._framer.eof())

    def _safe(
        self, parse: Callable[[bytes, float], list[Reading]], frame: bytes, now: float
    ) -> list[Reading]:
        try:
            return parse(frame, now)
        except Bad as e:
            return [Malformed(frame=frame, reason=str(e))]
        except Exception as e:  # a decoder bug must cost one frame, not the link
            return [Malformed(frame=frame, reason=f"decoder error: {e!r}")]

    def _bare(self, frame: bytes, now: float) -> list[Reading]:
        """A whole line without ``*``: the winning-number line [dev] or a sensor event [dev]."""
        text = ascii_text(frame)
        if len(text) == 2:
            number = pocket_number(text, self.double_zero, "winning number")
            return [WinningNumber(frame=frame, number=number)]
        if SENSOR_EVENT.fullmatch(text):
            return [Unknown(frame=frame, reason="sensor event line (*I 4 output)")]
        raise Bad("not a '*' frame nor a two-character winning-number line")

    def _frame(self, frame: bytes, now: float) -> list[Reading]:
        text = ascii_text(frame)
        if len(text) < 2 or not text[1].isalpha():
            raise Bad("'*' not followed by a letter")
        letter = text[1]
        if letter == "X" and text[2:3] == ";":
            return [
                status_frame(
                    text,
                    frame,
                    count_max=255 if self._mercury else 256,
                    mercury=self._mercury,
                    double_zero=self.double_zero,
                )
            ]
        if letter == "Y" and text[2:3] == ";":
            return [bonus_frame(text, frame)]
        if len(text) > 2 and text[2] != " ":
            raise Bad(f"'*{letter}' followed by {text[2]!r}, expected a space or the line end")
        return self._reply(letter, text[3:], frame, now)

    def _reply(self, letter: str, text: str, frame: bytes, now: float) -> list[Reading]:
        raise NotImplementedError

    def _matched(self, letter: str, text: str, frame: bytes, now: float) -> DeviceReply:
        asked = self._asked.take(letter, text, now)
        # An unmatched reply is kept, named "?<letter>" [ours]. The answer to ``*X`` (the
        # level a Mercury 360 states at connect) is health, not journaled [ours].
        command = asked or f"?{letter}"
        return DeviceReply(frame=frame, command=command, text=text, quiet=command == "*X")
