"""The systemd unit, udev rules, sysusers and tmpfiles files under systemd/.

PID 1 is not systemd on the machines CI runs on, so nothing here starts the
service. What can be checked offline is checked:

* the unit parses and contains the directives the daemon and the technicians
  rely on (pure Python, always runs);
* ``systemd-analyze verify`` reports nothing about our unit;
* ``systemd-analyze security --offline=true`` scores it at most MAX_EXPOSURE,
  and every check it still flags is one we decided to accept (listed with the
  reason in ACCEPTED_EXPOSURE);
* ``systemd-sysusers`` and ``systemd-tmpfiles`` apply our files to a scratch
  root, and the result has the owners and modes the unit needs;
* the udev rules are structurally sound (pure Python, always runs), and
  ``udevadm verify`` accepts them where this machine's udevadm has ``verify``;
* the daemon's native dependencies run with W^X memory enforced, which is what
  ``MemoryDenyWriteExecute=yes`` will impose.

How ``verify`` is made to find ExecStart's binary: ``systemd-analyze verify``
fails when the ExecStart executable does not exist, and /opt/tabled is not
installed on a development machine. Rather than rewriting ExecStart (which
would lint a different unit from the one shipped), the tests build a scratch
root directory: the unit, byte for byte, in ``<root>/etc/systemd/system``; an
executable stub at the unit's own ExecStart path under ``<root>``; and a copy
of the host's vendor units (``sysinit.target``, ``modprobe@.service``, …) so the
unit's dependencies resolve. ``systemd-analyze --root=<root>`` then checks the
real file against a tree that looks installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEMD_DIR = ROOT / "systemd"
UNIT = SYSTEMD_DIR / "tabled@.service"
RULES = SYSTEMD_DIR / "99-tabled.rules"
SYSUSERS = SYSTEMD_DIR / "tabled.sysusers.conf"
TMPFILES = SYSTEMD_DIR / "tabled.tmpfiles.conf"
INSTANCE = "tabled@t1.service"

# Measured with systemd 252 (Debian 12): 1.5 "OK"; 1.6 since sched_setscheduler is
# allowed again (ACCEPTED_EXPOSURE). Raise only together with an entry in
# ACCEPTED_EXPOSURE that says why.
MAX_EXPOSURE = 1.6

# Checks systemd-analyze security still flags, each accepted on purpose.
ACCEPTED_EXPOSURE = {
    "RootDirectory=/RootImage=": "runs from the host's /opt/tabled venv, not an image",
    "SupplementaryGroups=": "dialout, plugdev, gpio reach its devices; tabled-<role> its role sockets",
    "PrivateDevices=": "needs real serial, USB and GPIO nodes; DeviceAllow= narrows them",
    "RestrictAddressFamilies=~AF_NETLINK": "udev/libusb hotplug events",
    "SystemCallFilter=~@resources": "sched_setscheduler only: libzmq sets each of its "
    "threads' policy and aborts if refused; realtime stays refused (RestrictRealtime=yes)",
    "RestrictAddressFamilies=~AF_UNIX": "ipc control socket and sd_notify",
    "RestrictAddressFamilies=~AF_(INET|INET6)": "ZeroMQ publish/replay over tcp",
    "ProcSubset=": "gpiozero reads /proc/cpuinfo and /proc/device-tree to identify the Pi",
    "PrivateNetwork=": "subscribers are on the casino network",
    "PrivateUsers=": "device access rests on unmapped supplementary groups",
    "DeviceAllow=": "the table's serial, USB and GPIO device groups",
    "IPAddressDeny=": "which subscriber addresses may connect is site policy (drop-in)",
    "UMask=": "0027: the tabled group (technicians) may read the journal",
}


# -- parsing -----------------------------------------------------------------------


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Sections → (key, value) pairs in order; repeated keys are kept (DeviceAllow=)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        assert not line.endswith("\\"), f"line {lineno}: keep directives on one line"
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"line {lineno}: directive outside a section"
        key, sep, value = line.partition("=")
        assert sep, f"line {lineno}: not KEY=value: {raw!r}"
        current.append((key.strip(), value.strip()))
    return sections


def values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [v for k, v in section if k == key]


def single(section: list[tuple[str, str]], key: str) -> str:
    found = values(section, key)
    assert len(found) == 1, f"{key}= appears {len(found)} times, expected once"
    return found[0]


def words(section: list[tuple[str, str]], key: str) -> set[str]:
    return {w for v in values(section, key) for w in v.split()}


@pytest.fixture(scope="module")
def unit() -> dict[str, list[tuple[str, str]]]:
    return parse_unit(UNIT.read_text())


def exec_start_binary() -> str:
    service = parse_unit(UNIT.read_text())["Service"]
    return single(service, "ExecStart").split()[0].lstrip("-@+!:")


# -- the unit's required directives (no tools needed) -------------------------------


def test_unit_has_the_sections_systemd_expects(unit):
    assert set(unit) == {"Unit", "Service", "Install"}
    assert single(unit["Install"], "WantedBy") == "multi-user.target"


def test_service_lifecycle_directives(unit):
    s = unit["Service"]
    assert single(s, "Type") == "notify"
    assert single(s, "NotifyAccess") == "main"
    assert single(s, "ExecStart") == "/opt/tabled/.venv/bin/tabled --config /etc/tabled/%i.toml"
    assert single(s, "WatchdogSec") == "10"
    assert single(s, "Restart") == "on-failure"
    assert single(s, "RestartSec") == "2"
    assert single(s, "TimeoutStopSec") == "5"


def test_identity_directories_and_environment(unit):
    s = unit["Service"]
    assert single(s, "User") == "tabled"
    assert single(s, "Group") == "tabled"
    roles = {f"tabled-{r}" for r in ("viewer", "dealer", "supervisor", "technician")}
    assert words(s, "SupplementaryGroups") == {"dialout", "plugdev", "gpio"} | roles
    # role sockets are reached by people outside group tabled: the directory lets them in
    assert single(s, "RuntimeDirectoryMode") == "0755"
    assert single(s, "StateDirectory") == "tabled/%i tabled-marks/%i"
    assert single(s, "RuntimeDirectory") == "tabled/%i"
    env = words(s, "Environment")
    assert "TABLED_STATE_DIR=%S/tabled/%i" in env
    assert "TABLED_RUNTIME_DIR=%t/tabled/%i" in env
    assert "TABLED_HEAD_MARK=%S/tabled-marks/%i/journal.head" in env  # outside the state dir
    # lgpio makes FIFOs in the working directory; it must be writable
    assert single(s, "WorkingDirectory") == "%t/tabled/%i"
    assert single(s, "UMask") == "0027"


def test_device_access_is_closed_except_the_table_hardware(unit):
    s = unit["Service"]
    assert single(s, "DevicePolicy") == "closed"
    allowed = set(values(s, "DeviceAllow"))
    assert allowed == {
        "char-ttyUSB rw",
        "char-ttyACM rw",
        "char-ttyS rw",
        "char-ttyAMA rw",
        "char-usb_device rw",
        "char-gpiochip rw",
    }


def test_device_groups_that_appear_on_plug_in_are_loaded_first(unit):
    """char-ttyUSB/char-ttyACM resolve from /proc/devices at start only."""
    u = unit["Unit"]
    for module in ("usbserial", "cdc_acm"):
        assert f"modprobe@{module}.service" in words(u, "Wants")
        assert f"modprobe@{module}.service" in words(u, "After")


def test_hardening_directives(unit):
    s = unit["Service"]
    expected = {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes",
        "ProtectClock": "yes",
        "ProtectHostname": "yes",
        "RestrictNamespaces": "yes",
        "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
        "SystemCallArchitectures": "native",
        "CapabilityBoundingSet": "",
    }
    for key, value in expected.items():
        assert single(s, key) == value, key
    assert words(s, "RestrictAddressFamilies") == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}
    assert values(s, "SystemCallFilter")[0] == "@system-service"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("PrivateDevices", "hides every serial, USB and GPIO node"),
        ("PrivateUsers", "drops the supplementary device groups"),
        ("ProcSubset", "hides /proc/cpuinfo, gpiozero cannot find the Pi"),
        ("PrivateNetwork", "no tcp to subscribers"),
        ("ReadOnlyPaths", "nothing to add; ProtectSystem=strict already"),
    ],
)
def test_directives_that_would_break_the_hardware_are_absent(unit, key, why):
    assert values(unit["Service"], key) == [], f"{key}= must not be set: {why}"


# -- systemd-analyze -----------------------------------------------------------------


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed on this machine")
    return path


def _vendor_unit_dir() -> Path:
    for candidate in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")):
        if (candidate / "sysinit.target").exists():
            return candidate
    pytest.skip("no systemd vendor unit directory (sysinit.target) on this machine")


def make_root(base: Path, unit_text: str) -> Path:
    """A scratch root that looks like a table PC with tabled installed."""
    root = base / "root"
    shutil.copytree(_vendor_unit_dir(), root / "usr/lib/systemd/system", symlinks=True)
    unit_dir = root / "etc/systemd/system"
    unit_dir.mkdir(parents=True)
    (unit_dir / "tabled@.service").write_text(unit_text)
    stub = root / exec_start_binary().lstrip("/")
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    return root


def analyze(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = _need("systemd-analyze")
    return subprocess.run(
        [exe, f"--root={root}", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"},
        timeout=120,
    )


def complaints_about_our_unit(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Output lines that concern tabled@ (other units' noise is not ours to fix)."""
    lines = (result.stdout + result.stderr).splitlines()
    return [line for line in lines if "tabled@" in line]


