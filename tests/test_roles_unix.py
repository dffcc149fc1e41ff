"""Roles hold on a real install: real Unix users in each role group, the daemon as the unit runs it.

The shipped sysusers file is applied to this machine (the service user ``tabled``,
the role groups with the daemon in each), and one person per role is created,
plus an outsider in no group. The daemon runs as ``tabled`` with the unit's
``Group=``, ``SupplementaryGroups=`` and ``UMask=``; its config is ``0640
root:tabled``, its state directory ``0750`` and its runtime directory has the
unit's ``RuntimeDirectoryMode=``, as systemd would make them. Every person then
runs ``tablectl -t TABLE`` (which cannot read the config) against every command
class: read (status), dealer (betting close), supervisor (void hand), technician
(a device command) and trace.

It needs root (to create users and switch to them) and an interpreter the other
users may run: the venv's Python lives under root's home on these machines, so
the test runs Debian's ``/usr/bin/python3.11`` (the same minor version) over the
venv's packages. Where any of that is missing it skips, saying which. The users
and groups it creates stay, as an install's would: they own nothing, and another
run of the suite (or another checkout on this machine) reuses them.
"""

from __future__ import annotations

import fcntl
import grp
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_harness import free_port

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "systemd" / "tabled@.service"
SYSUSERS = ROOT / "systemd" / "tabled.sysusers.conf"
ROLES = ("viewer", "dealer", "supervisor", "technician")
TABLE = "rt"
PYTHON = Path("/usr/bin/python3.11")

pytestmark = pytest.mark.system


