"""Record the hid-scanner and gpio-panel captures from their simulators, through the real transports.

``config/baccarat-studio.toml`` runs as a real daemon (ports and state moved, the
dealer's pace quickened): the scanner behind the fake pyusb backend (the real USB
transport, reader thread and keyboard protocol), the panel on gpiozero's mock pins
(the real panel runtime). ``tablectl trace DEVICE --save`` records each device's
frames and the commands in between (the panel's buttons are ``source=button``
commands), with the table's state when the trace began, as a field technician
would. Run ``python tests/captures/make_studio_captures.py``, then
``pytest tests/captures --regen-captures``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: the daemon harness
from daemon_harness import ROOT, Daemon, endpoints, free_port

from daemon.bus.subscriber import Follower

SECONDS = 20
CLI = (sys.executable, "-m", "daemon.ctl.cli", "--config")
WHAT = {
    "scanner": (
        "hid-scanner",
        "a live-studio baccarat shoe read by a USB HID keyboard-wedge scanner (suit-rank codes), "
        "the croupier's betting and the dealer's close-betting button between, mid-shoe",
    ),
    "panel": (
        "gpio-panel",
        "the dealer's GPIO panel at a live-studio baccarat table: its close-betting presses "
        "(source=button) beside the croupier's commands, mid-shoe",
    ),
}


def config(tmp: Path) -> Path:
    text = (ROOT / "config" / "baccarat-studio.toml").read_text()
    run = tempfile.mkdtemp(prefix="ms-", dir="/tmp")
    text = text.replace(
        'game = "baccarat"\n',
        f'game = "baccarat"\nstate_dir = "{tmp}/state"\nruntime_dir = "{run}"\n',
        1,
    )
    text = text.replace("tcp://127.0.0.1:7740", f"tcp://127.0.0.1:{free_port()}")
    text = text.replace("tcp://127.0.0.1:7741", f"tcp://127.0.0.1:{free_port()}")
    text = text.replace("pace = 0.3 ", "pace = 0.1 ")
    assert "pace = 0.1 " in text and "7740" not in text
    cfg = tmp / "studio.toml"
    cfg.write_text(text)
    return cfg


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="studio-cap-"))
    cfg = config(tmp)
    d = Daemon(cfg)
    d.start()
    try:
        pub, rep = endpoints(cfg)
        f = Follower(pub, rep, table="studio-1")
        f.until(lambda e: e.type == "hand.result", 60)  # mid-shoe: the traces start from state
        f.close()
        raw = {name: tmp / f"{name}.log" for name in WHAT}
        procs = [
            subprocess.Popen(
                [
                    *CLI,
                    str(cfg),
                    "trace",
                    name,
                    "--save",
                    str(raw[name]),
                    "--seconds",
                    str(SECONDS),
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for name in WHAT
        ]
        for p in procs:
            _, err = p.communicate(timeout=SECONDS + 30)
            assert p.returncode == 0, err.decode()
    finally:
        d.stop()
    for name, (driver, what) in WHAT.items():
        out = ROOT / "tests" / "captures" / driver / "studio-trace.log"
        out.parent.mkdir(exist_ok=True)
        source = (
            "# source: recorded by tests/captures/make_studio_captures.py (tablectl trace --save "
            f"against config/baccarat-studio.toml's simulated {driver})"
        )
        out.write_text(f"# what: {what}\n{source}\n" + raw[name].read_text())
        print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
