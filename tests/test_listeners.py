"""The commit's listeners: each called, with the whole commit, only when it follows one of its
event types; in the order added; one that raises does not stop the others."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest
from tabled_client import events

from daemon.games.blackjack.clock import VirtualPlayers
from daemon.journal.events import Event
from daemon.pipeline.listeners import Listeners, follows
from daemon.procedures.clock import DecisionClock
from daemon.runtime.croupier import Croupier
from daemon.runtime.devices import DeviceSet
from daemon.runtime.hooks import Hooks


def ev(type_: str, **data: Any) -> Event:
    return Event(v=1, table="t", seq=1, type=type_, time="", mono=None, data=data, prev="", hash="")


def test_a_listener_is_called_with_the_whole_commit_only_when_it_follows_one_of_its_types():
    calls: list[tuple[str, list[str]]] = []

    @follows("hand.result")
    def results(events: Any) -> None:
        calls.append(("results", [e.type for e in events]))

    def every(events: Any) -> None:
        calls.append(("every", [e.type for e in events]))

    ls = Listeners()
    ls.add(results)
    ls.add(every)
    ls.add(lambda events: calls.append(("cards", [e.type for e in events])), ["card.dealt"])
    ls([ev("card.dealt")])
    assert calls == [("every", ["card.dealt"]), ("cards", ["card.dealt"])]
    calls.clear()
    ls([ev("card.dealt"), ev("hand.result")])  # the whole commit, in the order added
    assert calls == [
        ("results", ["card.dealt", "hand.result"]),
        ("every", ["card.dealt", "hand.result"]),
        ("cards", ["card.dealt", "hand.result"]),
    ]
    calls.clear()
    ls([])  # an empty commit: only the listeners that follow everything
    assert calls == [("every", [])]
    calls.clear()
    ls([ev("card.dealt")])  # the plan kept for a kind of commit gives the same answer
    assert calls == [("every", ["card.dealt"]), ("cards", ["card.dealt"])]


def test_a_listener_added_later_is_in_the_next_commits_plan():
    seen: list[str] = []
    ls = Listeners()
    ls([ev("card.dealt")])
    ls.add(lambda events: seen.append(events[0].type), ["card.dealt"])
    ls([ev("card.dealt")])
    assert seen == ["card.dealt"]


def test_a_listener_that_raises_does_not_stop_the_others():
    seen: list[str] = []

    def broken(events: Any) -> None:
        raise RuntimeError("bug")

    ls = Listeners()
    ls.add(broken)
    ls.add(lambda events: seen.append("after"))
    ls([ev("card.dealt")])
    assert seen == ["after"]


@pytest.mark.parametrize(
    "fn",
    [
        DeviceSet.on_events,
        Hooks.on_events,
        Croupier.on_events,
        DecisionClock.on_events,
        VirtualPlayers.on_events,
    ],
    ids=lambda f: f.__qualname__,
)
def test_each_listener_follows_every_event_type_its_code_names(fn: Any):
    """A type the listener reads but does not follow would never reach it: every event type
    its code names (a string that is one) is in what it declares."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = tree.body[0]
    assert isinstance(body, ast.FunctionDef)
    named = {
        n.value
        for stmt in body.body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in events.DATA
    }
    assert named, "the listener names no event type: the test reads the wrong code"
    assert named <= fn.follows, sorted(named - fn.follows)
