"""[log] events: which committed events get a log line."""

from __future__ import annotations

from types import SimpleNamespace

from structlog.testing import capture_logs

from daemon.event_log import event_logger
from daemon.games.baccarat.describe import BaccaratDescriber


def ev(type_: str, **data) -> SimpleNamespace:
    return SimpleNamespace(type=type_, seq=1, data=data)


EVENTS = [
    ev("card.dealt", card="KD", box="player", hand=1),
    ev(
        "hand.result",
        hand=1,
        winner="player",
        shoe=1,
        player=["KD", "9S"],
        banker=["2C", "3C"],
        player_total=9,
        banker_total=5,
    ),
    ev("alarm.raised", id="A1", kind="x", message="m"),
]


def logged(which: str) -> list[str]:
    with capture_logs() as logs:
        event_logger(which, BaccaratDescriber())(EVENTS)
    return [e["event"] for e in logs]


def test_all_results_none():
    assert logged("all") == ["card KD → player", "hand 1: PLAYER", "alarm.raised"]
    assert logged("results") == ["hand 1: PLAYER", "alarm.raised"]
    assert logged("none") == []
