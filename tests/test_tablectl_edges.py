"""tablectl where a technician meets it: a simulator on a pty, replay on a terminal, monitor in a pipe."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest
import serial
from daemon_harness import ROOT, Daemon, write_config

from drivers.base import driver_class
from drivers.sim import SIMULATORS

CAPTURE = ROOT / "tests" / "captures" / "shoe-line" / "misdeals.log"


def tablectl_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "daemon.ctl.cli", *args]


def test_sim_starts_a_shoe_on_a_pty_that_pyserial_reads(tmp_path):
    link = tmp_path / "shoe"
    p = subprocess.Popen(
        tablectl_cmd("sim", "--driver", "shoe-line", "--pace", "0.01", "--link", str(link)),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        path = p.stdout.readline().strip()  # printed once the pty is there
        assert path == str(link) and os.path.realpath(link).startswith("/dev/pts/")
        with serial.Serial(path, 9600, timeout=10) as port:
            codes = [port.readline().decode().strip() for _ in range(5)]
        assert all(re.fullmatch(r"(10|[2-9TJQKA])[SHDC]", c) for c in codes), codes
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 0
    assert not link.exists(), "the link goes with the simulator"


#: a driver whose options need a value of the config's: tablectl sim says so (test below)
NEEDS_OPTIONS = {"cammegh-m360"}


@pytest.mark.parametrize(
    "driver",
    sorted(
        d for d in SIMULATORS if driver_class(d).transport == "serial" and d not in NEEDS_OPTIONS
    ),
)
def test_sim_starts_every_serial_simulator(driver):
    """Each takes the flags it has (a shuffler has no --pace): none is refused."""
    p = subprocess.Popen(
        tablectl_cmd("sim", "--driver", driver, "--pace", "0.01"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        path = p.stdout.readline().strip()
        assert path.startswith("/dev/pts/"), p.stderr.read() if p.poll() is not None else path
    finally:
        p.send_signal(signal.SIGINT)
        assert p.wait(10) == 0


@pytest.mark.parametrize("driver", sorted(NEEDS_OPTIONS))
def test_sim_of_a_driver_that_needs_options_says_where_to_give_them(driver):
    r = subprocess.run(
        tablectl_cmd("sim", "--driver", driver), cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert 'port = "sim"' in r.stderr and "level" in r.stderr


def test_sim_of_an_unknown_driver_says_so(tmp_path):
    r = subprocess.run(
        tablectl_cmd("sim", "--driver", "nope"), cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "nope" in r.stderr


def _on_a_terminal(*args: str) -> str:
    master, slave = os.openpty()
    p = subprocess.Popen(tablectl_cmd(*args), cwd=ROOT, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(30) == 0, p.stderr.read()
    return out.decode()


def test_replay_is_readable_on_a_terminal_and_json_when_asked():
    text = _on_a_terminal("replay", str(CAPTURE))
    lines = [x for x in text.splitlines() if x.strip()]
    assert lines and not any(x.lstrip().startswith("{") for x in lines)
    assert any("card.dealt" in x and "→" in x for x in lines)
    assert any("hand.result" in x and "player" in x for x in lines)
    as_json = _on_a_terminal("--json", "replay", str(CAPTURE))
    assert all(json.loads(x)["type"] for x in as_json.splitlines() if x.strip())
    piped = subprocess.run(tablectl_cmd("replay", str(CAPTURE)), cwd=ROOT, capture_output=True)
    assert all(json.loads(x) for x in piped.stdout.splitlines())


def test_monitor_without_a_terminal_prints_one_line_per_event(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        r = subprocess.run(
            tablectl_cmd("--config", str(cfg), "monitor", "--seconds", "2", "--history", "9999"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert any("daemon.started" in x for x in lines), r.stdout[:500]
        assert not any(x.startswith("{") for x in lines)
        assert "\x1b[" not in r.stdout, "no screen control codes in a pipe"
        assert d.stop() == 0
    finally:
        d.close()


# -- one top-level error handler: each listed bad input, no traceback ----------------------


def run_ctl(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        tablectl_cmd(*args), cwd=ROOT, capture_output=True, text=True, timeout=60, **kw
    )
    assert "Traceback" not in r.stdout + r.stderr, r.stderr
    return r


def test_probe_with_an_unknown_driver_is_a_usage_error():
    r = run_ctl("probe", "--driver", "nope", "--port", "loop://")
    assert r.returncode == 2
    assert "unknown driver 'nope'" in r.stderr and "shoe-line" in r.stderr


def test_status_from_another_directory_with_no_table_names_no_file(tmp_path):
    """An installed tablectl, run away from a clone with no table on the PC: it says what to
    pass, and names no file the user never gave (issue 15 saw ``demo.toml: file not found``)."""
    env = {k: v for k, v in os.environ.items() if k != "TABLED_CONFIG"}
    env |= {"TABLED_ETC": str(tmp_path / "etc"), "TABLED_RUN_ROOT": str(tmp_path / "run")}
    for args in (("status",), ("status", "--json"), ("monitor",)):
        r = subprocess.run(
            tablectl_cmd(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("tablectl: no table given: pass -t TABLE"), r.stderr
        assert "demo.toml" not in r.stderr and "Traceback" not in r.stderr


def test_recall_of_a_game_that_is_not_a_game_reference():
    r = run_ctl("recall", "--hand", "abc")
    assert r.returncode == 2
    assert "'abc' is not a game: SHOE:HAND" in r.stderr


def test_config_check_refuses_a_port_out_of_range(tmp_path):
    cfg = tmp_path / "t.toml"
    cfg.write_text(
        '[table]\nid = "t"\ngame = "baccarat"\n[bus]\npublish = "tcp://127.0.0.1:99999"\n'
    )
    r = run_ctl("config", "check", str(cfg))
    assert r.returncode == 2
    assert 'bus.publish: port 99999 in "tcp://127.0.0.1:99999" is not a TCP port' in r.stderr
    # and the file comes from --config or $TABLED_CONFIG when not given
    assert run_ctl("--config", str(cfg), "config", "check").returncode == 2
    env = dict(os.environ, TABLED_CONFIG=str(cfg))
    assert "99999" in run_ctl("config", "check", env=env).stderr


def test_global_options_after_the_command_and_version(tmp_path):
    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    try:
        d.start()
        after = run_ctl("status", "--json", "--config", str(cfg))
        assert after.returncode in (0, 1), after.stderr
        assert json.loads(after.stdout)["table"] == "it"
        before = run_ctl("--json", "--config", str(cfg), "status")
        assert json.loads(before.stdout)["table"] == "it"
        assert d.stop() == 0
    finally:
        d.close()
    v = run_ctl("--version")
    assert v.returncode == 0 and re.fullmatch(r"tablectl \S+\n", v.stdout)
    assert run_ctl("status", "--no-such-option").returncode == 2


def test_recall_on_sic_bo_names_how_its_games_are_numbered(tmp_path):
    from test_daemon_dragon_tiger_sicbo import fast_copy

    from daemon.bus.subscriber import Follower
    from daemon.ctl.control_client import ControlClient
    from daemon.runtime.config import load

    cfg = fast_copy(
        "sicbo.toml",
        tmp_path,
        {"betting_seconds": None, "settle_seconds": None},
        "seed = 3\npace = 0.05",
    )
    pub, rep = endpoints_of(cfg)
    d = Daemon(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="sicbo")
        ctl = ControlClient(load(cfg).control_endpoint, timeout=20.0, actor="t")
        try:
            f.until(lambda e: e.type == "device.reply", 10.0)
            ctl.call("betting.open")
            ctl.call("betting.close")
            f.until(lambda e: e.type == "dice.result", 20.0)
        finally:
            ctl.close()
            f.close()
        r = run_ctl("--config", str(cfg), "recall", "--hand", "1:2")
        assert r.returncode in (1, 2) and "1:2" in r.stderr  # not "no games yet"
        assert re.search(r"\bround\b", r.stderr, re.IGNORECASE), r.stderr
        one = run_ctl("--config", str(cfg), "--json", "recall", "--hand", "1")
        assert one.returncode == 0 and "dice.result" in one.stdout
        assert d.stop() == 0
    finally:
        d.close()


def endpoints_of(cfg):
    from daemon_harness import endpoints

    return endpoints(cfg)


def test_an_unexpected_error_is_one_line_and_exit_4():
    from daemon.tools.shell import guarded

    def boom() -> int:
        raise KeyError("x")

    assert guarded(boom, (ValueError,)) == 4


# -- help, completion, man page, made from the parser ------------------------------------


def test_every_command_has_an_example_and_every_option_help():
    import argparse

    from daemon.ctl.cli import parser
    from daemon.tools.shell import subcommands

    p = parser()
    commands = list(subcommands(p))
    assert len(commands) > 20
    for path, sp in commands:
        assert sp.epilog and sp.epilog.startswith("example: tablectl"), path
        for act in sp._actions:
            if isinstance(act, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            assert act.help, f"tablectl {path}: {act.dest} has no help text"


def test_completion_and_man_page_come_from_the_parser():
    bash = run_ctl("completion", "bash")
    assert bash.returncode == 0 and "tablectl" in bash.stdout and "betting" in bash.stdout
    man = run_ctl("man")
    assert man.returncode == 0 and man.stdout.startswith(".TH")
    assert "tablectl recall" in man.stdout and "tablectl \\-t bac\\-07 status" in man.stdout


def test_recall_json_on_an_empty_journal_is_an_empty_list(tmp_path):
    """--json is kept with no games: ``[]``, not the sentence (issue 33)."""
    from daemon.journal import Journal

    cfg = write_config(tmp_path)
    (tmp_path / "state").mkdir()
    Journal(tmp_path / "state" / "journal.sqlite", "it").close()
    r = run_ctl("--config", str(cfg), "recall", "--last", "10", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout
    text = run_ctl("--config", str(cfg), "recall")
    assert text.stdout == "no games in the journal yet\n"
    v = run_ctl("--config", str(cfg), "--json", "verify")
    assert json.loads(v.stdout)["ok"] is True and v.returncode == 0, v.stdout
