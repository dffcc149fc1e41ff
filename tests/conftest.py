"""Shared test set-up, and the capture collector (gpsd's method).

Every ``tests/captures/**/*.log`` is a test: it is replayed through the real
protocol and table and must produce exactly its ``*.expected.jsonl``. A
capture without one fails. ``pytest --regen-captures`` rewrites them; a
change that alters expected output says why in its commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Hypothesis's per-example deadline is a timed assert: on a CI box whose two cores other
# jobs share, a 200 ms example proves nothing about the code. Properties are checked here;
# speed is measured in bench/.
settings.register_profile("tabled", deadline=None)
settings.load_profile("tabled")

CAPTURES = Path(__file__).parent / "captures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-captures",
        action="store_true",
        help="rewrite tests/captures/**/*.expected.jsonl from the current code",
    )


def expected_path(log: Path) -> Path:
    return log.with_name(log.name[: -len(".log")] + ".expected.jsonl")


class CaptureFile(pytest.File):
    def collect(self):  # type: ignore[no-untyped-def]
        yield CaptureItem.from_parent(self, name="replay")


class CaptureItem(pytest.Item):
    def runtest(self) -> None:
        from daemon.pipeline.capture import load
        from daemon.pipeline.replay import replay

        log = Path(self.path)
        expected = expected_path(log)
        got = b"".join(line + b"\n" for line in replay([load(log)]).lines())
        if self.config.getoption("--regen-captures"):
            expected.write_bytes(got)
            return
        if not expected.exists():
            raise CaptureMismatch(
                f"{log.name} has no {expected.name}: run `pytest --regen-captures`"
            )
        want = expected.read_bytes()
        if got != want:
            gl, wl = got.splitlines(), want.splitlines()
            for i, (g, w) in enumerate(zip(gl, wl, strict=False)):
                if g != w:
                    raise CaptureMismatch(
                        f"{log.name}: event {i + 1} differs\n  expected {w.decode()[:400]}\n"
                        f"  got      {g.decode()[:400]}"
                    )
            raise CaptureMismatch(f"{log.name}: expected {len(wl)} events, got {len(gl)}")

    def repr_failure(self, excinfo, style=None):  # type: ignore[no-untyped-def]
        if isinstance(excinfo.value, CaptureMismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):  # type: ignore[no-untyped-def]
        return self.path, 0, f"capture {self.path.name}"


class CaptureMismatch(AssertionError):
    pass


def pytest_collect_file(parent: pytest.Collector, file_path: Path):  # type: ignore[no-untyped-def]
    if file_path.suffix == ".log" and CAPTURES in file_path.parents:
        return CaptureFile.from_parent(parent, path=file_path)
    return None
