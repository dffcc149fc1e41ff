"""Result corrections: a supervisor corrects a published result, the game re-derives it.

A result read wrong (a card misread and found on the video, a wrong manual entry, a
wheel number read wrong) is corrected by a ``result.correct`` command naming the
result's seq and the corrected inputs (cards, a number, dice, tiles). The game
re-derives the result from them by its own rules (never a typed-in winner) and the
table journals ``result.corrected``: the superseded seq, the inputs, the result as it
stood and the re-derived one, with who, why and a reference. The original stays in the
chain; a backend re-settles the difference from the two results.

The limits (``docs/procedures.md``, Result corrections): a supervisor only; one of the
table's last :data:`WINDOW` results; never across a void, a shoe's end or change (the
game's ``correction_closers``: seed 002's dealer-error rules void a hand, and a void or
a new shoe is where settlement is final). Seed 004 ("management may correct or cancel
errors") is where a correction comes from. What the window holds is table state, folded
from the journal like the rest, so a restart changes nothing of what is allowed.

Pure: :func:`fold` (apply) and :func:`decide`; no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from daemon.journal.events import canonical

if TYPE_CHECKING:
    from daemon.table.decision import Decision, TableState
    from daemon.table.inputs import Command

#: how many of the latest results a supervisor may still correct [ours]
WINDOW = 10
#: the event a correction is journaled as
CORRECTED = "result.corrected"

R_LIMITS = (
    "[ours, from seed 004 'management may correct or cancel errors' and seed 002's "
    "dealer-error rules] a supervisor corrects one of the table's last 10 results, "
    "never across a void, a shoe's end or a new shoe"
)


class CorrectionError(ValueError):
    """Corrected inputs the game's rules cannot have produced: the reason is the message."""


class Recent(msgspec.Struct, frozen=True):
    """A result that may still be corrected: where it is and how it stands now."""

    seq: int
    type: str
    #: the result as it stands: as published, or as its latest correction re-derived it
    data: dict[str, Any]
    #: results published after it
    later: int = 0
    #: the seq of its latest correction
    corrected: int | None = None


def fold(
    recent: tuple[Recent, ...],
    seq: int,
    type_: str,
    data: Mapping[str, Any],
    results: frozenset[str],
    closers: frozenset[str],
) -> tuple[Recent, ...]:
    """The window after the event at ``seq``: a result joins it, a closer empties it."""
    if type_ in results:
        kept = tuple(msgspec.structs.replace(r, later=r.later + 1) for r in recent[-(WINDOW - 1) :])
        return (*kept, Recent(seq, type_, _as_journaled(data)))
    if type_ in closers:
        return ()
    if type_ == CORRECTED:
        target = data["supersedes"]
        return tuple(
            msgspec.structs.replace(r, data=_as_journaled(data["result"]), corrected=seq)
            if r.seq == target
            else r
            for r in recent
        )
    return recent


def _as_journaled(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as the journal gives it back (canonical JSON: keys sorted, lists), so the
    state a decision leaves and the state rebuilt from the journal are the same bytes."""
    out: dict[str, Any] = msgspec.json.decode(canonical(data))
    return out


def inputs(words: Any, names: Mapping[str, str]) -> dict[str, str]:
    """``["player=9S,KD", "banker=8H,2C"]`` as ``{"player": "9S,KD", ...}``; ``names`` is
    what the game takes, name → what it is, for the refusal."""
    items = words if isinstance(words, list) else [words] if words not in (None, "") else []
    takes = "; ".join(f"{k}=… ({v})" for k, v in names.items())
    if not items:
        raise CorrectionError(f"no corrected inputs: this game takes {takes}")
    out: dict[str, str] = {}
    for w in items:
        name, eq, value = str(w).partition("=")
        name = name.strip().lower()
        if not eq or name not in names:
            raise CorrectionError(f"{str(w)!r} is not a corrected input: this game takes {takes}")
        if name in out:
            raise CorrectionError(f"{name} given twice")
        out[name] = value.strip()
    return out


def split(value: str) -> list[str]:
    """``"9S,KD"`` or ``"9S KD"`` as ``["9S", "KD"]``."""
    return value.replace(",", " ").split()


def numbers(value: str, what: str) -> list[int]:
    """``"3,5,6"`` as ``[3, 5, 6]``; a word that is no whole number names ``what``."""
    try:
        return [int(x) for x in split(value)]
    except ValueError:
        raise CorrectionError(f"{what} {value!r}: not whole numbers") from None


def merged(original: Mapping[str, Any], derived: Mapping[str, Any]) -> dict[str, Any]:
    """The corrected result: every field the rules derive replaced, the others (the round,
    the device, the timing, what the house set) as the original said."""
    return {**original, **derived}


def decide(t: TableState, c: Command, d: Decision, game: Any) -> None:
    """``result.correct``: check it names a result inside the limits, let the game re-derive
    it from the corrected inputs, journal ``result.corrected``; else refuse, saying why."""
    a = c.args
    correct = game.correct
    if correct is None or game.corrections_refused:
        why = game.corrections_refused or "its results are not corrected here"
        d.refused = f"result.correct: {game.name}: {why}"
        return
    seq = a.get("seq")
    if isinstance(seq, str) and seq.strip().isdigit():
        seq = int(seq)
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        d.refused = "result.correct needs seq: the seq of the published result it corrects"
        return
    reason, ref = str(a.get("reason") or "").strip(), str(a.get("ref") or "").strip()
    if not reason or not ref:
        d.refused = (
            "result.correct needs --reason (why, for the record) and --ref (an incident "
            "number or a video time code)"
        )
        return
    r = next((x for x in t.recent if x.seq == seq), None)
    if r is None:
        d.refused = f"result.correct: seq {seq}: {_outside(t, seq)}"
        return
    try:
        out = correct(t.game, r.type, r.data, a.get("inputs"), r.later)
    except (CorrectionError, ValueError) as e:
        d.refused = f"result.correct: seq {seq}: {e}"
        return
    derived = _as_journaled(out["result"])
    if {k: v for k, v in r.data.items() if k in derived} == derived:
        d.refused = f"result.correct: seq {seq}: the corrected inputs give the result as it stands"
        return
    key = {k: r.data.get(k) for k in game.describe.key}
    d.add(
        CORRECTED,
        supersedes=seq,
        previous=r.corrected,
        result_type=r.type,
        **key,
        later=r.later,
        inputs=out["inputs"],
        original=r.data,
        result=out["result"],
        roads=out.get("roads"),
        by=c.actor,
        role=c.role,
        reason=reason,
        ref=ref,
        rule=R_LIMITS,
    )


def _outside(t: TableState, seq: int) -> str:
    """Why ``seq`` is not a result that may be corrected now."""
    window = ", ".join(str(r.seq) for r in t.recent) or "none"
    if seq > t.seq:
        return f"no such event yet (the journal ends at seq {t.seq}); correctable: {window}"
    fixed = next((r for r in t.recent if r.corrected == seq), None)
    if fixed is not None:
        return f"a correction of seq {fixed.seq}: name the result it corrects, seq {fixed.seq}"
    if t.recent and seq > t.recent[0].seq:
        return f"not a result; correctable results: {window}"
    return (
        f"not a result still open to correction: only the last {WINDOW} results, and none "
        f"before a void, a shoe's end or a new shoe, may be corrected (correctable: {window})"
    )


def names_of(boxes: Sequence[str], what: str) -> dict[str, str]:
    """The inputs of a game whose inputs are boxes of cards or tiles."""
    return {b: f"the {b}'s {what} in dealing order" for b in boxes}
