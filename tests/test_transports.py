"""Device start-up: every transport kind a driver may name has a factory, and a driver
whose kind none opens is refused when the config loads, naming the device and the kinds."""

from __future__ import annotations

import sys
import textwrap
import typing
from typing import get_args

import pytest

import drivers.base
from daemon.runtime.config import ConfigError, load
from daemon.runtime.transports import FACTORIES, KINDS, transport_problem
from drivers.base import TransportKind, load_drivers


def test_every_transport_kind_has_a_factory_for_its_device_and_its_simulator():
    assert set(KINDS) == set(get_args(TransportKind))
    for kind in KINDS:
        assert (kind, False) in FACTORIES, f"no factory opens a {kind} device"
        assert (kind, True) in FACTORIES, f"no factory opens a simulated {kind} device"
    assert {k for k, _ in FACTORIES} == set(KINDS), "a factory for a kind no driver may name"


@pytest.mark.parametrize("name", sorted(load_drivers()))
def test_every_installed_driver_can_be_opened_real_and_simulated(name):
    cls = load_drivers()[name]
    assert transport_problem(cls, "/dev/serial/by-id/x") is None
    assert transport_problem(cls, "sim") is None


def _install_driver(tmp_path, monkeypatch, body: str) -> None:
    """A third party's driver, installed as pip would: a module and an entry point."""
    (tmp_path / "acme_drivers.py").write_text(textwrap.dedent(body))
    info = tmp_path / "acme_drivers-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-drivers\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tabled.drivers]\nacme = acme_drivers:AcmeDriver\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(drivers.base, "_registry", None)  # read the entry points again
    monkeypatch.delitem(sys.modules, "acme_drivers", raising=False)


CONFIG = """
[table]
id = "bac-01"
game = "baccarat"

[[devices]]
name = "reader"
driver = "acme"
port = "{port}"
"""


def _problems(tmp_path, port: str) -> list[str]:
    p = tmp_path / "t.toml"
    p.write_text(CONFIG.format(port=port))
    with pytest.raises(ConfigError) as e:
        load(p, env={})
    assert str(e.value).startswith("t.toml: ")
    return e.value.problems


ACME = """
from drivers.base import Driver, Protocol

class _P(Protocol):
    def feed(self, data, now):
        return []

class AcmeDriver(Driver):
    name = "acme"
    transport = {kind!r}

    def protocol(self):
        return _P()
"""


@pytest.mark.parametrize("port", ["/dev/ttyACM0", "sim"])
def test_a_driver_of_an_unknown_transport_kind_is_refused_by_the_config(
    tmp_path, monkeypatch, port
):
    _install_driver(tmp_path, monkeypatch, ACME.format(kind="bluetooth"))
    assert _problems(tmp_path, port) == [
        "devices[0].driver: driver 'acme' uses transport 'bluetooth', which tabled cannot "
        "open (transports: gpio, serial, usb)"
    ]


def test_a_usb_driver_without_its_transport_is_refused_by_the_config(tmp_path, monkeypatch):
    _install_driver(tmp_path, monkeypatch, ACME.format(kind="usb"))
    assert _problems(tmp_path, "usb:1234:5678") == [
        "devices[0].driver: driver 'acme' uses transport 'usb' but has no usb_transport()"
    ]


def test_a_third_party_serial_driver_passes_the_transport_check(tmp_path, monkeypatch):
    _install_driver(tmp_path, monkeypatch, ACME.format(kind="serial"))
    p = tmp_path / "t.toml"
    p.write_text(CONFIG.format(port="/dev/ttyACM0"))
    assert load(p, env={}).device_options["reader"] is not None


def test_every_simulator_the_daemon_opens_declares_resume():
    """``daemon/runtime/transports.py`` calls ``resume`` on every simulator it opens, never probing
    for it: each is a :class:`drivers.sim.base.Simulator` (the GPIO panel's dealer is the
    panel's own, not opened there)."""
    from importlib import import_module

    from drivers.sim import SIMULATORS
    from drivers.sim.base import Simulator

    for name, module in sorted(SIMULATORS.items()):
        if load_drivers()[name].transport == "gpio":
            continue
        made = typing.get_type_hints(import_module(module).simulate)["return"]
        assert issubclass(made, Simulator), f"{name}: {made.__name__} is no Simulator"
