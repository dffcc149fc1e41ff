"""Config: every problem named with file, key path and reason; defaults resolved."""

from __future__ import annotations

import pytest

from daemon.runtime.config import ConfigError, effective, load

GOOD = """
[table]
id = "bac-01"
game = "baccarat"

[game]
decks = 6
start_burn = "decks"

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "usb:0403:6001:A1B2"
[devices.options]
encoding = "suit-rank"
"""


def problems(tmp_path, text: str) -> list[str]:
    p = tmp_path / "t.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load(p)
    assert str(e.value).startswith("t.toml: ")
    return e.value.problems


def test_good_config_loads_with_defaults_and_paths(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(GOOD)
    s = load(p, env={})
    assert s.table == "bac-01" and s.game.decks == 6 and s.game.cut_card == 14
    assert s.device_options["shoe"].encoding == "suit-rank"
    assert s.state_dir == (tmp_path / ".." / "state" / "bac-01").resolve()
    assert s.journal_path == s.state_dir / "journal.sqlite"
    assert s.control_endpoint == f"ipc://{s.state_dir / 'control.sock'}"
    eff = effective(s)
    assert eff["game"]["big_small_hands"] == 35 and eff["bus"]["publish"] == "tcp://127.0.0.1:7700"
    s2 = load(
        p, env={"TABLED_STATE_DIR": "/var/lib/tabled/x", "TABLED_RUNTIME_DIR": "/run/tabled/x"}
    )
    assert str(s2.journal_path) == "/var/lib/tabled/x/journal.sqlite"
    assert s2.control_endpoint == "ipc:///run/tabled/x/control.sock"


def test_every_problem_is_reported_at_once(tmp_path):
    got = problems(
        tmp_path, GOOD.replace('port = "usb:0403:6001:A1B2"', 'baudrate = "fast"\nspeed = 3')
    )
    assert 'devices[0].baudrate: expected an integer, got "fast"' in got
    assert "devices[0].port: missing required key" in got
    assert any(p.startswith("devices[0].speed: unknown key") for p in got)
    assert len(got) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("decks = 6", "decks = 20"), "game.decks: expected an integer <= 12, got 20"),
        (
            ('start_burn = "decks"', 'start_burn = "sometimes"'),
            "game.start_burn: expected a string matching",
        ),
        (("decks = 6", "deck = 6"), "game.deck: unknown key"),
        (('game = "baccarat"', 'game = "poker"'), 'table.game: unknown game "poker"'),
        (
            ('driver = "shoe-line"', 'driver = "shoe-lime"'),
            "devices[0].driver: unknown driver 'shoe-lime'",
        ),
        (
            ('encoding = "suit-rank"', 'encoding = "morse"'),
            'devices[0].options.encoding: "morse" is not one of',
        ),
        (('id = "bac-01"', 'id = "bad id!"'), "table.id: expected a string matching"),
        (('[game]\ndecks = 6\nstart_burn = "decks"\n', ""), None),
    ],
)
def test_bad_values_name_the_key(tmp_path, change, message):
    if message is None:  # the [game] section is optional: every house rule has a default
        p = tmp_path / "t.toml"
        p.write_text(GOOD.replace(*change))
        assert load(p).game.decks == 8
        return
    got = problems(tmp_path, GOOD.replace(*change))
    assert any(message in p for p in got), got


def test_a_section_of_the_wrong_kind(tmp_path):
    got = problems(
        tmp_path, "game = 3\n" + GOOD.replace('[game]\ndecks = 6\nstart_burn = "decks"\n', "")
    )
    assert "game: expected a table, got 3" in got


def test_toml_syntax_and_missing_file(tmp_path):
    got = problems(tmp_path, "[table\nid=1")
    assert got[0].startswith("not valid TOML")
    with pytest.raises(ConfigError, match="file not found"):
        load(tmp_path / "nope.toml")


def test_duplicate_device_names_and_cut_card_bounds(tmp_path):
    dup = GOOD + '\n[[devices]]\nname = "shoe"\ndriver = "shoe-line"\nport = "/dev/x"\n'
    assert any('"shoe" is used by another device' in p for p in problems(tmp_path, dup))
    got = problems(tmp_path, GOOD.replace("decks = 6", "decks = 6\ncut_card = 400"))
    assert any("cut_card (400) must be fewer" in p for p in got)


def test_the_shipped_configs_are_valid():
    from pathlib import Path

    for p in sorted((Path(__file__).parents[1] / "config").glob("*.toml")):
        load(p)


def test_the_shipped_configs_can_all_run_at_once():
    """Each example has its own table id (so its own state directory and sockets) and its
    own TCP ports: two demos side by side do not collide (issue 33: blackjack.toml and
    roulette.toml both bound 7710/7711)."""
    from pathlib import Path

    from daemon.ctl import shipped

    owner: dict[str, str] = {}
    for name in shipped.EXAMPLES:
        s = load(Path(__file__).parents[1] / "config" / f"{name}.toml")
        c = s.config
        eps = [c.bus.publish, c.bus.replay, s.control_endpoint, *s.role_endpoints.values()]
        if c.metrics.port:
            eps.append(f"tcp://{c.metrics.address}:{c.metrics.port}")
        for ep in [f"table {s.table}", *eps]:
            key = ep.rsplit(":", 1)[-1] if ep.startswith("tcp://") else ep
            assert key not in owner, f"{name}.toml and {owner[key]}.toml both use {ep}"
            owner[key] = name


WHEEL = """
[table]
id = "r"
game = "roulette"
[game]
wheel_model = "{model}"
{rule}
[[devices]]
name = "wheel"
driver = "{driver}"
port = "/dev/ttyS0"
{options}
"""


