"""A wheel technician's tools, declared to ``tablectl wheel`` (``Driver.diagnostics`` and
``Driver.result_log``), so tablectl knows the sessions without knowing the vendor.

The sessions [dev]: ``*V`` and ``*S`` (version), ``*F`` (self-test: idle only, up to 5
minutes; ``*F BUSY``, then one ``*F`` per fault, ``*F 0`` when none), ``*T X`` (the tuning
parameters), ``*s r <page>`` (the log pages, idle only), and the log page decoded for
``tablectl wheel reconcile``.
"""

from __future__ import annotations

from collections.abc import Sequence

from drivers.base import Diagnostic, ReplyData, ResultLog
from drivers.cammegh.facts import LOG_PAGE_BYTES, decode_log_page

#: the tuning parameters a studio technician reads (tests/captures/cammegh-ss2/studio-settings-2025-11.log)
WHEEL_SETTINGS = tuple("CDGHIJKMNPQRSTZ")


def self_test_code(reply: ReplyData) -> str:
    """``BUSY``, ``0`` or a fault code from one ``*F`` reply, however the text is prefixed."""
    text = str(reply["text"]).strip()
    for prefix in ("*F ", "F "):
        text = text.removeprefix(prefix)
    return text.strip()


def self_test_done(replies: list[ReplyData]) -> bool:
    """The self-test ended (``*F 0``) or never ran (``*F BUSY``)."""
    return any(self_test_code(r) in ("0", "BUSY") for r in replies)


def self_test_verdict(replies: list[ReplyData]) -> str | None:
    """Why a self-test needs attention (exit 1), or None when it ran and found nothing.

    ``*F BUSY`` is no self-test at all: the wheel runs one only while idle (issue 33: it
    exited 0), and a fault code is a fault found.
    """
    codes = [self_test_code(r) for r in replies if r.get("command") == "*F"]
    if "BUSY" in codes:
        return (
            "the wheel answered *F BUSY: no self-test ran (the wheel runs one only while idle, "
            "state 6); run it again between games, with the wheel stopped"
        )
    faults = [c for c in codes if c not in ("0", "")]
    if faults:
        return f"the self-test found fault code(s) {', '.join(faults)} (docs/protocols/cammegh.md)"
    if "0" not in codes:
        return "the self-test did not finish (no *F 0 before the wait ended)"
    return None


def _settings(args: Sequence[str]) -> list[str]:
    return [f"*T {x.upper()}" for x in args or WHEEL_SETTINGS]


def _log_pages(args: Sequence[str]) -> list[str]:
    return [f"*s r {p}" for p in args or ["0"]]


#: ``tablectl wheel version|selftest|settings [LETTERS]|log [PAGES]``
DIAGNOSTICS: dict[str, Diagnostic] = {
    "version": Diagnostic("the firmware's version and number", lambda _: ["*V", "*S"], 3.0),
    "selftest": Diagnostic(
        "the self-test (idle only, up to 5 minutes): exit 1 on BUSY or a fault code",
        lambda _: ["*F"],
        330.0,
        self_test_done,
        self_test_verdict,
    ),
    "settings": Diagnostic("the tuning parameters (all, or the letters given)", _settings, 5.0),
    "log": Diagnostic("pages of the wheel's own results log (idle only)", _log_pages, 10.0),
}


def _page(command: str, text: str) -> list[int] | None:
    """A verified ``*s r`` page's results, newest first, unused entries left out."""
    if not command.startswith("*s") or len(text) != LOG_PAGE_BYTES:
        return None
    return [n for n in decode_log_page(text) if n is not None]


def _busy(text: str) -> str | None:
    if "BUSY" not in text:
        return None
    return (
        "the wheel is busy: it gives its log pages only while idle (state 6); "
        "reconcile at table close"
    )


#: the ``*s r`` log pages: 256 results a page, newest first [dev]
RESULT_LOG = ResultLog(page_command=lambda p: f"*s r {p}", page=_page, busy=_busy)
