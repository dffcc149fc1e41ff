"""check_data's one-conversion shortcut refuses what the full steps refuse.

``msgspec.convert`` on Python objects is looser than converting the data to its JSON
builtins and back: it takes a ``Decimal`` for a ``float`` (which would then be sealed
and published as a JSON string) and passes an instance of a nested Struct through
without checking its fields. A first-party game never builds such data; a third-party
game could, and the daemon may publish only what the schema says.
"""

from __future__ import annotations

from decimal import Decimal

import msgspec
import pytest
from tabled_client import events
from tabled_client.events import HeldCard, RoadsData, check_data

from daemon.journal.events import draft


def test_a_decimal_where_the_schema_says_float_is_refused_before_it_is_sealed():
    data = {"device": "wheel", "gap": Decimal("1.5"), "frame": "*X:00:03"}
    with pytest.raises(msgspec.ValidationError):
        check_data("wheel.resync", data)
    with pytest.raises(msgspec.ValidationError):
        draft("wheel.resync", data)  # what a game's decide builds its events with
    assert check_data("wheel.resync", {**data, "gap": 1.5}).gap == 1.5


def test_a_struct_inside_the_data_is_checked_like_its_json():
    bad = HeldCard(card=None, device=7, face_up="yes", claimed_box=None, code="x")  # type: ignore[arg-type]
    data = {"shoe": 1, "hand": 2, "reason": "r", "alarm": "a", "held": [bad]}
    with pytest.raises(msgspec.ValidationError):
        check_data("table.paused", data)


def _hand_result() -> dict:
    """A baccarat ``hand.result``'s data with its scoreboard squares, as the shoe builds it."""
    return {
        "shoe": 1,
        "hand": 2,
        "demo": False,
        "winner": "banker",
        "player": ["KH", "QD"],
        "banker": ["9S", "KC"],
        "player_total": 0,
        "banker_total": 9,
        "roads": {
            "rows": 6,
            "hands": 2,
            "bead_plate": [0, 1, "banker"],
            "big_road": [0, 0, "banker", 0],
            "big_eye_boy": None,
            "small_road": None,
            "cockroach_pig": None,
            "next": {"player": {"big_eye_boy": None}, "banker": {"big_eye_boy": None}},
        },
    }


def _outcome(f, *args):  # type: ignore[no-untyped-def]
    try:
        return ("ok", f(*args))
    except Exception as e:
        # hand.result is one Struct per game: check_data adds which it was refused as
        return (type(e).__name__, str(e).split(" (as ")[0])


def test_a_nested_struct_given_as_its_dict_is_checked_in_one_conversion_and_in_full():
    """``roads`` (a nested Struct) takes the one conversion as a plain dict: its fields are
    checked there exactly as the steps check them."""
    cls = events.DATA["hand.result"]
    data = _hand_result()
    assert check_data("hand.result", data).roads.big_road == [0, 0, "banker", 0]
    fields, guarded = events._quick[cls]
    assert "roads" in fields and dict(guarded)["roads"] == (dict,)
    refused = [
        {**data["roads"], "rows": "6"},  # a wrong type
        {**data["roads"], "bead_plate": [0, 1]},  # too short
        {k: v for k, v in data["roads"].items() if k != "hands"},  # one missing
        {**data["roads"], "next": {"player": {"big_eye_boy": "green"}}},  # not a mark
        {**data["roads"], "rows": object()},  # what JSON cannot carry
        {**data["roads"], "rows": Decimal(6)},
    ]
    for roads in refused:
        d = {**data, "roads": roads}
        with pytest.raises((TypeError, msgspec.ValidationError)):
            check_data("hand.result", d)
        assert _outcome(check_data, "hand.result", d) == _outcome(
            events._in_steps, cls, "hand.result", d
        )
    # passed or refused alike by both: bytes (base64 text to the steps), a tuple, a key
    # the Struct does not name (neither checks it), an instance of a nested Struct
    for roads in (
        {**data["roads"], "big_road": (0, 0, b"banker", 0)},
        {**data["roads"], "big_road": (0, 0, "banker", 0)},
        {**data["roads"], "colour": "red"},
    ):
        d = {**data, "roads": roads}
        assert _outcome(check_data, "hand.result", d) == _outcome(
            events._in_steps, cls, "hand.result", d
        )