@pytest.mark.parametrize(
    ("driver", "options", "why"),
    [
        ("cammegh-ss2", "", "the SS2 status frame has no such field"),
        ("cammegh-m360", '[devices.options]\nlevel = "advanced"', 'it is set to "advanced"'),
    ],
)
def test_min_ball_revolutions_is_refused_where_the_wheel_cannot_report_them(
    tmp_path, driver, options, why
):
    """An SS2 reports no revolutions: the rule would be silently ignored, so config check refuses it."""
    model = "ss2" if driver == "cammegh-ss2" else "m360"
    text = WHEEL.format(
        model=model, rule="min_ball_revolutions = 4", driver=driver, options=options
    )
    [problem] = problems(tmp_path, text)
    assert problem.startswith("game.min_ball_revolutions: devices[0] (" + driver + ")")
    assert why in problem and "remove the key" in problem
    # without the key the same table loads; on an extended-level Mercury the key is applied
    p = tmp_path / "ok.toml"
    p.write_text(WHEEL.format(model=model, rule="", driver=driver, options=options))
    assert load(p, env={}).table == "r"
    p.write_text(
        WHEEL.format(
            model="m360",
            rule="min_ball_revolutions = 4",
            driver="cammegh-m360",
            options='[devices.options]\nlevel = "extended"',
        )
    )
    assert load(p, env={}).game.min_ball_revolutions == 4


# -- values no device can live with (issue 18, also) ---------------------------------------------

SIM_DEVICE = """
[[devices]]
name = "{name}"
driver = "{driver}"
port = "sim"
[devices.sim]
{key} = {value}
"""


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("reconnect_max", "inf", "devices[0].reconnect_max: expected a number <= 3600.0, got inf"),
        ("stale_after", "inf", "devices[0].stale_after: expected a number <= 86400.0, got inf"),
        ("reconnect_max", "nan", "devices[0].reconnect_max: expected a number"),
    ],
)
def test_an_endless_device_timing_is_refused(tmp_path, key, value, message):
    got = problems(tmp_path, GOOD.replace('port = "usb', f'{key} = {value}\nport = "usb'))
    assert any(p.startswith(message) for p in got), got


#: (simulator, one of its numbers, a value it must refuse): every simulator has one at least
SIM_NUMBERS = [
    ("shoe-line", "pace", "-1"),
    ("shoe-line", "pace", "inf"),
    ("shoe-line", "error_every", "-2"),
    ("dice-ref", "pace", "-1"),
    ("shuffler-ref", "shuffle_time", "-1"),
    ("cammegh-ss2", "period", "nan"),
    ("cammegh-ss2", "pace", "-0.5"),
    ("cammegh-m360", "period", "-1"),
    ("hid-scanner", "pace", "-1"),
    ("tile-line", "pace", "-1"),
    ("gpio-panel", "close_betting_after", "-1"),
]


#: the driver options a simulator's device cannot go without
SIM_DRIVER_OPTIONS = {
    "hid-scanner": "vendor_id = 0x05E0\nproduct_id = 0x1200",
    "cammegh-m360": 'level = "extended"',
    "gpio-panel": "close_betting = 17",
}


def test_every_simulator_has_a_number_refused_here():
    """A new simulator is added here with its numbers (``docs/architecture.md``, add a driver)."""
    from drivers.sim import SIMULATORS

    assert {d for d, _, _ in SIM_NUMBERS} == set(SIMULATORS)


@pytest.mark.parametrize(("driver", "key", "value"), SIM_NUMBERS)
def test_every_simulators_numbers_are_checked(tmp_path, driver, key, value):
    """A simulator told ``pace = -1`` would spin; ``inf``, never wake: refused at load."""
    text = GOOD.replace('name = "shoe"', 'name = "real"') + SIM_DEVICE.format(
        name="sim", driver=driver, key=key, value=value
    )
    if driver in SIM_DRIVER_OPTIONS:
        text += f"[devices.options]\n{SIM_DRIVER_OPTIONS[driver]}\n"
    got = problems(tmp_path, text)
    assert any(p.startswith(f"devices[1].sim.{key}: expected a") for p in got), got


def test_options_that_are_no_table_are_reported_once(tmp_path):
    got = problems(tmp_path, GOOD.replace("[devices.options]", "options = 5\n[devices.x]"))
    assert [p for p in got if p.startswith("devices[0].options")] == [
        "devices[0].options: expected a table, got 5"
    ]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (
            "publish",
            "tcp://127.0.0.1:99999",
            'bus.publish: port 99999 in "tcp://127.0.0.1:99999" is not a TCP port',
        ),
        ("replay", "tcp://127.0.0.1:0", "bus.replay: port 0"),
        ("publish", "tcp://127.0.0.1", 'bus.publish: "tcp://127.0.0.1" needs a host and a port'),
        ("replay", "udp://127.0.0.1:7701", 'bus.replay: "udp://127.0.0.1:7701" is not an endpoint'),
    ],
)
def test_a_bad_endpoint_is_refused_with_its_key(tmp_path, key, value, said):
    cfg = tmp_path / "t.toml"
    cfg.write_text(f'[table]\nid = "t"\ngame = "baccarat"\n[bus]\n{key} = "{value}"\n')
    with pytest.raises(ConfigError) as e:
        load(cfg)
    assert said in str(e.value)


def test_good_endpoints_pass(tmp_path):
    cfg = tmp_path / "t.toml"
    cfg.write_text(
        '[table]\nid = "t"\ngame = "baccarat"\n[bus]\npublish = "tcp://*:7700"\n'
        'replay = "ipc:///run/tabled/t/replay.sock"\n[control]\nendpoint = "tcp://[::1]:7799"\n'
    )
    s = load(cfg)
    assert s.config.bus.publish == "tcp://*:7700"
