"""Simulated devices on ptys (and a fake USB backend), for ``port = "sim"``.

A driver finds its simulator here by its name, so no driver module imports its
simulator (the simulators import their protocol's constants: that way round only).
Each entry names the simulator's module, which has two names: ``Options``, the typed
``[devices.sim]`` table (a :class:`drivers.sim.options.SimOptions`, checked key by key
when the config loads), and ``simulate(driver_options, options)``, the factory.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

import msgspec

SIMULATORS: dict[str, str] = {
    "shoe-line": "drivers.sim.shoe",
    "cammegh-ss2": "drivers.sim.wheel",
    "cammegh-m360": "drivers.sim.m360",
    "hid-scanner": "drivers.sim.hid_scanner",
    "shuffler-ref": "drivers.sim.shuffler",
    "dice-ref": "drivers.sim.dice",
    "tile-line": "drivers.sim.tiles",
    "gpio-panel": "drivers.sim.gpio_panel",
}


def _module(driver: str) -> ModuleType:
    name = SIMULATORS.get(driver)
    if name is None:
        raise NotImplementedError(f"driver {driver!r} has no simulator")
    return import_module(name)


def options_type(driver: str) -> type[msgspec.Struct] | None:
    """The typed ``[devices.sim]`` of ``driver``'s simulator, None when it has none here."""
    if driver not in SIMULATORS:
        return None
    cls: type[msgspec.Struct] = _module(driver).Options
    return cls


def simulator_for(driver: str, driver_options: Any, sim: Any) -> Any:
    """The simulator of ``driver`` built from its options and ``[devices.sim]`` (a table, or
    its ``Options`` already); a bad option is a ``msgspec.ValidationError`` naming its key."""
    module = _module(driver)
    options = sim if isinstance(sim, module.Options) else msgspec.convert(sim, module.Options)
    return module.simulate(driver_options, options)
