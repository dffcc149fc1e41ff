"""Roulette captures replayed through the real protocol and table (``daemon.pipeline.replay``).

The real SS2 traffic (``cammegh-ss2/studio-*.log``) is checked against counts made
independently, with regular expressions over the file; every synthetic capture
(``cammegh-ss2/synthetic-*.log``, ``cammegh-m360/*.log``) against what it was made
to show. Every void must carry the reason its own frames show.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wheel_harness import (
    BALL_MISSING,
    BALL_NOT_DETECTED,
    COMPONENT_FAULT,
    LAUNCH_FAILED,
    SAME_DIRECTION,
    TABLE_CLOSED,
    WHEEL_VOID,
    WINNING_NUMBER,
)

from daemon.games.roulette.wheel import ALLOWED, ALLOWED_M360
from daemon.journal.events import Event
from daemon.pipeline.capture import Capture, Line, load
from daemon.pipeline.replay import Replayer, replay

HERE = Path(__file__).parent / "captures"
SELFTEST = HERE / "cammegh-ss2" / "studio-selftest-2025-09.log"
SETTINGS = HERE / "cammegh-ss2" / "studio-settings-2025-11.log"
ALL = sorted([*(HERE / "cammegh-ss2").glob("*.log"), *(HERE / "cammegh-m360").glob("*.log")])

_STATUS = re.compile(r"^\S+ rx \*X;([1-7]);(\d{3});([ \d]{2});([0-9A-Fa-f]);\d{3};[01]\\r\\n$")


@cache
def replayed(path: Path) -> Replayer:
    return replay([load(path)])


def of(r: Replayer, t: str) -> list[Event]:
    return [e for e in r.events if e.type == t]


def state5_entries(path: Path) -> list[tuple[int, str]]:
    """(wheel spin, number field) of every status frame entering state 5, by regex alone."""
    out, prev = [], None
    for line in path.read_text().splitlines():
        m = _STATUS.match(line)
        if not m:
            continue
        state = int(m.group(1))
        if state == 5 and prev != 5:
            out.append((int(m.group(2)), m.group(3)))
        prev = state
    return out


# -- acceptance on the real self-test capture -----------------------------------------------


def test_every_state_5_entry_with_a_number_gives_its_result_and_no_other_result():
    entries = state5_entries(SELFTEST)
    with_number = [(spin, int(n)) for spin, n in entries if n.strip()]
    assert len(entries) == 185 and len(with_number) == 185
    results = [
        (e.data["wheel_spin"], e.data["number"]) for e in of(replayed(SELFTEST), "spin.result")
    ]
    assert results == with_number


def test_no_result_without_a_state_5_number_in_the_real_capture():
    # results only ever come from a state-5 frame or its number line, each once per game
    r = replayed(SELFTEST)
    sources = Counter(e.data["source"] for e in of(r, "spin.result"))
    assert sources == {"status+line": 183, "status": 2}
    keys = [(e.data["wheel_spin"], e.data["round"]) for e in of(r, "spin.result")]
    assert len(set(keys)) == len(keys)


def test_the_real_capture_counts():
    r = replayed(SELFTEST)
    assert Counter(e.data["reason"] for e in of(r, "spin.void")) == {"result-not-seen": 15}
    assert Counter(e.data["kind"] for e in of(r, "alarm.raised")) == {"launch-failure": 5}
    # the five launch-failure alarms are all in state 2 and all clear themselves
    assert len(of(r, "alarm.cleared")) == 5 and r.state.alarms == {}
    assert all("in state 2" in e.data["message"] for e in of(r, "alarm.raised"))
    assert len(of(r, "device.reply")) == 230
    assert r.stats.malformed == 223 and r.stats.refused == []


def test_the_real_capture_never_judges_across_its_joins():
    r = replayed(SELFTEST)
    kinds = {e.data["kind"] for e in of(r, "alarm.raised")}
    assert not kinds & {"impossible-state", "spin-counter", "repeat-number", "device-fault"}


# -- every void carries the reason its frames show -----------------------------------------


def _fields(frame: str) -> dict[str, Any] | None:
    if not frame.startswith("*X;"):
        return None
    f = frame[3:].split(";")
    out: dict[str, Any] = {
        "state": int(f[0]),
        "win": f[2],
        "flags": int(f[3], 16),
        "rotor": f[5],
    }
    if len(f) == 11:
        out.update(revs=int(f[7], 16), ball=f[8])
    return out


def _shown(reason: str, frames: list[str], before: Event | None, rules: dict[str, Any]) -> bool:
    last = _fields(frames[-1]) if frames else None
    first = _fields(frames[0]) if len(frames) > 1 else None
    flags = last["flags"] if last else 0
    allowed = ALLOWED_M360 if rules.get("wheel_model") == '"m360"' else ALLOWED
    if reason == "ball-direction":
        return bool(flags & SAME_DIRECTION) or (
            last is not None and last.get("ball") == last["rotor"]
        )
    if reason == "launch-failure":
        return bool(flags & LAUNCH_FAILED)
    if reason == "ball-missing":
        return bool(flags & BALL_MISSING) or (
            last is not None and last["state"] == BALL_NOT_DETECTED
        )
    if reason == "no-winning-number":
        return (
            last is not None and last["state"] == WINNING_NUMBER and not last["win"].strip()
        ) or frames == ["*S"]
    if reason == "component-fault":
        return (
            bool(flags & COMPONENT_FAULT)
            or frames[-1].startswith("*F ")
            or bool(last and last["state"] == TABLE_CLOSED)
        )
    if reason == "result-not-seen":
        return before is not None and before.type == "wheel.resync"
    if reason == "impossible-state":
        return bool(first and last and last["state"] not in allowed[first["state"]])
    if reason == "ball-revolutions":
        minimum = int(rules.get("game.min_ball_revolutions", 3))
        return last is not None and last["state"] == WINNING_NUMBER and last["revs"] < minimum
    if reason == "wheel-void":
        return bool(flags & WHEEL_VOID)
    return False


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_void_has_the_reason_its_frames_show(path: Path):
    r = replayed(path)
    headers = load(path).headers
    rules = {k: v for k, v in headers.items() if k.startswith("game.")} | {
        "wheel_model": headers.get("game.wheel_model", "")
    }
    before: Event | None = None
    for e in r.events:
        if e.type == "spin.void":
            assert _shown(e.data["reason"], e.data["frames"], before, rules), e.data
        before = e


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_capture_keeps_the_round_invariants(path: Path):
    check_invariants(replayed(path).events)


def check_invariants(events: list[Event]) -> None:
    """A result follows its spin's start and no-more-bets; one result or void per spin; a
    void keeps the round, a result moves it on by one."""
    open_spin: dict[str, Any] = {}
    rnd = 1
    for e in events:
        d = e.data
        if e.type == "spin.started":
            assert d["round"] == rnd
            open_spin = {"spin": d["spin"], "closed": False}
        elif e.type == "betting.closed":
            assert open_spin["spin"] == d["spin"]
            open_spin["closed"] = True
        elif e.type in ("spin.result", "spin.void"):
            assert open_spin and open_spin["spin"] == d["spin"] and d["round"] == rnd
            if e.type == "spin.result":
                assert open_spin["closed"]
                rnd += 1
            open_spin = {}


# -- the settings capture: a technician's session reads as events ----------------------------


def test_the_technicians_commands_and_replies_are_readable_events():
    r = replayed(SETTINGS)
    replies = [(e.data["command"], e.data["text"]) for e in of(r, "device.reply")]
    assert len(replies) == 75
    assert replies[:3] == [("*T D", "d 15"), ("*T C", "c 8465"), ("*T P", "p 50")]
    assert ("*V", "V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel (c) 03/12/18") in replies
    assert all(not c.startswith("?") for c, _ in replies)  # every reply matched its command
    assert not of(r, "spin.result") and not of(r, "spin.void") and not of(r, "alarm.raised")


# -- the synthetic captures: each shows what it was made to show ------------------------------

EXPECTED: dict[str, tuple[int, dict[str, int], dict[str, int]]] = {
    # capture: (results, voids by reason, alarms by kind)
    "cammegh-ss2/synthetic-normal.log": (3, {}, {}),
    "cammegh-ss2/synthetic-ball-direction.log": (2, {"ball-direction": 1}, {}),
    "cammegh-ss2/synthetic-ball-direction-no-ack.log": (2, {"ball-direction": 1}, {}),
    "cammegh-ss2/synthetic-launch-failure.log": (2, {"launch-failure": 1}, {"launch-failure": 1}),
    "cammegh-ss2/synthetic-ball-missing.log": (2, {"ball-missing": 1}, {}),
    "cammegh-ss2/synthetic-no-number.log": (2, {"no-winning-number": 1}, {}),
    "cammegh-ss2/synthetic-component-fault.log": (2, {"component-fault": 1}, {"device-fault": 1}),
    "cammegh-ss2/synthetic-fault-code.log": (2, {"component-fault": 1}, {"device-fault": 1}),
    "cammegh-ss2/synthetic-drop-to-idle.log": (2, {"component-fault": 1}, {"device-fault": 1}),
    "cammegh-ss2/synthetic-counter-jump.log": (2, {}, {"spin-counter": 1}),
    "cammegh-ss2/synthetic-impossible-state.log": (
        2,
        {"impossible-state": 1},
        {"impossible-state": 1, "number-out-of-sequence": 1},
    ),
    "cammegh-ss2/synthetic-repeat-number.log": (2, {}, {"repeat-number": 1}),
    "cammegh-ss2/synthetic-procedure-checks.log": (
        5,
        {},
        {"rotor-speed": 1, "rotor-not-alternated": 1, "spin-pace": 1},
    ),
    "cammegh-ss2/synthetic-double-zero.log": (4, {}, {}),
    "cammegh-m360/basic.log": (3, {"no-winning-number": 1}, {"repeat-number": 1}),
    "cammegh-m360/advanced.log": (4, {"wheel-void": 1, "ball-direction": 1}, {}),
    "cammegh-m360/extended.log": (2, {"ball-direction": 1, "ball-revolutions": 1}, {}),
    "cammegh-m360/extended-min4.log": (1, {"ball-revolutions": 1}, {}),
}


def test_every_synthetic_capture_is_listed():
    # correction.log is tests/test_corrections.py's (its refusals are the point of it)
    names = {
        f"{p.parent.name}/{p.name}"
        for p in ALL
        if not p.name.startswith("studio-") and p.name != "correction.log"
    }
    assert names == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_synthetic_capture(name: str):
    results, voids, kinds = EXPECTED[name]
    r = replayed(HERE / name)
    assert len(of(r, "spin.result")) == results
    assert Counter(e.data["reason"] for e in of(r, "spin.void")) == voids
    assert Counter(e.data["kind"] for e in of(r, "alarm.raised")) == kinds
    assert r.stats.malformed == 0 and r.stats.refused == []


def test_a_miss_spin_void_is_acknowledged_with_R_and_the_re_spin_settles_the_round():
    r = replayed(HERE / "cammegh-ss2/synthetic-ball-direction.log")
    (void,) = of(r, "spin.void")
    assert void.data["acknowledge"] is True
    assert ("*R", "OK") in [(e.data["command"], e.data["text"]) for e in of(r, "device.reply")]
    after = [e for e in of(r, "spin.result") if e.seq > void.seq]
    assert after[0].data["round"] == void.data["round"] and after[0].data["respin"] is True


def test_a_latched_fault_is_cleared_by_a_technician_after_the_self_test():
    r = replayed(HERE / "cammegh-ss2/synthetic-fault-code.log")
    faults = of(r, "device.fault")
    assert [f.data["code"] for f in faults] == [5, 5]  # during play, then the self-test
    assert faults[0].data["alarm"] == faults[1].data["alarm"]  # one latched alarm
    (cleared,) = of(r, "alarm.cleared")
    assert cleared.data["by"] == "tech1" and cleared.data["id"] == faults[0].data["alarm"]
    assert [e.seq > cleared.seq for e in of(r, "spin.result")] == [False, True]


def test_the_double_zero_capture_settles_00():
    r = replayed(HERE / "cammegh-ss2/synthetic-double-zero.log")
    pockets = [e.data["pocket"] for e in of(r, "spin.result")]
    assert "00" in pockets and "0" in pockets
    assert all(e.data["layout"] == "double-zero" for e in of(r, "spin.result"))


# -- no exception, whatever the input ----------------------------------------------------------


@cache
def _selftest_lines() -> tuple[Line, ...]:
    return tuple(load(SELFTEST).lines)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.integers(0, 18_000),
    length=st.integers(1, 600),
    drop=st.integers(2, 9),
    corrupt=st.lists(st.tuples(st.integers(0, 599), st.integers(0, 40), st.binary(max_size=3))),
)
def test_a_mangled_real_capture_never_raises(start: int, length: int, drop: int, corrupt: list):
    lines = list(_selftest_lines()[start : start + length])
    lines = [ln for i, ln in enumerate(lines) if i % drop]  # lost frames
    for i, pos, junk in corrupt:
        if lines and lines[i % len(lines)].kind == "rx":
            ln = lines[i % len(lines)]
            data = ln.data[:pos] + junk + ln.data[pos + len(junk) :]
            lines[i % len(lines)] = Line(ln.lineno, ln.time, ln.kind, ln.device, data)
    cap = Capture("mangled", dict(load(SETTINGS).headers), lines)
    r = replay([cap])
    check_invariants(r.events)