@pytest.fixture(scope="module")
def installed_root(tmp_path_factory) -> Path:
    _need("systemd-analyze")
    return make_root(tmp_path_factory.mktemp("unit"), UNIT.read_text())


@pytest.mark.system
def test_systemd_analyze_verify_reports_nothing(installed_root):
    result = analyze(installed_root, "verify", INSTANCE)
    print(result.stdout, result.stderr)
    assert complaints_about_our_unit(result) == []
    assert result.returncode == 0


@pytest.mark.system
def test_verify_harness_does_catch_a_broken_unit(tmp_path):
    """The filter above must not hide real problems: break the unit on purpose."""
    broken = UNIT.read_text().replace("WatchdogSec=10", "WatchdogSecs=10")
    broken = broken.replace("Type=notify", "Type=notifyy")
    result = analyze(make_root(tmp_path, broken), "verify", INSTANCE)
    found = "\n".join(complaints_about_our_unit(result))
    assert "WatchdogSecs" in found
    assert "notifyy" in found

    missing_binary = make_root(tmp_path / "nobin", UNIT.read_text())
    (missing_binary / exec_start_binary().lstrip("/")).unlink()
    result = analyze(missing_binary, "verify", INSTANCE)
    assert result.returncode != 0
    assert any("not executable" in line for line in complaints_about_our_unit(result))


