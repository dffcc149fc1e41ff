"""Every registered driver has at least one capture replayed as a test (``tests/captures/<driver>/``).

A driver without one has no regression test at its protocol's real bytes; the
capture tests themselves are collected by ``tests/conftest.py``. Every folder of
``tests/captures/`` is a driver's (each capture's ``# driver:`` header names it) or a
game's (``# game:`` names it: a game's own captures, read by its own tests), as
``docs/captures.md`` says.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon import games
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


def misfiled(root: Path, drivers: set[str], game_names: set[str]) -> list[str]:
    """The capture folders that are neither a driver's nor a game's, and the captures whose
    header does not name the folder they are in."""
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "._"):
        if folder.name in drivers:
            key = "driver"
        elif folder.name in game_names:
            key = "game"
        else:
            out.append(f"{folder.name}/: no driver or game has this name")
            continue
        for log in sorted(folder.glob("*.log")):
            if f"# {key}: {folder.name}" not in log.read_text().splitlines():
                out.append(f"{folder.name}/{log.name}: no '# {key}: {folder.name}' header")
    return out


def test_every_capture_folder_is_a_driver_s_or_a_game_s():
    bad = misfiled(CAPTURES, set(load_drivers()), set(games.names()))
    assert not bad, "tests/captures/ (docs/captures.md, where a capture goes):\n" + "\n".join(bad)


def test_the_folder_check_can_fail(tmp_path: Path):
    for folder, header in [
        ("shoe-line", "# driver: shoe-line"),
        ("blackjack", "# driver: shoe-line\n# game: blackjack"),
        ("war", "# game: war"),
        ("dice-ref", "# driver: shoe-line"),
    ]:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.log").write_text(header + "\n")
    got = misfiled(tmp_path, {"shoe-line", "dice-ref"}, {"blackjack", "baccarat"})
    assert got == [
        "dice-ref/a.log: no '# driver: dice-ref' header",
        "war/: no driver or game has this name",
    ]
