"""Every simulator's ``[devices.sim]`` is a typed struct: a bad option in a config is
refused when it loads, naming the file, the key and what is wrong (one case per simulator)."""

from __future__ import annotations

import msgspec
import pytest

from daemon.runtime.config import ConfigError, load
from drivers.base import driver_class
from drivers.sim import SIMULATORS, options_type
from drivers.sim.options import SimOptions

CONFIG = """
[table]
id = "t-01"
game = "baccarat"

[[devices]]
name = "sim"
driver = "{driver}"
port = "sim"
{options}
[devices.sim]
{sim}
"""

#: driver options a simulated device needs before its simulator can be built
NEEDS = {
    "hid-scanner": "[devices.options]\nvendor_id = 0x05E0\nproduct_id = 0x1200\n",
    "cammegh-m360": '[devices.options]\nlevel = "advanced"\n',
    "gpio-panel": "[devices.options]\nclose_betting = 17\n",
}

#: driver → (a [devices.sim] line, the one problem the config must report), one per simulator
BAD = {
    "shoe-line": ('errors = ["flip"]', "devices[0].sim: errors: unknown dealer error 'flip'"),
    "hid-scanner": ("seed = -1", "devices[0].sim.seed: expected an integer >= 0, got -1"),
    "cammegh-ss2": ("durations = { 9 = 1.0 }", "devices[0].sim: durations: no state '9'"),
    "cammegh-m360": ('faults = ["gremlins"]', "devices[0].sim: faults: unknown Mercury fault"),
    "shuffler-ref": (
        'follow_table = "yes"',
        'devices[0].sim.follow_table: expected true or false, got "yes"',
    ),
    "dice-ref": ("pace = 1e999", "devices[0].sim.pace: expected a number <= 86400.0, got inf"),
    "tile-line": (
        "tiles = { 1p = -2 }",
        "devices[0].sim.tiles.1p: expected an integer >= 0, got -2",
    ),
    "gpio-panel": (
        "close_betting_after = 0",
        "devices[0].sim.close_betting_after: expected a number > 0",
    ),
}


def _problems(tmp_path, driver: str, sim: str) -> list[str]:
    p = tmp_path / "t.toml"
    p.write_text(CONFIG.format(driver=driver, options=NEEDS.get(driver, ""), sim=sim))
    with pytest.raises(ConfigError) as e:
        load(p, env={})
    assert str(e.value).startswith("t.toml: ")
    return e.value.problems


def test_every_simulator_has_a_bad_option_case_here():
    assert set(SIMULATORS) | {"gpio-panel"} == set(BAD)


@pytest.mark.parametrize("driver", sorted(BAD))
def test_a_bad_simulator_option_names_the_file_the_key_and_what(tmp_path, driver):
    line, said = BAD[driver]
    got = _problems(tmp_path, driver, line)
    assert len(got) == 1 and got[0].startswith(said), got


@pytest.mark.parametrize("driver", sorted(BAD))
def test_a_misspelt_simulator_option_is_refused_with_the_known_keys(tmp_path, driver):
    (got,) = _problems(tmp_path, driver, "sed = 3")
    assert got.startswith("devices[0].sim.sed: unknown key (known keys: "), got
    assert "seed" in got or "shoe_present" in got


@pytest.mark.parametrize("driver", sorted(SIMULATORS))
def test_each_simulator_declares_typed_options(driver):
    cls = options_type(driver)
    assert cls is not None and issubclass(cls, SimOptions)
    assert (
        msgspec.convert({}, cls) == cls()
    )  # every option has a default: `port = "sim"` alone works
    assert driver_class(driver).transport in ("serial", "usb", "gpio")  # the panel: mock pins


def test_a_good_simulator_table_loads(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(
        CONFIG.format(driver="cammegh-ss2", options="", sim="seed = 4\ndurations = { 3 = 2.5 }")
    )
    assert load(p, env={}).config.devices[0].sim == {"seed": 4, "durations": {"3": 2.5}}