@pytest.mark.system
def test_security_exposure_is_low(installed_root, capsys):
    result = analyze(installed_root, "security", "--offline=true", "--no-pager", INSTANCE)
    assert result.returncode == 0, result.stderr
    match = re.search(
        rf"Overall exposure level for {re.escape(INSTANCE)}: ([0-9.]+) (\w+)", result.stdout
    )
    assert match, result.stdout
    score, verdict = float(match.group(1)), match.group(2)
    with capsys.disabled():
        print(f"\nsystemd-analyze security {INSTANCE}: {score} {verdict}")
    assert score <= MAX_EXPOSURE, result.stdout
    assert verdict == "OK"


@pytest.mark.system
def test_every_remaining_exposure_is_an_accepted_one(installed_root):
    result = analyze(
        installed_root, "security", "--offline=true", "--no-pager", "--json=short", INSTANCE
    )
    assert result.returncode == 0, result.stderr
    checks = json.loads(result.stdout)
    flagged = {c["name"] for c in checks if not c["set"] and c.get("exposure")}
    unexpected = flagged - ACCEPTED_EXPOSURE.keys()
    assert not unexpected, f"new exposures, harden or accept with a reason: {sorted(unexpected)}"


# -- sysusers.d and tmpfiles.d -----------------------------------------------------


