"""The package carries the product, and ``tabled-setup`` installs a table from it (issue 15).

* the wheel, built from this tree, holds the example configs and the systemd
  files as package data, and ``daemon.ctl.shipped`` finds them there (not in a
  repository: the unpacked wheel is imported on its own);
* ``tabled-setup install --root`` into a scratch root that looks like a Debian
  PC: users and groups (systemd-sysusers), modes (systemd-tmpfiles), the unit
  with ExecStart at this venv's tabled, the rules, ``systemd-analyze verify``,
  ``systemctl enable``; ``--dry-run`` changes nothing; ``uninstall`` removes it
  all and keeps the journal;
* refusals: a config with errors, a table id that does not match;
* ``make run`` installs the runtime only; the lock pins every runtime
  dependency with hashes, inside pyproject's ranges.

The full acceptance — the wheel into a clean Debian 12 chroot — is
``.ci/install-check`` (``make install-check``): it needs debootstrap and minutes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from daemon.ctl import install, shipped

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "config" / "demo.toml"


def _need(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed on this machine")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # setuptools copies package data into build/lib and never removes it: a file once there
    # (a config since deleted or untracked) would ride along in every later wheel
    shutil.rmtree(ROOT / "build" / "lib" / "daemon" / "data", ignore_errors=True)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    (found,) = out.glob("tabled-*.whl")
    return found


def test_the_wheel_carries_configs_systemd_files_and_man_pages(wheel, tmp_path):
    names = set(zipfile.ZipFile(wheel).namelist())
    # the shipped examples exactly: an untracked config/*.toml is not picked up (issue 33)
    configs = {n for n in names if n.startswith("daemon/data/config/")}
    assert configs == {f"daemon/data/config/{n}.toml" for n in shipped.EXAMPLES}
    # the hashed lock docs/operations.md installs from, beside the wheel's own files
    lock = zipfile.ZipFile(wheel).read("daemon/data/requirements/table-pc.txt").decode()
    assert lock == (ROOT / "requirements" / "table-pc.txt").read_text()
    for f in (ROOT / "systemd").iterdir():
        assert f"daemon/data/systemd/{f.name}" in names
    for name in install.MAN_PAGES:
        page = zipfile.ZipFile(wheel).read(f"daemon/data/man/{name}.1").decode()
        assert page == (ROOT / "docs/man" / f"{name}.1").read_text()
        assert page.startswith(f'.TH {name.upper().replace("-", chr(92) + "-")} "1"'), page[:80]
    scripts = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    )
    assert b"tabled-setup = daemon.ctl.install:main" in scripts

    # the unpacked wheel alone, not this repository: shipped files come from package data
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)

    def from_wheel(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, *args],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(site)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    folder = from_wheel("-c", "from daemon.ctl import shipped; print(shipped.folder('systemd'))")
    assert Path(folder.strip()) == site / "daemon" / "data" / "systemd"
    # and tablectl man, run from the unpacked wheel, prints the page the wheel carries
    man = from_wheel("-m", "daemon.ctl.cli", "man")
    assert man == (site / "daemon/data/man/tablectl.1").read_text()


def test_the_shipped_examples_are_the_tracked_configs():
    """The fixed list is git's config/*.toml: a config added to the repository is shipped,
    one lying untracked in a working tree is not."""
    r = subprocess.run(
        ["git", "ls-files", "config/*.toml"], cwd=ROOT, capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    assert sorted(Path(x).stem for x in r.stdout.split()) == sorted(shipped.EXAMPLES)


def test_setup_example_lists_only_the_shipped_examples(tmp_path):
    """`tabled-setup example` reads the fixed list, not a glob of the folder."""
    folder = tmp_path / "config"
    folder.mkdir()
    for n in (*shipped.EXAMPLES, "my-untracked-copy"):
        (folder / f"{n}.toml").write_text("")
    code = (
        "import sys; from pathlib import Path; from daemon.ctl import install, shipped;"
        f"shipped.folder = lambda kind: Path({str(folder)!r});"
        "sys.exit(install.main(['example']))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == sorted(shipped.EXAMPLES)


def make_pc(tmp: Path) -> Path:
    """A scratch root with the host's vendor units and this venv's tabled at its own path."""
    vendor = next(
        (
            p
            for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
            if (p / "sysinit.target").exists()
        ),
        None,
    )
    if vendor is None:
        pytest.skip("no systemd vendor unit directory on this machine")
    root = tmp / "pc"
    shutil.copytree(vendor, root / "usr/lib/systemd/system", symlinks=True)
    stub = root / str(install.tabled_binary()).lstrip("/")
    stub.parent.mkdir(parents=True)
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    return root


def setup_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon.ctl.install", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "usr/lib/systemd" not in str(p)}


@pytest.mark.system
def test_install_then_uninstall_a_table_of_demo_shape(tmp_path):
    _need("systemd-sysusers", "systemd-tmpfiles", "systemctl", "systemd-analyze")
    if os.geteuid() != 0:
        pytest.skip("chown to the tabled group needs root")
    pc = make_pc(tmp_path)
    before = files_under(pc)

    dry = setup_cmd("install", "--table", "demo", "--config", str(DEMO), "--root", str(pc), "-n")
    assert dry.returncode == 0, dry.stderr
    assert "would systemctl" in dry.stdout
    assert files_under(pc) == before, "--dry-run changed the root"

    r = setup_cmd("install", "--table", "demo", "--config", str(DEMO), "--root", str(pc))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done: check the unit: systemd-analyze" in r.stdout
    etc = pc / "etc"
    group = {
        line.split(":")[0]: int(line.split(":")[2])
        for line in (etc / "group").read_text().splitlines()
    }
    conf = etc / "tabled" / "demo.toml"
    assert conf.read_text() == DEMO.read_text()
    assert (conf.stat().st_mode & 0o777, conf.stat().st_gid) == (0o640, group["tabled"])
    d = (etc / "tabled").stat()
    assert (d.st_mode & 0o777, d.st_gid) == (0o750, group["tabled"])
    assert "tabled:" in (etc / "passwd").read_text()
    unit = (etc / "systemd/system/tabled@.service").read_text()
    assert f"ExecStart={install.tabled_binary()} --config /etc/tabled/%i.toml" in unit
    assert (etc / "systemd/system/multi-user.target.wants/tabled@demo.service").is_symlink()
    assert (etc / "udev/rules.d/99-tabled.rules").is_file()
    for name in install.MAN_PAGES:
        man = (pc / f"usr/local/share/man/man1/{name}.1").read_text()
        assert man == (ROOT / "docs/man" / f"{name}.1").read_text()
    assert "tablectl recall" in (pc / "usr/local/share/man/man1/tablectl.1").read_text()

    # an edited rules file survives a second install; the example goes beside it
    rules = etc / "udev/rules.d/99-tabled.rules"
    rules.write_text(rules.read_text() + "# edited for this PC\n")
    again = setup_cmd("install", "--table", "demo", "--config", str(DEMO), "--root", str(pc))
    assert again.returncode == 0, again.stderr
    assert rules.read_text().endswith("# edited for this PC\n")
    assert (etc / "udev/rules.d/99-tabled.rules.dist").is_file()

    journal = pc / "var/lib/tabled/demo/journal.sqlite"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_bytes(b"the record")
    u = setup_cmd("uninstall", "--table", "demo", "--root", str(pc))
    assert u.returncode == 0, u.stdout + u.stderr
    for gone in (
        "etc/tabled/demo.toml",
        "etc/tabled",
        "etc/systemd/system/tabled@.service",
        "etc/systemd/system/multi-user.target.wants/tabled@demo.service",
        "etc/udev/rules.d/99-tabled.rules",
        "etc/udev/rules.d/99-tabled.rules.dist",
        "etc/sysusers.d/tabled.conf",
        "etc/tmpfiles.d/tabled.conf",
        *(f"usr/local/share/man/man1/{name}.1" for name in install.MAN_PAGES),
    ):
        assert not (pc / gone).exists(), f"uninstall left {gone}"
    assert journal.read_bytes() == b"the record"
    assert "keep" in u.stdout and "journal" in u.stdout


def test_a_config_with_errors_is_refused_naming_file_and_key(tmp_path):
    bad = tmp_path / "demo.toml"
    bad.write_text(DEMO.read_text().replace('publish = "tcp://127.0.0.1:7700"', "publish = 7"))
    r = setup_cmd(
        "install", "--table", "demo", "--config", str(bad), "--root", str(tmp_path / "pc")
    )
    assert r.returncode == 2
    assert "demo.toml: bus.publish" in r.stderr
    assert not (tmp_path / "pc").exists()


def test_a_table_id_that_is_not_the_instance_is_refused(tmp_path):
    r = setup_cmd(
        "install", "--table", "bac-07", "--config", str(DEMO), "--root", str(tmp_path / "pc"), "-n"
    )
    assert r.returncode == 2
    assert "[table] id is 'demo' but --table is 'bac-07'" in r.stderr


def test_example_lists_and_prints_the_shipped_configs():
    r = setup_cmd("example")
    assert r.returncode == 0
    assert set(r.stdout.split()) == {p.stem for p in (ROOT / "config").glob("*.toml")}
    one = setup_cmd("example", "demo")
    assert one.stdout == DEMO.read_text()
    assert setup_cmd("example", "nope").returncode == 2


def test_make_run_installs_the_runtime_only(tmp_path):
    _need("make")
    r = subprocess.run(
        ["make", "-n", "run", f"VENV={tmp_path / 'v'}"], cwd=ROOT, capture_output=True, text=True
    )
    installs = [line for line in r.stdout.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line for line in installs), r.stdout
    t = subprocess.run(
        ["make", "-n", "test", f"VENV={tmp_path / 'v'}"], cwd=ROOT, capture_output=True, text=True
    )
    assert any("'.[test]'" in line for line in t.stdout.splitlines()), t.stdout


def test_the_lock_pins_every_runtime_dependency_with_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # the table's display runs on the table PC too: its extra is locked with the daemon
    deps = project["dependencies"] + project["optional-dependencies"]["views"]
    text = (ROOT / "requirements" / "table-pc.txt").read_text()
    pins: dict[str, str] = {}
    for block in text.replace("\\\n", " ").splitlines():
        if block and not block.startswith((" ", "#")):
            spec, *rest = block.split()
            name, _, version = spec.partition("==")
            assert version, f"not pinned: {spec}"
            assert any(x.startswith("--hash=sha256:") for x in rest), f"no hash: {spec}"
            pins[name.lower()] = version
    for dep in deps:
        req = Requirement(dep)
        name = req.name.lower()
        assert name in pins, f"{name} is in pyproject.toml but not in the lock: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"the lock pins {name}=={pins[name]}, outside pyproject's {req.specifier}: run `make lock`"
        )
