"""A terminal UI in a real 80×24 tmux pane, watched through tmux's control mode.

``tmux -C attach`` writes a ``%output`` line whenever the program draws, so a test
waits for the screen it wants on that pipe (with a deadline) instead of polling
``capture-pane`` on a timer. A control client takes no part in the window's size,
so the pane stays 80×24 as a technician's terminal would be.
"""

from __future__ import annotations

import itertools
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import pytest

_names = itertools.count()


class Pane:
    def __init__(self, cmd: str, cwd: Path, width: int = 80, height: int = 24) -> None:
        if shutil.which("tmux") is None:
            pytest.skip("tmux is not installed (apt install tmux)")
        self.session = f"tabled-{os.getpid()}-{next(_names)}"
        subprocess.run(
            [
                *("tmux", "new-session", "-d", "-s", self.session),
                *("-x", str(width), "-y", str(height), "-c", str(cwd), cmd),
            ],
            check=True,
        )
        self._ctl = subprocess.Popen(
            ["tmux", "-C", "attach", "-t", self.session],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self._ctl.stdout is not None
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._ctl.stdout, selectors.EVENT_READ)

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-t", self.session, "-p"], capture_output=True, text=True
        ).stdout

    def wait_for(self, pred: Callable[[str], bool], timeout: float = 20.0) -> str:
        """The screen once ``pred`` holds for it, checked after each redraw tmux reports."""
        assert self._ctl.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"screen never matched in {timeout} s:\n{s}")
            if self._sel.select(left) and not os.read(self._ctl.stdout.fileno(), 65536):
                # the session ended (the program exited): one last look
                s = self.screen()
                if pred(s):
                    return s
                raise AssertionError(f"the pane closed before its screen matched:\n{s}")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.session], capture_output=True)
        if self._ctl.stdin is not None:
            self._ctl.stdin.close()
        try:
            self._ctl.wait(10)
        except subprocess.TimeoutExpired:
            self._ctl.kill()
        self._sel.close()

    def __enter__(self) -> Pane:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
