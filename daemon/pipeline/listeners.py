"""The commit's listeners, each called only for a commit that holds an event it follows.

Every commit runs the listeners on the loop (the console log, the devices' commands, hooks,
the croupier, a game's timers, the stack light, …). Most follow a few event types and
loop over every event to find none: a cost on every card for nothing. A listener says
which types it follows with :func:`follows`; :class:`Listeners` keeps, per set of event
types a commit holds, the listeners that follow one of them (a handful of sets recur:
a card, a card and a result, …), so one that has nothing to do is not called at all.
A listener that is called gets the whole commit, exactly as before, and one that says
nothing follows everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("tabled")

Listener = Callable[[Sequence[Any]], None]
F = TypeVar("F", bound=Callable[..., Any])

#: the plans kept at most: commits of a few kinds recur, a long group commit is its own
_PLANS = 256


def follows(*types: str) -> Callable[[F], F]:
    """Mark a listener (a function or method) as doing nothing for any other event type."""

    def mark(fn: F) -> F:
        fn.follows = frozenset(types)  # type: ignore[attr-defined]
        return fn

    return mark


class Listeners:
    """One pipeline listener that calls the others, in the order added, when they follow
    an event of the commit; a listener that raises is logged and the rest still run (as
    the pipeline does for its own)."""

    def __init__(self) -> None:
        self._added: list[tuple[Listener, frozenset[str] | None]] = []
        self._plans: dict[frozenset[str], tuple[Listener, ...]] = {}

    def add(self, fn: Listener, types: Iterable[str] | None = None) -> None:
        """Add ``fn``; ``types`` (else what :func:`follows` said, else every type)."""
        if types is None:
            types = getattr(fn, "follows", None)
        self._added.append((fn, None if types is None else frozenset(types)))
        self._plans.clear()

    def __call__(self, events: Sequence[Any]) -> None:
        kinds = frozenset([ev.type for ev in events])
        plan = self._plans.get(kinds)
        if plan is None:
            plan = self._plan(kinds)
        for fn in plan:
            try:
                fn(events)
            except Exception:
                log.exception("event listener failed")

    def _plan(self, kinds: frozenset[str]) -> tuple[Listener, ...]:
        plan = tuple(
            fn for fn, types in self._added if types is None or not types.isdisjoint(kinds)
        )
        if len(self._plans) >= _PLANS:
            self._plans.clear()
        self._plans[kinds] = plan
        return plan
