"""What a production daemon holds: what its start imports, that leaving rich out changes no
log line, and the journal's page cache.

A table PC has every library of ``pyproject.toml`` installed (rich for ``tablectl
monitor``, prometheus_client for metrics, pyudev for hot-plug, nats for the bridge,
cryptography for checkpoint keys), but the daemon imports each only where its config
or tool needs it: each costs resident memory and start-up time on a small box
(``docs/performance-history.md``, memory and start-up). The first test starts the real daemon
under a production config (a serial shoe, JSON lines, no metrics, no hot-plug, no
keys) and fails when a heavy import creeps back, or another game's or driver's modules;
the others hold
``daemon/runtime/structlog_lean.py`` to rendering every line as structlog does with rich.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from tests.daemon_harness import ROOT, Daemon, write_config

#: what a production start must not import: console rendering, and what only some configs use
NOT_AT_START = (
    "rich",  # structlog.dev and structlog.tracebacks import it when installed
    "pygments",  # rich's syntax highlighting
    "attr",  # rich.pretty
    "prometheus_client",  # [metrics] only
    "pyudev",  # hot-plug only
    "nats",  # the bridge only
    "cryptography",  # a checkpoint key only
    "gpiozero",  # a GPIO panel only
    "usb",  # a USB scanner only
    "bridge",
    "email",  # importlib.metadata's (drivers/plugins.py reads entry points without it)
    "zipfile",
)

#: runs the daemon as its console script does, and writes every module it imported on exit
_RECORDING = (
    "import atexit, json, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from daemon.runtime.app import main\n"
    "sys.exit(main())\n"
)


def test_a_production_start_imports_no_console_or_optional_library(tmp_path: Path) -> None:
    master, slave = os.openpty()
    modules = tmp_path / "modules.json"
    d = Daemon(write_config(tmp_path, port=os.ttyname(slave)))
    d.command = [sys.executable, "-c", _RECORDING, str(modules)]
    try:
        d.start()
        assert d.stop() == 0, d.log.read_text()[-2000:]
    finally:
        d.close()
        os.close(master)
        os.close(slave)
    loaded = json.loads(modules.read_text())
    assert "daemon.journal" in loaded and "structlog" in loaded  # it did start
    heavy = sorted(m for m in loaded if m.split(".")[0] in NOT_AT_START)
    heavy += [m for m in loaded if m.startswith("importlib.metadata")]
    assert heavy == [], f"imported at start: {heavy}"
    # one game and one driver: the table's own, not every installed one
    games = {ep.name: ep.module for ep in entry_points(group="tabled.games")}
    drivers = {ep.name: ep.module for ep in entry_points(group="tabled.drivers")}
    assert games.pop("baccarat") in loaded and drivers.pop("shoe-line") in loaded
    others = sorted({*games.values(), *drivers.values()} & set(loaded))
    assert others == [], f"other games' and drivers' modules imported at start: {others}"


def _render(lean: bool, fmt: str) -> str:
    """A structlog line and a standard-library line with a traceback, in a fresh interpreter:
    structlog imported as the daemon imports it (``lean``), or plainly, with rich."""
    first = "daemon.runtime.structlog_lean" if lean else "structlog"
    code = f"""__import__({first!r})
import logging, structlog
from daemon.runtime import logs
logs.setup("info", {fmt!r}, table="t1")
def crash():
    hole = "HOLE-CARD-QS"  # what a Blackjack frame may hold: never in the log
    many = list(range(15))
    nested = {{"box": [1, 2], "text": "x" * 100}}
    raise ValueError("the shoe said no")
try:
    crash()
except ValueError:
    structlog.get_logger("tabled").exception("device failed", device="shoe")
    logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=True)
import sys
print("rich" in sys.modules, flush=True)
"""
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _same_but_time(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<time>", text)
    return re.sub(r"0x[0-9a-f]+", "<addr>", text)


def test_json_tracebacks_render_as_with_rich_and_carry_no_locals() -> None:
    lean, plain = _render(True, "json"), _render(False, "json")
    lines = [json.loads(x) for x in lean.splitlines()[:2]]
    for line in lines:  # structlog's line and the standard library's
        frames = line["exception"][0]["frames"]
        assert any(f["name"] == "crash" for f in frames)  # where it failed is there
        assert all("locals" not in f for f in frames)
    assert "HOLE-CARD-QS" not in lean and "HOLE-CARD-QS" not in plain
    *lean_lines, lean_rich = lean.splitlines()
    *plain_lines, _ = plain.splitlines()
    assert _same_but_time("\n".join(lean_lines)) == _same_but_time("\n".join(plain_lines))
    assert lean_rich == "False"  # and a traceback no longer brings rich in


def test_console_lines_render_as_with_rich() -> None:
    lean, plain = _render(True, "console"), _render(False, "console")
    assert "the shoe said no" in lean
    assert _same_but_time(lean) == _same_but_time(plain)


def test_without_a_traceback_or_a_console_rich_stays_out() -> None:
    code = (
        "import daemon.runtime.structlog_lean, structlog, sys\n"
        "from daemon.runtime import logs\n"
        "logs.setup('info', 'json', table='t1')\n"
        "structlog.get_logger('tabled').info('card', card='AS')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1] == "[]"


def test_the_bridge_imports_structlog_without_rich_too() -> None:
    """The floor's bridge is a long-running service on a small box as well."""
    code = (
        "import bridge.app, sys\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pygments')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1] == "[]"


def test_every_journal_connection_caps_its_page_cache(tmp_path: Path) -> None:
    """SQLite's default is 2 MiB per connection; the journal's 512 KiB saves 1.6 MiB of a
    daemon's RSS at no measured CPU cost (``daemon/journal/format.py``)."""
    from daemon.journal import Journal, connect

    j = Journal(tmp_path / "j.sqlite", "t1")
    try:
        assert j.db.execute("PRAGMA cache_size").fetchone() == (-512,)
        ro = connect(tmp_path / "j.sqlite", readonly=True)
        assert ro.execute("PRAGMA cache_size").fetchone() == (-512,)
        ro.close()
    finally:
        j.close()