def test_a_nested_struct_given_as_an_instance_is_checked_like_its_json():
    bad = RoadsData(
        rows="six",  # type: ignore[arg-type]
        hands=2,
        bead_plate=[0, 1, "banker"],
        big_road=[0, 0, "banker", 0],
        big_eye_boy=None,
        small_road=None,
        cockroach_pig=None,
        next={},
    )
    with pytest.raises(msgspec.ValidationError):
        check_data("hand.result", {**_hand_result(), "roads": bad})
    good = msgspec.convert(_hand_result()["roads"], RoadsData)
    assert check_data("hand.result", {**_hand_result(), "roads": good}).roads == good


def test_a_loose_field_is_left_out_of_the_one_conversion():
    """A loose field (``faces``: ``list[Any]``) the data leaves out is the same to both paths;
    named, the steps check it (a ``Decimal`` in a float is refused either way). A class with
    a required loose field takes the steps for every event, without the test first."""
    cls = events.DATA["alarm.raised"]
    data = {
        "id": "A1",
        "kind": "journal-failure",
        "message": "m",
        "rule": "r",
        "action": "a",
        "severity": "supervisor",
        "device": None,
    }
    fields, _ = events._quick_fields(cls)
    assert "faces" not in fields and "kind" in fields and "seconds" in fields
    assert check_data("alarm.raised", data).kind == "journal-failure"
    for bad in ({"seconds": Decimal("1.5")}, {"faces": [object()]}, {"kind": 3}):
        d = {**data, **bad}
        with pytest.raises((TypeError, msgspec.ValidationError)):
            check_data("alarm.raised", d)
        assert _outcome(check_data, "alarm.raised", d) == _outcome(
            events._in_steps, cls, "alarm.raised", d
        )
    assert check_data("alarm.raised", {**data, "seconds": 1.5}).seconds == 1.5
    assert events._quick_fields(events.DATA["operator.command"]) == (frozenset(), ())  # args


class _Float(float):
    """A float's subclass (numpy's float64 is one): not a float to ``type(v) in ...``."""


def test_a_float_field_takes_the_one_conversion_only_with_a_float_an_int_or_none():
    """A ``float`` (``| None``) field is checked in the one conversion when it holds a value
    that is its own JSON form; any other value takes the steps, and both agree on all."""
    cls = events.DATA["wheel.resync"]
    fields, guarded = events._quick_fields(cls)
    assert {"gap", "mono"} <= fields and dict(guarded)["gap"] == (float, int, type(None))
    data = {"device": "wheel", "gap": 1.5, "frame": "*X:00:03", "mono": 12.0}
    for gap, ok in (
        (1.5, True),
        (2, True),
        (None, True),
        (float("nan"), True),
        (Decimal("1.5"), False),
        (True, False),
        ("1.5", False),
        (_Float(1.5), False),  # to_builtins refuses it
        ([1.5], False),
    ):
        for key in ("gap", "mono"):
            d = {**data, key: gap}
            got = _outcome(check_data, "wheel.resync", d)
            assert got == _outcome(events._in_steps, cls, "wheel.resync", d), (key, gap)
            if key == "gap":
                assert (got[0] == "ok") == ok, gap


class _Str(str):
    pass


class _Int(int):
    pass


def test_what_the_seal_cannot_encode_is_refused_where_the_event_is_drafted():
    """A subclass of a builtin or a read-only mapping: ``convert`` took them, the steps and
    the seal's encoder refuse them. Refused at the draft, as ``daemon/journal/events.py`` promises,
    not by a commit that stops the daemon (round 4's review, finding 5)."""
    from types import MappingProxyType

    good = _hand_result()
    for spoil in (
        lambda d: d | {"winner": _Str(d["winner"])},
        lambda d: d | {"roads": d["roads"] | {"rows": _Int(6)}},
        lambda d: d | {"roads": d["roads"] | {"next": MappingProxyType(d["roads"]["next"])}},
    ):
        bad = spoil(dict(good))
        with pytest.raises((TypeError, msgspec.ValidationError)):
            events._in_steps(events.DATA["hand.result"], "hand.result", bad)
        with pytest.raises((TypeError, msgspec.ValidationError)):
            check_data("hand.result", bad)
        with pytest.raises((TypeError, msgspec.ValidationError)):
            draft("hand.result", bad)
    assert check_data("hand.result", good) is not None
