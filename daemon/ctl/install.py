"""``tabled-setup``: install a table on a Debian/Ubuntu PC from the installed package, or remove it.

What a distribution package's maintainer scripts would do, as one command a
technician runs as root: the service user and groups (sysusers.d), ``/etc/tabled``
with its modes (tmpfiles.d), the table's config, the unit with ``ExecStart=`` at
*this* installation's ``tabled``, the udev rules; then the unit is checked with
``systemd-analyze verify`` and ``tabled@TABLE`` enabled. Every step is printed;
``--dry-run`` prints the steps and does none. ``--root DIR`` installs into another
root (an image being built, a test), the way ``systemctl --root`` does; the
running system's systemd and udev are then left alone.

``uninstall`` disables the table and removes its config; the shared files (unit,
rules, snippets) go with the last table. The journal (``/var/lib/tabled/TABLE``)
stays — it is the table's record — and so do the ``tabled`` user and groups,
which may still own it.

Why long: the install's steps and their undoing are read side by side (uninstall
mirrors install step for step, and the bridge's installer reuses the account steps);
the parser stays beside them because ``make man`` builds the page from it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from daemon.ctl import shipped
from daemon.runtime.config import ConfigError, load

SYSUSERS = "etc/sysusers.d/tabled.conf"
TMPFILES = "etc/tmpfiles.d/tabled.conf"
UNIT = "etc/systemd/system/tabled@.service"
RULES = "etc/udev/rules.d/99-tabled.rules"
MAN = "usr/local/share/man/man1"
#: the pages the package ships (``docs/man``, ``daemon/ctl/manpages.py``)
MAN_PAGES = ("tabled", "tablectl", "tabled-setup", "tabled-bridge")
CONF_DIR = "etc/tabled"
STATE_DIR = "var/lib/tabled"


class SetupError(Exception):
    """A step failed or cannot be done; the message says what to do."""


@dataclass
class Step:
    text: str
    run: Callable[[], None] | None = None


@dataclass
class Target:
    root: Path  # "/" for this PC
    table: str

    @property
    def offline(self) -> bool:
        """True when installing into another root, or when systemd is not running here."""
        return self.root != Path("/") or not Path("/run/systemd/system").is_dir()

    def at(self, rel: str) -> Path:
        return self.root / rel

    def root_args(self) -> list[str]:
        return [] if self.root == Path("/") else [f"--root={self.root}"]

    @property
    def instance(self) -> str:
        return f"tabled@{self.table}.service"


def run_tool(*cmd: str) -> None:
    exe = shutil.which(cmd[0])
    if exe is None:
        raise SetupError(f"{cmd[0]} is not installed (Debian: apt install systemd)")
    r = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SetupError(
            f"{' '.join(cmd)} failed ({r.returncode}): {(r.stderr or r.stdout).strip()}"
        )


def shown(*words: object) -> str:
    return " ".join(str(w) for w in words)


def write_file(dest: Path, text: str, mode: int) -> Callable[[], None]:
    def do() -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.new")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(mode)
        tmp.replace(dest)

    return do


def remove_file(p: Path) -> Callable[[], None]:
    return lambda: p.unlink(missing_ok=True)


def console_script(name: str) -> Path:
    """A console script of the environment this command runs from (its unit's ExecStart)."""
    exe = Path(sys.executable).parent / name
    if not exe.is_file():
        raise SetupError(f"{exe} not found: run this from the venv tabled is installed in")
    return exe


def tabled_binary() -> Path:
    return console_script("tabled")


def unit_text(exec_start: Path, unit: str = "tabled@.service") -> str:
    """The shipped ``unit`` with ``ExecStart=`` pointing at this installation."""
    text = shipped.path("systemd", unit).read_text(encoding="utf-8")
    new, n = re.subn(
        r"^ExecStart=\S+", f"ExecStart={exec_start}", text, count=1, flags=re.MULTILINE
    )
    if n != 1:
        raise SetupError(f"the shipped {unit} has no ExecStart= line")
    return new


def check_config(table: str, config: Path) -> str:
    """The config's text, once it loads the way the unit will load it."""
    env = {
        "TABLED_STATE_DIR": f"/{STATE_DIR}/{table}",
        "TABLED_RUNTIME_DIR": f"/run/tabled/{table}",
        "TABLED_HEAD_MARK": f"/var/lib/tabled-marks/{table}/journal.head",
    }
    try:
        settings = load(config, env=env)
    except ConfigError as e:
        raise SetupError(f"{len(e.problems)} problem(s) in {e.path}:\n{e}") from None
    if settings.table != table:
        raise SetupError(
            f"{config}: [table] id is {settings.table!r} but --table is {table!r}; they must "
            f"match: the unit tabled@{table} reads /etc/tabled/{table}.toml and keeps its "
            f"journal in /var/lib/tabled/{table}"
        )
    return config.read_text(encoding="utf-8")


def account_steps(t: Target) -> list[Step]:
    """The ``tabled`` user, its groups and ``/etc/tabled``: what a table and the bridge share."""
    ra = t.root_args()
    return [
        Step(
            f"write {t.at(SYSUSERS)} (user tabled, device groups)",
            write_file(
                t.at(SYSUSERS), shipped.path("systemd", "tabled.sysusers.conf").read_text(), 0o644
            ),
        ),
        Step(
            "create the users and groups: " + shown("systemd-sysusers", *ra, t.at(SYSUSERS)),
            lambda: run_tool("systemd-sysusers", *ra, str(t.at(SYSUSERS))),
        ),
        Step(
            f"write {t.at(TMPFILES)} (/etc/tabled 0750 root:tabled, configs 0640)",
            write_file(
                t.at(TMPFILES), shipped.path("systemd", "tabled.tmpfiles.conf").read_text(), 0o644
            ),
        ),
    ]


def install_steps(t: Target, config: Path, start: bool = False) -> list[Step]:
    text = check_config(t.table, config)
    unit = unit_text(tabled_binary())
    steps = [
        Step(f"validated {config} (table {t.table})"),
        *account_steps(t),
        Step(
            f"install the config as {t.at(CONF_DIR)}/{t.table}.toml",
            write_file(t.at(f"{CONF_DIR}/{t.table}.toml"), text, 0o640),
        ),
        tmpfiles_step(t),
        Step(
            f"write {t.at(UNIT)} (ExecStart={tabled_binary()})", write_file(t.at(UNIT), unit, 0o644)
        ),
        _rules_step(t),
        Step(
            f"write the man pages {', '.join(f'{t.at(MAN)}/{n}.1' for n in MAN_PAGES)}",
            _write_man(t),
        ),
    ]
    if not t.offline:
        steps += [
            Step("systemctl daemon-reload", lambda: run_tool("systemctl", "daemon-reload")),
            Step("udevadm control --reload-rules", _udev_reload),
        ]
    return steps + enable_steps(t, start)


def tmpfiles_step(t: Target) -> Step:
    """The modes and owners of the state and config folders (the table's and the bridge's)."""
    ra = t.root_args()
    return Step(
        "apply the modes: " + shown("systemd-tmpfiles --create", *ra, t.at(TMPFILES)),
        lambda: run_tool("systemd-tmpfiles", "--create", *ra, str(t.at(TMPFILES))),
    )


def enable_steps(t: Target, start: bool, mark: str = "tabled@") -> list[Step]:
    """The unit checked (where systemd-analyze is: :func:`verify_unit` with ``mark``), then
    enabled, and with ``start`` started too (not into an offline root)."""
    ra = t.root_args()
    steps = []
    if shutil.which("systemd-analyze"):
        steps.append(
            Step(
                "check the unit: " + shown("systemd-analyze", *ra, "verify", t.instance),
                lambda: verify_unit(t, mark),
            )
        )
    now = ["--now"] if start and not t.offline else []
    steps.append(
        Step(
            f"systemctl {' '.join([*ra, 'enable', *now, t.instance])}",
            lambda: run_tool("systemctl", *ra, "enable", *now, t.instance),
        )
    )
    return steps


def _rules_step(t: Target) -> Step:
    """The udev rules are edited per table PC: an edited file is kept, like a conffile."""
    rules = shipped.path("systemd", "99-tabled.rules").read_text()
    dest = t.at(RULES)
    if dest.exists() and dest.read_text() != rules:
        dist = dest.with_name(dest.name + ".dist")
        return Step(
            f"keep the edited {dest}; this release's example goes to {dist} (udev ignores it)",
            write_file(dist, rules, 0o644),
        )
    return Step(
        f"write {dest} (device symlinks and groups; edit it for this PC)",
        write_file(dest, rules, 0o644),
    )


def _write_man(t: Target) -> Callable[[], None]:
    """The package's own pages (package data, ``daemon/ctl/manpages.py``), copied as they are."""

    def do() -> None:
        for name in MAN_PAGES:
            page = shipped.path("man", f"{name}.1").read_text(encoding="utf-8")
            write_file(t.at(f"{MAN}/{name}.1"), page, 0o644)()

    return do


def _udev_reload() -> None:
    if shutil.which("udevadm") and Path("/run/udev/control").exists():
        run_tool("udevadm", "control", "--reload-rules")


def verify_unit(t: Target, mark: str = "tabled@") -> None:
    """``systemd-analyze verify`` of ``t``'s unit; lines about other units are their own."""
    exe = shutil.which("systemd-analyze")
    assert exe is not None
    r = subprocess.run(
        [exe, *t.root_args(), "verify", t.instance],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"},
    )
    ours = [x for x in (r.stdout + r.stderr).splitlines() if mark in x]
    if r.returncode != 0 or ours:
        raise SetupError("systemd-analyze verify: " + ("\n".join(ours) or r.stderr.strip()))


def uninstall_steps(t: Target) -> list[Step]:
    conf = t.at(f"{CONF_DIR}/{t.table}.toml")
    ra = t.root_args()
    now = [] if t.offline else ["--now"]
    steps = [
        Step(
            f"systemctl {' '.join([*ra, 'disable', *now, t.instance])}",
            lambda: run_tool("systemctl", *ra, "disable", *now, t.instance),
        ),
        Step(f"remove {conf}", remove_file(conf)),
    ]
    others = sorted(
        p.stem for p in t.at(CONF_DIR).glob("*.toml") if p != conf and p.name != "bridge.toml"
    )
    if others:
        steps.append(
            Step(f"keep the unit, rules and snippets: other tables use them ({', '.join(others)})")
        )
    else:
        for rel in (
            UNIT,
            RULES,
            RULES + ".dist",
            TMPFILES,
            SYSUSERS,
            *(f"{MAN}/{name}.1" for name in MAN_PAGES),
        ):
            steps.append(Step(f"remove {t.at(rel)}", remove_file(t.at(rel))))
        steps.append(Step(f"remove {t.at(CONF_DIR)} if empty", lambda: _rmdir(t.at(CONF_DIR))))
        if not t.offline:
            steps.append(
                Step("systemctl daemon-reload", lambda: run_tool("systemctl", "daemon-reload"))
            )
    steps.append(
        Step(
            f"keep {t.at(STATE_DIR)}/{t.table} (the journal) and the tabled user and groups "
            "(they may own it); remove them by hand if the table's record is no longer needed"
        )
    )
    return steps


def _rmdir(p: Path) -> None:
    try:
        p.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        pass  # not empty: a file someone put there stays


def execute(steps: list[Step], dry_run: bool, out: Callable[[str], None] = print) -> None:
    for s in steps:
        if s.run is None:
            out(f"  {s.text}")
            continue
        if dry_run:
            out(f"  would {s.text}")
            continue
        s.run()
        out(f"  done: {s.text}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tabled-setup",
        description="Install a table on this PC from the installed tabled package, or remove it.",
        epilog="example: sudo tabled-setup install --table bac-07 --config bac-07.toml --dry-run",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--table", "-t", required=True, help="the table id (the unit's instance name)"
    )
    common.add_argument("--dry-run", "-n", action="store_true", help="print the steps, do nothing")
    common.add_argument(
        "--root", default="/", type=Path, help="install into this root directory (default: /)"
    )
    i = sub.add_parser(
        "install",
        parents=[common],
        help="install and enable one table",
        epilog="example: sudo tabled-setup install --table bac-07 --config ./bac-07.toml",
    )
    i.add_argument("--config", "-c", required=True, type=Path, help="the table's config file")
    i.add_argument("--start", action="store_true", help="also start the table now")
    sub.add_parser(
        "uninstall",
        parents=[common],
        help="disable one table and remove its config (the journal stays)",
        epilog="example: sudo tabled-setup uninstall --table bac-07",
    )
    ex = sub.add_parser(
        "example",
        help="list the shipped example configs, or print one",
        epilog="example: tabled-setup example demo > bac-07.toml",
    )
    ex.add_argument("name", nargs="?", help="an example's name (without .toml)")
    return p


def example(name: str | None) -> int:
    folder = shipped.folder("config")
    names = sorted(n for n in shipped.EXAMPLES if (folder / f"{n}.toml").is_file())
    if name is None:
        print("\n".join(names))
        return 0
    if name not in names:
        print(f"tabled-setup: no example {name!r}; there are: {', '.join(names)}", file=sys.stderr)
        return 2
    sys.stdout.write((folder / f"{name}.toml").read_text(encoding="utf-8"))
    return 0


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.command == "example":
        try:
            return example(a.name)
        except BrokenPipeError:  # `| head`
            sys.stderr.close()
            return 0
    t = Target(root=a.root.resolve(), table=a.table)
    try:
        if a.command == "install":
            steps = install_steps(t, a.config, start=a.start)
        else:
            steps = uninstall_steps(t)
        what = "would " + a.command if a.dry_run else a.command
        print(
            f"tabled-setup: {what} table {t.table}"
            + ("" if t.root == Path("/") else f" in {t.root}")
        )
        execute(steps, a.dry_run)
    except SetupError as e:
        print(f"tabled-setup: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tabled-setup: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
