"""``tabled-bridge install``: set up the floor's bridge from the installed package, or remove it.

The table's installer (``daemon.ctl.install``) does the same for ``tabled@TABLE``; this one
writes ``/etc/tabled/bridge.toml`` and ``tabled-bridge.service`` (ExecStart at *this*
installation's ``tabled-bridge``), and copies the key files the config names by
relative path beside it, keeping those paths: secrets (CURVE client keys, NATS creds,
seeds, tokens, passwords, the TLS key) become the ``tabled`` user's own, mode 0600,
because the bridge refuses secrets others may read; public certificates 0640
root:tabled. Absolute paths are left where they are. ``uninstall`` disables the
unit and removes the config and the unit; the key files stay (they are the floor's
credentials: remove them by hand).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.config import BridgeConfig, load
from daemon.ctl.install import (
    CONF_DIR,
    SetupError,
    Step,
    Target,
    account_steps,
    console_script,
    enable_steps,
    execute,
    remove_file,
    run_tool,
    tmpfiles_step,
    unit_text,
    write_file,
)
from daemon.runtime.config import ConfigError

UNIT = "etc/systemd/system/tabled-bridge.service"
CONFIG = f"{CONF_DIR}/bridge.toml"


@dataclass
class BridgeTarget(Target):
    @property
    def instance(self) -> str:
        return "tabled-bridge.service"


def key_files(cfg: BridgeConfig) -> list[tuple[str, str, bool]]:
    """Every file the config names: (config key, path as written, is it a secret)."""
    n = cfg.nats
    out = [(f"nats.{k}", getattr(n, k), True) for k in ("creds", "nkey_seed", "token_file")]
    out.append(("nats.password_file", n.password_file, True))
    if n.tls is not None:
        out += [("nats.tls.ca", n.tls.ca, False), ("nats.tls.cert", n.tls.cert, False)]
        out.append(("nats.tls.key", n.tls.key, True))
    out.append(("bridge.client_key", cfg.bridge.client_key, True))
    for i, t in enumerate(cfg.tables):
        out += [(f"tables[{i}].server_key", t.server_key, False)]
        out += [(f"tables[{i}].client_key", t.client_key, True)]
    return [(k, f, secret) for k, f, secret in out if f]


def bridge_binary() -> Path:
    return console_script("tabled-bridge")


def _ids(root: Path, name: str) -> tuple[int, int]:
    """``name``'s uid and gid in ``root``'s own passwd (an image's, when --root)."""
    for line in (root / "etc/passwd").read_text().splitlines():
        f = line.split(":")
        if f[0] == name:
            return int(f[2]), int(f[3])
    raise SetupError(f"no user {name!r} in {root / 'etc/passwd'}: systemd-sysusers did not run")


def _copy(root: Path, src: Path, dest: Path, secret: bool) -> Callable[[], None]:
    def do() -> None:
        uid, gid = _ids(root, "tabled")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.new")
        tmp.write_bytes(src.read_bytes())
        os.chown(tmp, uid if secret else 0, gid)
        tmp.chmod(0o600 if secret else 0o640)
        tmp.replace(dest)

    return do


def install_steps(t: BridgeTarget, config: Path, start: bool = False) -> list[Step]:
    try:
        cfg = load(config)
    except ConfigError as e:
        raise SetupError(f"{len(e.problems)} problem(s) in {e.path}:\n{e}") from None
    exe = bridge_binary()
    etc = t.at(CONF_DIR)
    steps = [
        Step(f"validated {config} ({len(cfg.tables)} tables)"),
        *account_steps(t),
        Step(
            f"install the config as {t.at(CONFIG)}",
            write_file(t.at(CONFIG), config.read_text(), 0o640),
        ),
    ]
    for key, f, secret in key_files(cfg):
        if Path(f).is_absolute():
            steps.append(Step(f"leave {f} ({key}) where it is: an absolute path"))
            continue
        dest = etc / f
        mode = "0600 tabled" if secret else "0640 root:tabled"
        steps.append(
            Step(f"copy {key} to {dest} ({mode})", _copy(t.root, config.parent / f, dest, secret))
        )
    steps += [
        tmpfiles_step(t),
        Step(
            f"write {t.at(UNIT)} (ExecStart={exe})",
            write_file(t.at(UNIT), unit_text(exe, "tabled-bridge.service"), 0o644),
        ),
    ]
    if not t.offline:
        steps.append(
            Step("systemctl daemon-reload", lambda: run_tool("systemctl", "daemon-reload"))
        )
    return steps + enable_steps(t, start, "tabled-bridge")


def uninstall_steps(t: BridgeTarget) -> list[Step]:
    ra = t.root_args()
    now = [] if t.offline else ["--now"]
    steps = [
        Step(
            f"systemctl {' '.join([*ra, 'disable', *now, t.instance])}",
            lambda: run_tool("systemctl", *ra, "disable", *now, t.instance),
        ),
        Step(f"remove {t.at(CONFIG)}", remove_file(t.at(CONFIG))),
        Step(f"remove {t.at(UNIT)}", remove_file(t.at(UNIT))),
    ]
    if not t.offline:
        steps.append(
            Step("systemctl daemon-reload", lambda: run_tool("systemctl", "daemon-reload"))
        )
    steps.append(Step(f"keep the key files under {t.at(CONF_DIR)}: remove them by hand"))
    return steps


def run(command: str, config: Path | None, root: Path, dry_run: bool, start: bool) -> int:
    t = BridgeTarget(root=root.resolve(), table="bridge")
    try:
        if command == "install":
            assert config is not None
            steps = install_steps(t, config, start)
        else:
            steps = uninstall_steps(t)
        what = "would " + command if dry_run else command
        print(
            f"tabled-bridge: {what} the bridge" + ("" if t.root == Path("/") else f" in {t.root}")
        )
        execute(steps, dry_run)
    except SetupError as e:
        print(f"tabled-bridge: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tabled-bridge: {e}", file=sys.stderr)
        return 1
    return 0
