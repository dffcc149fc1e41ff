"""Replies matched to the command that asked: the daemon writes commands, the wheel
answers with the same letter, and each reply is named after what asked for it.
"""

from __future__ import annotations

from collections import deque

from drivers.framing import LineFramer
from drivers.readings import (
    Malformed,
)

#: seconds a command waits for its reply before a late reply counts as unmatched [ours]:
#: the captures show replies within 1.5 s.
REPLY_TIMEOUT = 10.0
#: ``*F`` self-test runs up to 5 minutes [dev]; its replies are accepted this long [ours].
SELF_TEST_TIMEOUT = 330.0
#: more lines of the same letter within this window belong to the same command
#: (multi-line tables such as ``*W``/``*M``) [ours].
FOLLOW_ON_WINDOW = 1.0
#: commands remembered at most; the oldest are forgotten first [ours].
MAX_PENDING = 32


class Asked:
    """The commands the daemon wrote, oldest first, so each reply names what asked.

    A reply starts with its command's letter [dev]; the oldest waiting command of
    that letter takes it. ``*o BUSY`` may answer ``*O`` [dev]; ``*T D`` is answered
    ``*T d 15`` [cap], so ``*T`` replies are matched on the parameter letter too.
    """

    __slots__ = ("_framer", "_pending", "_recent", "_untracked")

    def __init__(self, untracked: frozenset[str]) -> None:
        self._framer = LineFramer(max_line=128)
        # [letter, command text, first argument, deadline]
        self._pending: deque[tuple[str, str, str, float]] = deque()
        self._recent: dict[str, tuple[str, float]] = {}
        self._untracked = untracked

    def sent(self, data: bytes, now: float) -> None:
        for line in self._framer.feed(data):
            if isinstance(line, Malformed):
                continue
            text = line.decode("ascii", "replace").strip()
            if len(text) < 2 or text[0] != "*" or not text[1].isalpha():
                continue
            if text[1] in self._untracked:
                continue
            letter = text[1]
            args = text[2:].split()
            timeout = SELF_TEST_TIMEOUT if letter == "F" else REPLY_TIMEOUT
            self._pending.append((letter, text, args[0] if args else "", now + timeout))
            while len(self._pending) > MAX_PENDING:
                self._pending.popleft()

    def waiting(self, letter: str, now: float) -> bool:
        self._expire(now)
        return any(p[0] == letter for p in self._pending)

    def self_test_running(self, now: float) -> bool:
        return self.waiting("F", now)

    def take(self, letter: str, text: str, now: float) -> str | None:
        """The command this reply answers, or None when nothing asked for it."""
        self._expire(now)
        pick = self._choose(letter, text)
        if pick is None:
            recent = self._recent.get(letter)
            if recent is not None and now <= recent[1]:
                return recent[0]
            return None
        entry = self._pending[pick]
        # A self-test answers one line per fault and ends with "0" or "BUSY" [dev]:
        # keep it waiting until then (or until it times out).
        if not (entry[0] == "F" and text not in ("0", "BUSY")):
            del self._pending[pick]
        self._recent[letter] = (entry[1], now + FOLLOW_ON_WINDOW)
        return entry[1]

    def _choose(self, letter: str, text: str) -> int | None:
        same = [i for i, p in enumerate(self._pending) if p[0] == letter]
        if not same and letter == "o":
            same = [i for i, p in enumerate(self._pending) if p[0] == "O"]
        if not same:
            return None
        if letter == "T":
            first = text.split(" ", 1)[0]
            if first == "OK":  # answers a set: lower-case parameter
                better = [i for i in same if self._pending[i][2].islower()]
            else:
                better = [i for i in same if self._pending[i][2].lower() == first.lower()]
            if better:
                return better[0]
        return same[0]

    def _expire(self, now: float) -> None:
        if self._pending and any(p[3] < now for p in self._pending):
            self._pending = deque(p for p in self._pending if not p[3] < now)

    def clear(self) -> None:
        self._pending.clear()
        self._recent.clear()
        self._framer.eof()
