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
from tabled_client.events import HeldCard, check_data

from daemon.events import draft


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