def unit_service() -> dict[str, str]:
    out: dict[str, str] = {}
    section = ""
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = (out[k] + " " + v) if k in out else v
    return out


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root: it creates Unix users and runs the daemon and tablectl as them"
    for tool in ("systemd-sysusers", "useradd", "usermod"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed on this machine"
    if not PYTHON.exists():
        return f"{PYTHON} is missing: no interpreter other users may run"
    for p in [ROOT, *ROOT.parents]:
        if not os.stat(p).st_mode & 0o001:
            return f"{p} is not searchable by other users: the checkout must be readable to them"
    return None


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def people() -> dict[str, str]:
    """role → a person's user name in that role's group; "outsider" in none."""
    why = _why_not()
    if why:
        pytest.skip(why)
    with open("/tmp/tabled-roles-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # other checkouts' suites on this machine
        _sh("systemd-sysusers", str(SYSUSERS))
        names = {role: f"tabled-t-{role}" for role in ROLES} | {"outsider": "tabled-t-outsider"}
        for role, name in names.items():
            groups = "" if role == "outsider" else f"tabled-{role}"
            try:
                pwd.getpwnam(name)
                _sh("usermod", "-G", groups, name)
            except KeyError:
                _sh(
                    "useradd",
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    *(["-G", groups] if groups else []),
                    name,
                )
    return names


def _py(module: str) -> list[str]:
    """Debian's interpreter running ``module`` over this venv's packages, .pth files and all
    (the editable install's finder among them), as the venv's own Python would."""
    site = sysconfig.get_paths()["purelib"]
    boot = (
        f"import runpy, site, sys; site.addsitedir({site!r}); sys.argv[0] = {module!r}; "
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    )
    return [str(PYTHON), "-c", boot]


def _env(base: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TABLED_RUN_ROOT": str(base / "run"),
        "TABLED_ETC": str(base / "etc"),
    }


@pytest.fixture(scope="module")
def table(people) -> Iterator[Path]:
    """The daemon running as the unit runs it; yields the base directory."""
    svc = unit_service()
    base = Path(tempfile.mkdtemp(prefix="td-roles-", dir="/tmp"))
    base.chmod(0o755)
    tabled = pwd.getpwnam(svc["User"])
    gid = grp.getgrnam(svc["Group"]).gr_gid
    etc, state, run = base / "etc", base / "lib" / TABLE, base / "run" / TABLE
    for d, mode, owner in (
        (etc, 0o750, (0, gid)),
        (base / "lib", 0o755, (0, 0)),
        (state, int(svc.get("StateDirectoryMode", "0755"), 8), (tabled.pw_uid, gid)),
        (base / "run", 0o755, (0, 0)),
        (run, int(svc["RuntimeDirectoryMode"], 8), (tabled.pw_uid, gid)),
    ):
        d.mkdir(parents=True, exist_ok=True)
        os.chown(d, *owner)
        d.chmod(mode)
    roles = ", ".join(f'{r} = "tabled-{r}"' for r in ROLES)
    conf = etc / f"{TABLE}.toml"
    conf.write_text(
        f"""
[table]
id = "{TABLE}"
game = "baccarat"

[game]
start_burn = "first-card"
betting_seconds = 0.3
settle_seconds = 0.05
auto_new_shoe = true

[[devices]]
name = "shoe"
driver = "shoe-line"
port = "sim"
[devices.options]
encoding = "rank-suit"
[devices.sim]
seed = 3
pace = 0.02

[bus]
publish = "tcp://127.0.0.1:{free_port()}"
replay = "tcp://127.0.0.1:{free_port()}"
heartbeat_interval = 0.2

[control]
roles = {{ {roles} }}

[log]
format = "json"
"""
    )
    os.chown(conf, 0, gid)
    conf.chmod(0o640)

    notify_dir = base / "notify"
    notify_dir.mkdir()
    notify_dir.chmod(0o755)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_dir / "sock"))
    (notify_dir / "sock").chmod(0o777)
    supplementary = [g for g in svc["SupplementaryGroups"].split() if _group_exists(g)]
    log = (base / "daemon.log").open("wb")
    env = _env(base) | {
        "NOTIFY_SOCKET": str(notify_dir / "sock"),
        "TABLED_STATE_DIR": str(state),
        "TABLED_RUNTIME_DIR": str(run),
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*_py("daemon.runtime.app"), "--config", str(conf)],
        cwd=run,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        user=tabled.pw_uid,
        group=gid,
        extra_groups=supplementary,
        umask=int(svc["UMask"], 8),
    )
    try:
        notify.settimeout(30)
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"no READY=1; log:\n{(base / 'daemon.log').read_text()[-3000:]}"
                )
            try:
                msg = notify.recv(4096).decode()
            except TimeoutError:
                continue
            if "READY=1" in msg.split("\n"):
                break
        yield base
    finally:
        proc.terminate()
        proc.wait(10)
        notify.close()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def as_user(base: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    user = pwd.getpwnam(name)
    groups = [g.gr_gid for g in grp.getgrall() if name in g.gr_mem]
    return subprocess.run(
        [*_py("daemon.ctl.cli"), "-t", TABLE, "--actor", name, "--timeout", "3", *args],
        cwd="/",
        env=_env(base),
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=groups,
        capture_output=True,
        text=True,
        timeout=60,
    )


#: command class → (tablectl arguments, the roles allowed)
CLASSES = {
    "read": (("--json", "status"), set(ROLES)),
    "dealer": (("betting", "close"), {"dealer", "supervisor"}),
    "supervisor": (("void", "hand", "--reason", "role test"), {"supervisor"}),
    "technician": (("device", "shoe", "STATUS", "--wait", "0.2"), {"technician"}),
    "trace": (("trace", "shoe", "--seconds", "0.5"), {"technician", "supervisor"}),
}


@pytest.mark.parametrize("role", [*ROLES, "outsider"])
@pytest.mark.parametrize("what", list(CLASSES))
def test_every_role_against_every_command_class(table, people, role, what):
    args, allowed = CLASSES[what]
    r = as_user(table, people[role], *args)
    said = r.stdout + r.stderr
    assert "Traceback" not in said, said
    if role == "outsider":
        assert r.returncode == 3, said  # unreachable to them, as documented
        assert "you may not open" in said and "control.sock" in said, said
    elif role in allowed:
        assert "needs the" not in said and "you may not open" not in said, said
        if what == "read":
            assert r.returncode in (0, 1), said  # 1: the table wants attention, still read
            assert json.loads(r.stdout)["table"] == TABLE
    else:
        assert r.returncode == 1, said
        assert f"you are {role}" in said and "needs the" in said, said


def test_nobody_but_the_service_reads_the_config(table, people):
    conf = table / "etc" / f"{TABLE}.toml"
    for name in people.values():
        user = pwd.getpwnam(name)
        r = subprocess.run(
            [str(PYTHON), "-c", f"open({str(conf)!r}).read()"],
            user=user.pw_uid,
            group=user.pw_gid,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode != 0 and "PermissionError" in r.stderr, name


def test_a_role_socket_of_another_group_is_refused_saying_why(table, people):
    r = as_user(table, people["viewer"], "--role", "dealer", "betting", "close")
    assert r.returncode == 3
    assert "you may not open" in r.stderr and "control-dealer.sock" in r.stderr
    assert "tabled-dealer" in r.stderr and "--role viewer" in r.stderr


def test_tablectl_list_shows_the_table_and_the_sockets_you_may_use(table, people):
    r = as_user(table, people["dealer"], "--json", "list")
    assert r.returncode == 0, r.stderr
    (row,) = [x for x in json.loads(r.stdout) if x["table"] == TABLE]
    assert row["running"] is True and row["game"] == "baccarat"
    assert set(row["sockets"]) == {"dealer"}
    plain = as_user(table, people["outsider"], "list")
    assert TABLE in plain.stdout and "running" in plain.stdout


def test_the_unit_needs_every_role_group(people):
    svc = unit_service()
    for role in ROLES:
        assert f"tabled-{role}" in svc["SupplementaryGroups"].split()
        assert "tabled" in grp.getgrnam(f"tabled-{role}").gr_mem, "the daemon must be in it"
    assert sys.version_info[:2] == (3, 11)
