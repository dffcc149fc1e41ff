"""What a device must hear of the game is the game's to declare (``Game.acknowledged``) and the
driver's to say (``Driver.void_acknowledgement``): the daemon's device set names neither the
event (roulette's ``spin.void``) nor the wheel's ``*R`` (issue 29)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from daemon.games.baccarat.table import BaccaratTable
from daemon.games.roulette.table import RouletteGame
from daemon.pipeline.listeners import Listeners
from daemon.runtime.devices import DeviceRunner, DeviceSet
from drivers.cammegh import SS2Driver, SS2Options


class _Wire:
    """The transport's write end: what the runner sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> bool:
        self.sent.append(data)
        return True


def _set(acknowledged: frozenset[str], ack: bool) -> tuple[DeviceSet, _Wire]:
    ds = DeviceSet(lambda _: None, lambda: None, None, lambda _: None, acknowledged=acknowledged)
    runner = DeviceRunner("wheel", SS2Driver(SS2Options(acknowledge_void=ack)), lambda _: None)
    runner.transport = wire = _Wire()
    ds.runners["wheel"] = runner
    return ds, wire


def ev(type_: str, **data: Any) -> SimpleNamespace:
    return SimpleNamespace(type=type_, data=data)


def test_the_games_acknowledged_void_reaches_the_wheel_through_the_listeners():
    ds, wire = _set(RouletteGame.acknowledged, ack=True)
    listeners = Listeners()
    listeners.add(ds.on_events, ds.followed)
    listeners([ev("spin.void", device="wheel", acknowledge=False)])
    assert wire.sent == []  # the table did not ask for it
    listeners([ev("spin.void", device="wheel", acknowledge=True)])
    assert wire.sent == [b"*R\r\n"]
    listeners([ev("device.command", device="wheel", command="*V")])
    assert wire.sent == [b"*R\r\n", b"*V\r\n"]


def test_a_driver_without_an_acknowledgement_and_a_game_without_one_send_nothing():
    ds, wire = _set(RouletteGame.acknowledged, ack=False)  # the SS2 option is off: None
    ds.on_events([ev("spin.void", device="wheel", acknowledge=True)])
    assert wire.sent == []
    ds, wire = _set(BaccaratTable.acknowledged, ack=True)
    assert "spin.void" not in ds.followed
    ds.on_events([ev("spin.void", device="wheel", acknowledge=True)])
    assert wire.sent == []
