"""Every registered driver has at least one capture replayed as a test (``tests/captures/<driver>/``).

A driver without one has no regression test at its protocol's real bytes; the
capture tests themselves are collected by ``tests/conftest.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers.base import load_drivers

CAPTURES = Path(__file__).parent / "captures"


@pytest.mark.parametrize("driver", sorted(load_drivers()))
def test_the_driver_has_a_capture_with_expected_events(driver):
    logs = sorted((CAPTURES / driver).glob("*.log"))
    assert logs, f"driver {driver!r} has no capture in tests/captures/{driver}/ (docs/captures.md)"
    for log in logs:
        header = [x for x in log.read_text().splitlines() if x.startswith("# driver:")]
        assert header == [f"# driver: {driver}"], f"{log.name} is not a {driver} capture"
        expected = log.with_name(log.name[: -len(".log")] + ".expected.jsonl")
        events = [json.loads(x) for x in expected.read_text().splitlines()]
        assert events, f"{expected.name} holds no events"


def test_the_studio_captures_show_their_devices():
    """The two recorded from the studio's simulators show what each device does."""
    hid = CAPTURES / "hid-scanner" / "studio-trace.expected.jsonl"
    types = [json.loads(x)["type"] for x in hid.read_text().splitlines()]
    assert types.count("card.dealt") >= 10 and "hand.result" in types
    gpio = CAPTURES / "gpio-panel" / "studio-trace.expected.jsonl"
    evs = [json.loads(x) for x in gpio.read_text().splitlines()]
    assert {"shoe.removed", "shoe.inserted"} <= {e["type"] for e in evs}
    assert any(e["type"] == "operator.command" and e["data"]["source"] == "button" for e in evs)
