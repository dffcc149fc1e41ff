"""``tablectl`` starts on what its command needs, and its built-in commands parse as before.

The suite runs tablectl ~130 times and a technician by hand; most of each call's CPU was
imports made only to build the parser (every command's module, the config loader, the
games, rich, cryptography). ``daemon/ctl/cli.py`` now parses a built-in command with a light
parser (``daemon/tools/parsers.py``: arguments only, each implementation imported when it
runs) and hands help, errors and the games' commands to the full one. These tests hold
both halves: what a light command imports (module names, never a time), and that the
light parser is the full parser's built-in half, help for help.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_harness import write_config

from daemon.ctl import cli
from daemon.tools.shell import subcommands

ROOT = Path(__file__).resolve().parent.parent

#: other commands' code and the tools' libraries, which none of the commands below needs
NEVER = (
    "daemon.tools.monitor",
    "daemon.tools.gpio",
    "daemon.tools.game_commands",
    "daemon.ctl.keys",
    "rich",
    "cryptography",
    "gpiozero",
    "shtab",
)
#: what parsing alone never needs: the config loader, the games, all a command talks with
PARSING = (
    *NEVER,
    *("daemon.runtime.config", "daemon.ctl.shared", "daemon.games", "daemon.table"),
    *("msgspec", "zmq", "structlog", "sqlite3"),
)

#: run tablectl's main in a fresh interpreter, then list the modules it imported
PROBE = """
import contextlib, io, json, sys
from daemon.ctl.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as e:
        rc = e.code
print(json.dumps({"rc": rc, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def imported(*argv: str) -> tuple[int, str, set[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    r = json.loads(proc.stdout)
    return r["rc"], r["out"], set(r["modules"])


def heavy(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in modules)


@pytest.mark.parametrize(
    "argv",
    [("--version",), ("status", "--help"), ("monitor", "--help"), ("keys", "--help")],
)
def test_version_and_a_commands_help_import_no_command(argv):
    rc, out, modules = imported(*argv)
    assert rc == 0 and out.startswith(("tablectl ", "usage: tablectl"))
    assert heavy(modules, (*PARSING, "importlib.metadata")) == []


def test_status_against_no_daemon_loads_the_config_and_the_client_only(tmp_path):
    # the config is read (the control socket is its), no daemon runs it: exit 3
    cfg = write_config(tmp_path)
    rc, out, modules = imported("--config", str(cfg), "--timeout", "0.2", "status")
    assert rc == 3 and "is tabled running?" in out
    assert {"daemon.runtime.config", "daemon.ctl.control_client"} <= modules
    # no rich: structlog comes in lean (daemon.runtime.structlog_lean). The games do come, with
    # the config loader, which checks the config's game section against its game's rules
    assert heavy(modules, NEVER) == []


def test_verify_of_a_journal_given_by_path_talks_to_nothing(tmp_path):
    rc, out, modules = imported("verify", str(tmp_path / "journal.sqlite"))
    assert rc == 2 and out.startswith("no journal at ")
    assert heavy(modules, (*NEVER, "daemon.games", "zmq", "structlog")) == []


def test_a_games_command_and_help_go_to_the_full_parser():
    rc, out, modules = imported("betting", "--help")
    assert rc == 0 and "usage: tablectl betting" in out
    assert "daemon.tools.game_commands" in modules
    rc, out, _ = imported("--help")
    assert rc == 0 and "betting" in out and "examples:" in out


def test_the_light_parser_is_the_full_parsers_built_in_half():
    light = dict(subcommands(cli.light_parser()))
    full = dict(subcommands(cli.parser()))
    games = set(full) - set(light)
    assert games and "betting" in games and not set(light) - set(full)
    for path, sp in light.items():
        assert sp.format_help() == full[path].format_help(), path
        assert sp.format_usage() == full[path].format_usage(), path


def test_every_built_in_command_names_code_that_exists():
    checked = 0
    for path, sp in subcommands(cli.light_parser()):
        func = sp.get_default("func")
        target = getattr(func, "target", None)
        if target is None:  # a group (`config`, `gpio`), or a function of parsers.py itself
            continue
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name, None)), (path, target)
        checked += 1
    assert checked > 15


def test_the_keys_roles_are_the_control_roles():
    from daemon.security.keyfiles import ROLES
    from daemon.tools import parsers

    assert parsers.ROLES == ROLES
