"""The croupier's clockwork: which command it schedules after which event (timers recorded, not waited)."""

from __future__ import annotations

from types import SimpleNamespace

from daemon.games.baccarat.table import BaccaratRules, BaccaratTable
from daemon.runtime.croupier import Croupier
from daemon.table import TableState


def croupier(**rules) -> tuple[Croupier, list[tuple[float, str]]]:
    c = Croupier(
        BaccaratRules(betting_seconds=4.0, settle_seconds=1.5, **rules),
        submit=lambda _: None,
        describe=BaccaratTable.describe,
    )
    planned: list[tuple[float, str]] = []
    c._later = lambda delay, name: planned.append((delay, name))  # type: ignore[method-assign]
    return c, planned


def ev(type_: str, **data) -> SimpleNamespace:
    return SimpleNamespace(type=type_, data=data)


def test_betting_opens_after_a_result_and_closes_on_time():
    c, planned = croupier()
    c.on_events([ev("hand.result", hand=1)])
    c.on_events([ev("betting.opened", hand=2)])
    assert planned == [(1.5, "betting.open"), (4.0, "betting.close")]


def test_shoe_without_burn_and_demo_hands():
    c, planned = croupier(start_burn="none")
    c.on_events([ev("shoe.started", burn="none")])
    assert planned == [(1.5, "betting.open")]
    c, planned = croupier(start_burn="none", demo_hands=2)
    c.on_events([ev("shoe.started", burn="none"), ev("hand.demo", hand=1)])
    assert planned == []
    c.on_events([ev("hand.demo", hand=2)])
    assert planned == [(1.5, "betting.open")]


def test_a_new_shoe_waits_for_a_counted_shuffle():
    c, planned = croupier(auto_new_shoe=True, require_shuffle=True)
    c.start(TableState(game=SimpleNamespace(phase="no-shoe")))
    planned.clear()
    c.on_events([ev("shuffle.completed", ok=False)])
    assert planned == []
    c.on_events([ev("shuffle.completed", ok=True)])
    assert planned == [(1.5, "shoe.new")]
    planned.clear()
    c.on_events([ev("shoe.started", burn="first-card"), ev("shuffle.completed", ok=True)])
    assert planned == []  # a shoe is in play: the next shuffle waits for its end
