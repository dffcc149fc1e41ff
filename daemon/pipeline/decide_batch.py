"""The inputs of one commit decided in order, each from the state the ones before it leave.

Pure, like the table's decide: nothing is told, answered or counted here (but for an
input whose decide raised: its log line, ``daemon/pipeline/decide_failure.py``). The pipeline
(``daemon/pipeline/pipeline.py``) takes what waits in its queue, decides it here, commits the
drafts in one transaction and only then advances the state and answers: a failed commit
leaves everything decided here unseen.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from daemon.pipeline import decide_failure
from daemon.table import Decision, Input, Table, TableState


class Mark:
    """Not an input: a place in the queue whose state someone wants."""


@dataclass(slots=True)
class Item:
    """One place in the pipeline's queue: an input (and who waits for its answer), or a mark."""

    inp: Input | Mark
    future: asyncio.Future[Decision] | None
    mono: float | None
    mark: asyncio.Future[TableState] | None = None


@dataclass(slots=True)
class Decided:
    """Inputs decided in order from one state, not yet committed, nothing told yet."""

    items: list[Item]
    decided: list[tuple[Decision, Item | None]]
    draft_lists: list[list[Any]]
    #: the state once these are committed
    tentative: TableState
    #: where someone asked for the state, and the state there
    marks: list[tuple[asyncio.Future[TableState], TableState]]
    refused: int
    #: inputs whose decide raised (each refused, with its alarm)
    failures: int = 0


def decide(table: Table, items: list[Item], state: TableState) -> Decided:
    """Decide ``items`` in order from ``state``; an input whose decide (or the apply of
    what it decided) raises is refused with its alarm, and the rest go on."""
    decided: list[tuple[Decision, Item | None]] = []
    draft_lists: list[list[Any]] = []
    marks: list[tuple[asyncio.Future[TableState], TableState]] = []
    refused = failures = 0
    decide_one, apply = table.decide, table.apply
    for it in items:
        if isinstance(it.inp, Mark):
            if it.mark is not None:
                marks.append((it.mark, state))
            continue
        try:
            d = decide_one(state, it.inp)
            after = state
            for x in d.drafts:
                after = apply(after, x.type, x.data)
        except Exception as e:  # a bug: this input is refused, the table goes on
            failures += 1
            d, after = decide_failure.fallback(table, state, it.inp, e)
        state = after
        if d.refused is not None:
            refused += 1
        decided.append((d, it))
        draft_lists.append(d.drafts)
    return Decided(items, decided, draft_lists, state, marks, refused, failures)


def mono_of(it: Item | None) -> float | None:
    """When the input was read (monotonic), for the journal's ``mono`` column."""
    if it is None:
        return None
    return getattr(it.inp, "mono", None)
