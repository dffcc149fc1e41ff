"""[log] events: which committed events get a log line."""

from __future__ import annotations

from types import SimpleNamespace

from structlog.testing import capture_logs

from daemon.games.baccarat.describe import BaccaratDescriber
from daemon.runtime.event_log import event_logger


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


def test_json_lines_rendered_at_once_are_what_structlog_renders(capsys):
    """``logs.lines`` renders a commit's JSON lines itself (one write, no structlog trip per
    line): each must be the line the configured processors make, level filter included."""
    import re

    from daemon.runtime import logs

    more = [
        *EVENTS,
        ev("operator.command", name="betting.close", source="timer"),  # debug: filtered
        ev("betting.opened", hand=2, rule="seed 000"),
    ]

    def lines(fast: bool) -> list[str]:
        logs.setup("info", "json", table="t1")
        if not fast:
            logs._fast[0] = None  # every row through structlog's processors
        event_logger("all", BaccaratDescriber())(more)
        out = capsys.readouterr().out.splitlines()
        return [re.sub(r'"timestamp":"[^"]+"', '"timestamp":T', x) for x in out]

    try:
        fast, slow = lines(True), lines(False)
    finally:
        import structlog

        structlog.reset_defaults()
        logs._fast[0] = None
    assert len(fast) == 4 and '"priority":4' in fast[2]
    assert fast == slow
