"""Simulated devices on ptys (and a fake USB backend), for ``port = "sim"``.

A driver finds its simulator here by its name, so no driver module imports its
simulator (the simulators import their protocol's constants: that way round only).
Each entry names a ``simulate(driver_options, sim_options)`` factory.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

SIMULATORS: dict[str, str] = {
    "shoe-line": "drivers.sim.shoe:simulate",
    "cammegh-ss2": "drivers.sim.wheel:simulate",
    "cammegh-m360": "drivers.sim.m360:simulate",
    "hid-scanner": "drivers.sim.hid_scanner:simulate",
    "shuffler-ref": "drivers.sim.shuffler:simulate",
    "dice-ref": "drivers.sim.dice:simulate",
    "tile-line": "drivers.sim.tiles:simulate",
}


def simulator_for(driver: str, driver_options: Any, sim: dict[str, Any]) -> Any:
    """The simulator of ``driver`` built from its options and ``[devices.sim]``."""
    target = SIMULATORS.get(driver)
    if target is None:
        raise NotImplementedError(f"driver {driver!r} has no simulator")
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)(driver_options, sim)