def _read_db(path: Path) -> dict[str, list[str]]:
    return {line.split(":")[0]: line.split(":") for line in path.read_text().splitlines() if line}


@pytest.fixture
def sysusers_root(tmp_path) -> Path:
    """A scratch root with a Debian-like minimal user database, sysusers applied."""
    tool = _need("systemd-sysusers")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc/group").write_text("root:x:0:\ndialout:x:20:\nplugdev:x:46:\n")
    conf_dir = root / "usr/lib/sysusers.d"
    conf_dir.mkdir(parents=True)
    shutil.copy(SYSUSERS, conf_dir / "tabled.conf")
    result = subprocess.run([tool, f"--root={root}"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0 and os.geteuid() != 0:
        pytest.skip(f"systemd-sysusers --root needs root here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    return root


@pytest.mark.system
def test_sysusers_creates_the_service_account_and_missing_groups(sysusers_root):
    passwd = _read_db(sysusers_root / "etc/passwd")
    groups = _read_db(sysusers_root / "etc/group")
    user = passwd["tabled"]
    assert user[3] == groups["tabled"][2], "primary group is tabled"
    assert int(user[2]) < 1000, "a system account"
    assert user[5] == "/var/lib/tabled"
    assert user[6].endswith("nologin")
    assert "gpio" in groups
    # the role groups, with the daemon in each (it gives each role socket to its group)
    for role in ("viewer", "dealer", "supervisor", "technician"):
        assert "tabled" in groups[f"tabled-{role}"][3].split(","), role
    # groups that already existed keep their ids
    assert groups["dialout"][2] == "20"
    assert groups["plugdev"][2] == "46"


@pytest.mark.system
def test_tmpfiles_makes_config_readable_to_the_service_only(sysusers_root):
    tool = _need("systemd-tmpfiles")
    if os.geteuid() != 0:
        pytest.skip("systemd-tmpfiles must run as root to chown into the scratch root")
    conf_dir = sysusers_root / "usr/lib/tmpfiles.d"
    conf_dir.mkdir(parents=True)
    shutil.copy(TMPFILES, conf_dir / "tabled.conf")
    config_dir = sysusers_root / "etc/tabled"
    config_dir.mkdir()
    table_config = config_dir / "t1.toml"
    table_config.write_text("[table]\n")
    table_config.chmod(0o666)  # copied in carelessly

    result = subprocess.run(
        [tool, f"--root={sysusers_root}", "--create"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    tabled_gid = int(_read_db(sysusers_root / "etc/group")["tabled"][2])
    for path, mode in ((config_dir, 0o750), (table_config, 0o640)):
        st = path.stat()
        assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (mode, 0, tabled_gid), path


# -- udev rules ----------------------------------------------------------------------

# The udev rule grammar, enough to catch typos: KEY or KEY{attr}, an operator,
# a double-quoted value. Keys from udev(7).
_TOKEN = re.compile(r'\s*([A-Z_]+)(?:\{([^}]+)\})?\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(,|$)')
_MATCH_ONLY = {
    "ACTION", "DEVPATH", "KERNEL", "KERNELS", "NAME", "SUBSYSTEM", "SUBSYSTEMS",
    "DRIVER", "DRIVERS", "ATTRS", "TAG", "TAGS", "TEST", "PROGRAM", "RESULT",
    "SYMLINK", "CONST", "SYSCTL",
}  # fmt: skip
_ASSIGNABLE = {
    "NAME", "SYMLINK", "OWNER", "GROUP", "MODE", "ATTR", "SYSCTL", "ENV", "TAG",
    "RUN", "LABEL", "GOTO", "IMPORT", "OPTIONS", "SECLABEL",
}  # fmt: skip
_MATCHABLE = _MATCH_ONLY | {"ATTR", "ENV"}


def parse_rules(text: str) -> list[list[tuple[str, str | None, str, str]]]:
    rules = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens, pos = [], 0
        while pos < len(line):
            m = _TOKEN.match(line, pos)
            assert m, f"99-tabled.rules:{lineno}: cannot parse at {line[pos:]!r}"
            key, attr, op, value, _ = m.groups()
            if op in ("==", "!="):
                assert key in _MATCHABLE, f"line {lineno}: {key} cannot be matched"
            else:
                assert key in _ASSIGNABLE, f"line {lineno}: {key} cannot be assigned"
            tokens.append((key, attr, op, value))
            pos = m.end()
        rules.append(tokens)
    return rules


def _has(rule, key, attr, op, value=None) -> bool:
    return any(
        (k, a, o) == (key, attr, op) and (value is None or v == value) for k, a, o, v in rule
    )


@pytest.fixture(scope="module")
def rules():
    return parse_rules(RULES.read_text())


def test_rules_parse(rules):
    assert len(rules) >= 6


def test_named_serial_devices_are_guarded(rules):
    named = [r for r in rules if _has(r, "SYMLINK", None, "+=")]
    links = {v for r in named for k, _, _, v in r if k == "SYMLINK"}
    assert {"tabled/shoe", "tabled/wheel"} <= links
    for rule in named:
        assert _has(rule, "SUBSYSTEM", None, "==", "tty"), rule
        assert _has(rule, "GROUP", None, "=", "dialout"), rule
        assert _has(rule, "MODE", None, "=", "0660"), rule
        assert _has(rule, "ENV", "ID_MM_DEVICE_IGNORE", "=", "1"), rule
        # identified by something unique, never by kernel name order
        assert _has(rule, "ATTRS", "serial", "==") or _has(rule, "ENV", "ID_PATH", "=="), rule


def test_usb_devices_are_kept_awake_and_scanner_is_reachable(rules):
    awake = [r for r in rules if _has(r, "ATTR", "power/control", "=", "on")]
    assert len(awake) >= 3  # shoe, wheel, scanner
    for rule in awake:
        assert _has(rule, "ENV", "DEVTYPE", "==", "usb_device"), rule
        assert _has(rule, "TEST", None, "==", "power/control"), rule
    scanner = [r for r in awake if _has(r, "GROUP", None, "=", "plugdev")]
    assert scanner and _has(scanner[0], "MODE", None, "=", "0660")


def test_ftdi_latency_and_gpio_rules(rules):
    assert any(
        _has(r, "DRIVER", None, "==", "ftdi_sio") and _has(r, "ATTR", "latency_timer", "=", "1")
        for r in rules
    )
    assert any(
        _has(r, "KERNEL", None, "==", "gpiochip*") and _has(r, "GROUP", None, "=", "gpio")
        for r in rules
    )


def test_placeholders_are_obvious(rules):
    """Unedited, the device-specific rules must match nothing real."""
    for rule in rules:
        if _has(rule, "SYMLINK", None, "+=") or _has(rule, "GROUP", None, "=", "plugdev"):
            assert any("REPLACE_" in v for *_, v in rule), rule


def test_rules_parser_rejects_typos():
    with pytest.raises(AssertionError):
        parse_rules('SUBSYSTEM=="tty", GROUP=="dialout"\n')  # GROUP is assign-only
    with pytest.raises(AssertionError):
        parse_rules('SUBSYSTEM=="tty" MODE="0660"\n')  # missing comma
    with pytest.raises(AssertionError):
        parse_rules('SUBSYTEM=="tty"\n')  # misspelt key


@pytest.mark.system
def test_udevadm_verify(tmp_path):
    udevadm = _need("udevadm")
    probe = subprocess.run([udevadm, "verify", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("this udevadm has no 'verify' command (added in systemd 254)")
    result = subprocess.run(
        [udevadm, "verify", "--resolve-names=never", str(RULES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- MemoryDenyWriteExecute=yes ------------------------------------------------------

#: ZeroMQ as the daemon uses it: its context's I/O threads at SCHED_BATCH, a PUB on tcp, a
#: ROUTER on ipc, a CURVE server, an asyncio context (each starts libzmq's threads)
_ZMQ_SOCKETS = r"""
from daemon.bus.publisher import io_threads_yield
ctx = zmq.Context()
io_threads_yield(ctx)  # as daemon/runtime/app.py makes its context
pub = ctx.socket(zmq.PUB); pub.linger = 0
port = pub.bind_to_random_port("tcp://127.0.0.1")
ctl = ctx.socket(zmq.ROUTER); ctl.linger = 0
ctl.bind("ipc://" + sys.argv[1] + "/ctl.sock")
public, secret = zmq.curve_keypair()
cur = ctx.socket(zmq.PUB); cur.linger = 0
cur.curve_server = True; cur.curve_secretkey = secret
cur.bind_to_random_port("tcp://127.0.0.1")
for s in (pub, ctl, cur):
    s.close()
ctx.term()

async def main():
    actx = zmq.asyncio.Context()
    s = actx.socket(zmq.PUB); s.linger = 0
    s.bind_to_random_port("tcp://127.0.0.1"); s.close(); actx.term()
asyncio.run(main())
"""

_WX_PROBE = (
    r"""
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
    print("SKIP prctl(PR_SET_MDWE) unsupported, errno", ctypes.get_errno())
    sys.exit(0)
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
except OSError:
    pass
else:
    print("W^X not enforced")
    sys.exit(1)

import asyncio, sqlite3
import gpiozero, msgspec, rich, serial, structlog, usb.core, zmq, zmq.asyncio
from gpiozero.pins.mock import MockFactory

assert ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)(41) == 42
"""
    + _ZMQ_SOCKETS
    + r"""
assert msgspec.json.decode(msgspec.json.encode({"card": "TH"})) == {"card": "TH"}

# tabled-bridge.service: TLS to NATS, its client and the metrics endpoint
import ssl, nats, prometheus_client
from cryptography.hazmat.primitives.asymmetric import ec
ec.generate_private_key(ec.SECP256R1())
ssl.create_default_context().load_default_certs()
db = sqlite3.connect(sys.argv[1] + "/j.db")
db.execute("pragma journal_mode=wal"); db.execute("create table t(x)"); db.commit()
factory = MockFactory()
button = gpiozero.Button(5, pin_factory=factory)
factory.pin(5).drive_low()
assert button.is_pressed
print("OK")
"""
)


def test_native_dependencies_run_without_wx_memory(tmp_path):
    """MemoryDenyWriteExecute=yes: pyzmq, msgspec, ctypes, sqlite, gpiozero under W^X.

    The kernel's PR_SET_MDWE (Linux 6.3+) refuses the same mappings systemd's
    seccomp filter refuses: memory both writable and executable, or made
    executable later. A dependency that JIT-compiles or needs an executable
    stack would fail to import or run here instead of in the field.
    """
    result = subprocess.run(
        [sys.executable, "-c", _WX_PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.stdout.startswith("SKIP"):
        pytest.skip(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "OK"


# -- tabled-bridge.service ------------------------------------------------------------------

BRIDGE = SYSTEMD_DIR / "tabled-bridge.service"


@pytest.fixture(scope="module")
def bridge_root(tmp_path_factory) -> Path:
    _need("systemd-analyze")
    root = make_root(tmp_path_factory.mktemp("bridge"), UNIT.read_text())
    (root / "etc/systemd/system/tabled-bridge.service").write_text(BRIDGE.read_text())
    exe = single(parse_unit(BRIDGE.read_text())["Service"], "ExecStart").split()[0]
    stub = root / exe.lstrip("/")
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    return root


def test_bridge_unit_is_notify_with_watchdog_and_always_restarts():
    s = parse_unit(BRIDGE.read_text())["Service"]
    assert single(s, "Type") == "notify" and single(s, "NotifyAccess") == "main"
    assert single(s, "Restart") == "always" and single(s, "WatchdogSec") == "10"
    # the same install prefix as the table's unit, so one drop-in recipe serves both
    assert (
        single(s, "ExecStart").split()[0].rsplit("/", 1)[0] == exec_start_binary().rsplit("/", 1)[0]
    )
    assert "--config /etc/tabled/bridge.toml" in single(s, "ExecStart")


@pytest.mark.system
def test_bridge_unit_verifies_and_is_locked_down(bridge_root):
    result = analyze(bridge_root, "verify", "tabled-bridge.service")
    noise = [x for x in (result.stdout + result.stderr).splitlines() if "tabled-bridge" in x]
    assert noise == [] and result.returncode == 0, result.stdout + result.stderr
    sec = analyze(bridge_root, "security", "--offline=true", "--no-pager", "tabled-bridge.service")
    assert sec.returncode == 0, sec.stderr
    exposure = float(re.search(r"Overall exposure level for \S+: (\d+\.\d+)", sec.stdout)[1])
    assert exposure <= 2.5, sec.stdout


# -- SystemCallFilter= ----------------------------------------------------------------------

_ZMQ_PROBE = (
    r"""
import asyncio, sys
import zmq, zmq.asyncio
"""
    + _ZMQ_SOCKETS
    + """
print("OK")
"""
)


def _under_filter(unit: Path, *command: str, **kw):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "unit_seccomp.py"), str(unit), "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        **kw,
    )


@pytest.fixture
def seccomp() -> None:
    from unit_seccomp import available

    why = available()
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize(
    "unit", [UNIT, SYSTEMD_DIR / "tabled-bridge.service"], ids=lambda p: p.name
)
def test_zeromq_runs_under_the_units_system_call_filter(seccomp, unit, tmp_path):
    """libzmq sets each I/O thread's scheduling policy as it starts it and aborts when that is
    refused: under the shipped filter (``~@resources`` takes ``sched_setscheduler``) every
    daemon and bridge died at its first socket, and nothing here ran code under the filter.
    tests/unit_seccomp.py loads the unit's own filter, read from the file."""
    r = _under_filter(unit, sys.executable, "-c", _ZMQ_PROBE, str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr[-2000:]


def test_the_filter_copy_refuses_what_the_unit_refuses(seccomp, tmp_path):
    """The copy is the unit's: a call of ``@privileged`` fails with EPERM under it, and the unit
    without its ``sched_setscheduler`` line kills ZeroMQ as the shipped one did."""
    r = _under_filter(UNIT, sys.executable, "-c", "import os; os.chroot('/')")
    assert r.returncode != 0 and "PermissionError" in r.stderr, r.stderr[-2000:]
    without = tmp_path / "without.service"
    without.write_text(
        "\n".join(
            x
            for x in UNIT.read_text().splitlines()
            if x.strip() != "SystemCallFilter=sched_setscheduler"
        )
    )
    r = _under_filter(without, sys.executable, "-c", _ZMQ_PROBE, str(tmp_path))
    assert r.returncode != 0 and "Operation not permitted" in r.stderr, r.stdout + r.stderr[-2000:]


def test_the_daemon_plays_under_its_units_system_call_filter(seccomp, tmp_path):
    """The daemon as the unit runs it, as far as the system call filter goes: READY, a card
    dealt on the bus, a clean stop."""
    from daemon_harness import Daemon, endpoints, write_config

    from daemon.bus.subscriber import Follower

    cfg = write_config(tmp_path)
    d = Daemon(cfg)
    d.command = [
        sys.executable,
        str(ROOT / "tests" / "unit_seccomp.py"),
        str(UNIT),
        "--",
        *d.command,
    ]
    try:
        d.start(timeout=30)
        Follower(*endpoints(cfg), table="it").until(lambda e: e.type == "card.dealt", 30)
    finally:
        code = d.stop()
        d.close()
    assert code == 0, d.log.read_text()[-3000:]
