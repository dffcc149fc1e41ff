"""The latched device-fault alarm every game with a faulting device shares
(``daemon.table.device_fault``): one alarm per device until a technician clears it,
every report a ``device.fault`` event naming that alarm."""

from __future__ import annotations

from daemon.games.sicbo.table import SicBoGame, SicBoRules
from daemon.table import Decision, device_fault
from tests.table_harness import TableHarness, of, types


def _harness() -> TableHarness:
    return TableHarness(SicBoGame(SicBoRules()), ["shaker", "wheel"])


def _report(h: TableHarness, device: str, code: int | None, meaning: str, **kw) -> str:
    """One report decided and applied, as the pipeline would."""
    d = Decision(base=h.state, fold=h.table.apply)
    alarm = device_fault(h.state, d, device, code, meaning, rule="R", action="fix it", **kw)
    for x in d.drafts:
        h.state = h.table.apply(h.state, x.type, x.data)
        h.events.append((x.type, x.data))
    return alarm


def test_a_fault_latches_one_alarm_per_device_and_each_report_names_it():
    h = _harness()
    first = _report(h, "shaker", 3, "motor stalled", round=7)
    again = _report(h, "shaker", 4, "lid opened")
    other = _report(h, "wheel", None, "rim sensor", frames=["*X;4"])
    assert first == again != other
    assert types(h.events) == [
        "alarm.raised",
        "device.fault",
        "device.fault",
        "alarm.raised",
        "device.fault",
    ]
    raised = of(h.events, "alarm.raised")
    assert [(a["kind"], a["device"], a["message"]) for a in raised] == [
        ("device-fault", "shaker", "shaker: motor stalled (code 3)"),
        ("device-fault", "wheel", "wheel: rim sensor"),  # no code: none in the message
    ]
    assert raised[1]["frames"] == ["*X;4"] and "frames" not in raised[0]
    faults = of(h.events, "device.fault")
    assert [f["alarm"] for f in faults] == [first, first, other]
    assert faults[0]["round"] == 7 and "round" not in faults[1]


def test_two_reports_in_one_decision_raise_one_alarm():
    h = _harness()
    d = Decision(base=h.state, fold=h.table.apply)
    a = device_fault(h.state, d, "shaker", 1, "jam", rule="R", action="fix it")
    b = device_fault(h.state, d, "shaker", 1, "jam", rule="R", action="fix it")
    assert a == b and [x.type for x in d.drafts] == ["alarm.raised", "device.fault", "device.fault"]


def test_once_cleared_the_next_fault_latches_a_new_alarm():
    h = _harness()
    first = _report(h, "shaker", 3, "motor stalled")
    h.cmd("alarm.clear", role="technician", id=first, reason="motor replaced")
    assert h.refused is None and first not in h.state.alarms
    assert _report(h, "shaker", 3, "motor stalled") != first
