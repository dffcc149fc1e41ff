"""``tabled-bridge install`` sets up the floor's bridge in a scratch root, and ``uninstall`` undoes it.

As tests/test_install.py does for a table: the host's vendor units copied into a root,
systemd-sysusers/tmpfiles/analyze/systemctl run with ``--root``, then every file
checked: the config and the unit, the key files copied beside the config with the
bridge user owning the secrets (0600) — the bridge refuses secrets others may read —
and the unit enabled. A config with an error is refused naming file and key.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from test_install import make_pc

from bridge.setup import bridge_binary

BRIDGE = """
[nats]
servers = ["tls://nats.floor:4222"]
user = "bridge"
password_file = "keys/nats.password"

[nats.tls]
ca = "keys/ca.pem"

[bridge]
client_key = "keys/private/bridge.key_secret"

[[tables]]
id = "bac-01"
publish = "tcp://10.1.0.11:7700"
replay = "tcp://10.1.0.11:7701"
server_key = "keys/bac-01.key"
"""


def _cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.app", *args], capture_output=True, text=True, timeout=180
    )


def _source(tmp: Path) -> Path:
    src = tmp / "src"
    (src / "keys/private").mkdir(parents=True)
    for name, secret in (
        ("keys/nats.password", True),
        ("keys/ca.pem", False),
        ("keys/private/bridge.key_secret", True),
        ("keys/bac-01.key", False),
    ):
        (src / name).write_text(f"{name}\n")
        (src / name).chmod(0o600 if secret else 0o644)
    (src / "bridge.toml").write_text(BRIDGE)
    return src / "bridge.toml"


@pytest.mark.system
def test_install_then_uninstall_the_bridge(tmp_path):
    for tool in ("systemd-sysusers", "systemd-tmpfiles", "systemctl", "systemd-analyze"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed on this machine")
    if os.geteuid() != 0:
        pytest.skip("chown to the tabled user needs root")
    pc = make_pc(tmp_path)
    stub = pc / str(bridge_binary()).lstrip("/")
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    cfg = _source(tmp_path)

    dry = _cmd("--config", str(cfg), "install", "--root", str(pc), "-n")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert not (pc / "etc/tabled").exists(), "--dry-run changed the root"

    r = _cmd("--config", str(cfg), "install", "--root", str(pc))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done: check the unit: systemd-analyze" in r.stdout
    etc = pc / "etc"
    users = {
        x.split(":")[0]: int(x.split(":")[2]) for x in (etc / "passwd").read_text().splitlines()
    }
    groups = {
        x.split(":")[0]: int(x.split(":")[2]) for x in (etc / "group").read_text().splitlines()
    }
    conf = etc / "tabled/bridge.toml"
    assert conf.read_text() == BRIDGE
    assert (stat.S_IMODE(conf.stat().st_mode), conf.stat().st_gid) == (0o640, groups["tabled"])
    for name, secret in (
        ("keys/nats.password", True),
        ("keys/private/bridge.key_secret", True),
        ("keys/ca.pem", False),
        ("keys/bac-01.key", False),
    ):
        st = (etc / "tabled" / name).stat()
        want = (0o600, users["tabled"]) if secret else (0o640, 0)
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == want, name
        assert st.st_gid == groups["tabled"]
    unit = (etc / "systemd/system/tabled-bridge.service").read_text()
    assert f"ExecStart={bridge_binary()} --config /etc/tabled/bridge.toml" in unit
    assert (etc / "systemd/system/multi-user.target.wants/tabled-bridge.service").is_symlink()

    u = _cmd("uninstall", "--root", str(pc))
    assert u.returncode == 0, u.stdout + u.stderr
    assert not conf.exists()
    assert not (etc / "systemd/system/tabled-bridge.service").exists()
    assert not (etc / "systemd/system/multi-user.target.wants/tabled-bridge.service").exists()
    assert (etc / "tabled/keys/nats.password").is_file() and "key files" in u.stdout


def test_a_bad_bridge_config_is_not_installed(tmp_path):
    cfg = _source(tmp_path)
    cfg.write_text(BRIDGE.replace('user = "bridge"\n', ""))
    r = _cmd("--config", str(cfg), "install", "--root", str(tmp_path / "pc"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bridge.toml: nats.password_file: needs nats.user too" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "pc").exists()
    assert _cmd("install").returncode == 2  # no --config: argparse says so
