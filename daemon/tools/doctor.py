"""``tablectl doctor``: what most often breaks a table in the field, each with the exact fix.

Device nodes missing or not usable by the service user, another process
(brltty, ModemManager, a second tabled) holding a port, a kernel driver on
a USB interface, ports named ``ttyUSBn`` (renumbered after a replug), the
journal directory, and an unsynchronised clock. It only reads; every fix is
printed for a person to run.
"""

from __future__ import annotations

import argparse
import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.runtime.config import Settings

GRABBERS = {
    "brltty": "sudo systemctl mask --now brltty.path brltty-udev.service brltty",
    "ModemManager": 'add ENV{ID_MM_DEVICE_IGNORE}="1" in the udev rule (/etc/udev/rules.d/99-tabled.rules), '
    "or sudo systemctl disable --now ModemManager",
}


def holders(path: str) -> Iterator[tuple[int, str]]:
    """Processes with ``path`` open (what fuser would say), from /proc."""
    real = os.path.realpath(path)
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            for fd in (pid_dir / "fd").iterdir():
                if os.path.realpath(fd) == real:
                    comm = (pid_dir / "comm").read_text().strip()
                    yield int(pid_dir.name), comm
                    break
        except OSError:
            continue


def _user_groups(user: str) -> set[str] | None:
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        return None
    groups = {g.gr_name for g in grp.getgrall() if user in g.gr_mem}
    groups.add(grp.getgrgid(pw.pw_gid).gr_name)
    return groups


def check_node(path: str, user: str, groups: set[str] | None) -> list[str]:
    """Problems with one device node for the service user, each with its fix."""
    out = []
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return [
            f"{path} does not exist: is the device plugged in? (`tablectl ports` lists what is)"
        ]
    if not stat.S_ISCHR(st.st_mode):
        return [f"{path} is not a character device"]
    group = grp.getgrgid(st.st_gid).gr_name
    mode = stat.S_IMODE(st.st_mode)
    if groups is not None and user != "root":
        owner = pwd.getpwuid(st.st_uid).pw_name
        can = (
            (owner == user and mode & 0o600 == 0o600)
            or (group in groups and mode & 0o060 == 0o060)
            or mode & 0o006 == 0o006
        )
        if not can:
            out.append(
                f"{path} is {owner}:{group} mode {mode:04o}: user {user} cannot use it — "
                f"install the udev rules (`tabled-setup install`: /etc/udev/rules.d/99-tabled.rules, "
                f'GROUP="dialout", MODE="0660") and '
                f"`sudo usermod -aG {group} {user}`"
            )
    return out


def run(a: argparse.Namespace) -> int:
    from daemon.ctl.shared import settings as _settings
    from daemon.runtime.config import ConfigError

    problems: list[str] = []
    notes: list[str] = []
    try:
        s = _settings(a)
    except ConfigError as e:
        if getattr(a, "json", False):
            _print_json([f"config: {e}"], [])
            return 1
        print(f"PROBLEM config: {e}\n  fix: `tablectl config check {e.path}` lists every problem")
        return 1
    from daemon.runtime import host

    problems += host.problems(s)  # what the daemon refuses at start on this PC
    groups = _user_groups(a.user)
    if groups is None:
        notes.append(
            f"no user {a.user!r} here: permission checks are for the current user "
            f"(create it: `tabled-setup install`, or systemd-sysusers /etc/sysusers.d/tabled.conf)"
        )
    for dev in s.config.devices:
        spec = dev.port
        if spec == "sim" or "://" in spec:
            continue
        if re.fullmatch(r"/dev/tty(USB|ACM)\d+", spec):
            problems.append(
                f"device {dev.name}: port {spec} is renumbered after a replug (ttyUSB0 → ttyUSB1): use "
                f"its /dev/serial/by-id/… name (see `tablectl ports`) or usb:VID:PID:SERIAL"
            )
        if spec.startswith("usb:"):
            from drivers.serial import PortUnavailable, resolve_port

            try:
                spec = resolve_port(spec)
            except PortUnavailable as e:
                problems.append(f"device {dev.name}: {e}")
                continue
        for p in check_node(spec, a.user, groups):
            problems.append(f"device {dev.name}: {p}")
        if os.path.exists(spec):
            for pid, comm in holders(spec):
                fix = GRABBERS.get(comm, f"stop it (pid {pid}) or point it at another port")
                if comm in ("tabled", "python3", "python") and comm not in GRABBERS:
                    notes.append(
                        f"device {dev.name}: {spec} is open in {comm} (pid {pid}) — the daemon?"
                    )
                    continue
                problems.append(f"device {dev.name}: {spec} is held by {comm} (pid {pid}): {fix}")
    for svc in ("brltty", "ModemManager"):
        if any(comm == svc for pid, comm in _procs()):
            problems.append(f"{svc} is running: it grabs USB-serial adapters — {GRABBERS[svc]}")
    jdir = s.journal_path.parent
    if not jdir.exists():
        notes.append(f"journal directory {jdir} does not exist yet (the daemon creates it)")
    elif not os.access(jdir, os.W_OK):
        problems.append(
            f"journal directory {jdir} is not writable: "
            f"`sudo chown {a.user}: {jdir}` (systemd's StateDirectory= does this)"
        )
    problems.extend(_went_backwards(s))
    sync = _clock_synchronised()
    if sync is False:
        problems.append(
            "the clock is not synchronised: event times will be wrong — "
            "`sudo timedatectl set-ntp true` and check the time server"
        )
    elif sync is None:
        notes.append("could not tell whether the clock is synchronised (no timedatectl)")
    if getattr(a, "json", False):  # --json is kept: the same findings as one object
        _print_json(problems, notes)
        return 1 if problems else 0
    for n in notes:
        print(f"note     {n}")
    for p in problems:
        print(f"PROBLEM  {p}")
    if not problems:
        print("ok: nothing found that needs fixing")
    return 1 if problems else 0


def _went_backwards(s: Settings) -> list[str]:
    """The start's rollback check, read-only: the journal behind a head mark of its id."""
    from daemon.journal import headmark
    from daemon.runtime.config import head_marks

    if not s.journal_path.is_file():
        return []
    why = headmark.inspect(s.journal_path, head_marks(s))
    return [] if why is None else [why]


def _print_json(problems: list[str], notes: list[str]) -> None:
    from daemon.ctl.shared import print_json

    print_json({"ok": not problems, "problems": problems, "notes": notes})


def _procs() -> Iterator[tuple[int, str]]:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                yield int(d.name), (d / "comm").read_text().strip()
            except OSError:
                continue


def _clock_synchronised() -> bool | None:
    if shutil.which("timedatectl"):
        try:
            r = subprocess.run(
                ["timedatectl", "show", "--property=NTPSynchronized", "--value"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            if r.returncode == 0 and r.stdout.strip() in ("yes", "no"):
                return r.stdout.strip() == "yes"
        except (OSError, subprocess.TimeoutExpired):
            return None
    if Path("/run/systemd/timesync/synchronized").exists():
        return True
    return None
