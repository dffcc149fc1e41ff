"""The docs keep up with the code.

* every event type the code emits, or a capture's expected events hold, is
  documented in ``docs/events.md`` (a heading or a code span);
* every alarm kind the code raises is named there, however it is raised: through
  ``raise_alarm`` or any helper that hands a kind on (``tests/alarm_finder.py`` reads
  the code's syntax trees and fails on a kind it cannot read);
* every config key — each ``Config`` section, every game's house rules
  (``ShoeRules``, ``BaccaratRules``, …, all under ``[game]``) and each
  installed driver's options — is in its section of ``docs/config.md``;
* every local link in ``README.md`` and ``docs/`` resolves.

Every game's events are in ``docs/events.md`` (roulette's and Sic Bo's were
merged from their own pages): no type or alarm kind is exempt.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, get_args, get_origin

import alarm_finder
import msgspec
import pytest

ROOT = Path(__file__).resolve().parent.parent
EVENTS_MD = ROOT / "docs" / "events.md"
CONFIG_MD = ROOT / "docs" / "config.md"
README = ROOT / "README.md"

#: ``d.add("card.dealt", …)`` and ``d.add(\n    "card.dealt", …)``
ADD = re.compile(r'd\.add\(\n?\s*"([a-z_]+\.[a-z_.]+)"')
#: types the Table decides without a literal ``d.add("…")``: device health
#: is ``f"device.{health}"`` (``daemon/table/table.py``), "ok" becoming "connected".
TABLE_TYPES = {"device.connected", "device.stale", "device.disconnected"}
#: the events a game hands the hold procedure (``daemon/procedures/hold.py``) to add for it
HOLD = re.compile(r'HoldEvents\(\s*"([a-z_.]+)",\s*"([a-z_.]+)",\s*"([a-z_.]+)"\)')


def _rel(p: Path) -> str:
    return p.resolve().relative_to(ROOT).as_posix()


def emitted_types() -> dict[str, set[str]]:
    """Event type → where it comes from (source files and expected-event files)."""
    found: dict[str, set[str]] = {t: {"daemon/table/table.py"} for t in TABLE_TYPES}
    for py in sorted((ROOT / "daemon").glob("**/*.py")):
        text = py.read_text(encoding="utf-8")
        for t in ADD.findall(text) + [t for m in HOLD.findall(text) for t in m]:
            found.setdefault(t, set()).add(_rel(py))
    for exp in sorted((ROOT / "tests" / "captures").glob("**/*.expected.jsonl")):
        for line in exp.read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.setdefault(json.loads(line)["type"], set()).add(_rel(exp))
    return found


@functools.cache
def found_alarms() -> alarm_finder.Found:
    return alarm_finder.find(ROOT)


def alarm_kinds() -> dict[str, set[str]]:
    """Alarm kind → the places raising it, through any helper (``tests/alarm_finder.py``)."""
    return found_alarms().kinds


def capture_alarm_kinds() -> dict[str, set[str]]:
    """Alarm kind → the expected-event files whose ``alarm.raised`` events carry it."""
    found: dict[str, set[str]] = {}
    for exp in sorted((ROOT / "tests" / "captures").glob("**/*.expected.jsonl")):
        for line in exp.read_text(encoding="utf-8").splitlines():
            if line.strip() and (e := json.loads(line))["type"] == "alarm.raised":
                found.setdefault(e["data"]["kind"], set()).add(_rel(exp))
    return found


def documented(name: str, text: str) -> bool:
    """``name`` is a heading of its own or a code span somewhere in ``text``."""
    if f"`{name}`" in text:
        return True
    return any(
        line.lstrip("#").strip().strip("`") == name
        for line in text.splitlines()
        if line.startswith("#")
    )


def sections(text: str) -> list[tuple[int, str, str]]:
    """``(level, heading, body)`` for every heading; the body runs to the next heading of
    the same or a higher level, so it includes the subsections."""
    heads = [
        (m.start(), m.end(), len(m.group(1)), m.group(2).strip())
        for m in re.finditer(r"^(#+)[ \t]+(.*)$", text, re.M)
    ]
    out = []
    for i, (_, end, level, title) in enumerate(heads):
        stop = next((s for s, _, lv, _ in heads[i + 1 :] if lv <= level), len(text))
        out.append((level, title, text[end:stop]))
    return out


def _params(found: dict[str, set[str]]) -> list[Any]:
    return [pytest.param(name, sorted(sources), id=name) for name, sources in sorted(found.items())]


# -- events ------------------------------------------------------------------------------


def test_types_are_found():
    found = emitted_types()
    # the collector itself works: the Table's own types and the shoe game's are all seen
    for t in ("daemon.started", "operator.command", "alarm.raised", "card.dealt", "hand.result"):
        assert t in found, t
    assert len(found) >= 25


@pytest.mark.parametrize(("name", "sources"), _params(emitted_types()))
def test_event_type_is_documented(name, sources):
    assert documented(name, EVENTS_MD.read_text(encoding="utf-8")), (
        f"event type {name!r} (from {', '.join(sources)}) is not in docs/events.md: "
        f"add a `### \\`{name}\\`` section with its fields and an example"
    )


@pytest.mark.parametrize(("kind", "sources"), _params(alarm_kinds()))
def test_alarm_kind_is_documented(kind, sources):
    assert documented(kind, EVENTS_MD.read_text(encoding="utf-8")), (
        f"alarm kind {kind!r} (from {', '.join(sources)}) is not in docs/events.md"
    )


def test_every_alarm_kind_is_read_from_the_code():
    """No call of ``raise_alarm`` or of a helper that raises gives a kind the finder cannot
    read; a kind computed at run time would escape the doc check."""
    unresolved = found_alarms().unresolved
    assert not unresolved, (
        "alarm kinds the doc check cannot read (give each as a string literal, a module "
        "constant or a local set from literals):\n" + "\n".join(unresolved)
    )


def test_the_finder_sees_every_kind_a_capture_raises():
    """What the captures really raised, the code's syntax trees must have found: a finder
    that misses a way of raising misses it here first."""
    found = alarm_kinds()
    missed = {k: sorted(v) for k, v in capture_alarm_kinds().items() if k not in found}
    assert not missed, f"alarm kinds raised in captures that the finder misses: {missed}"
    # the helpers' kinds, which a literal raise_alarm(t, d, "…") search never saw
    for kind in ("card-before-betting-closed", "card-unreadable", "decide-failed", "extra-tile"):
        assert kind in found, kind


def test_a_kind_raised_through_a_helper_is_found_and_checked(tmp_path: Path):
    """The check can fail: a kind handed through two helpers, a constant, a local and a
    method, each found; one missing from the doc is reported; a computed one is unresolved."""
    pkg = tmp_path / "daemon"
    (pkg / "game").mkdir(parents=True)
    (pkg / "table.py").write_text(
        "def raise_alarm(t, d, kind, message, **alarm):\n    d.add('alarm.raised', kind=kind)\n"
        "def raise_or_repeat(t, d, kind, message, **alarm):\n"
        "    return raise_alarm(t, d, kind, message, **alarm)\n"
    )
    (pkg / "game" / "play.py").write_text(
        "from daemon.table import raise_or_repeat\n"
        "EARLY = 'card-too-early'\n"
        "class Shoe:\n"
        "    def _pause(self, t, d, reason, kind, message):\n"
        "        raise_or_repeat(t, d, kind, message)\n"
        "    def _pause_other(self, t, d, alarm_id):\n"
        "        pass\n"
        "class Game(Shoe):\n"
        "    def _card(self, t, d, early):\n"
        "        self._pause(t, d, 'device', EARLY, 'a card while betting')\n"
        "        kind = 'card-late' if early else 'card-lost'\n"
        "        super()._pause(t, d, 'device', kind=kind, message='…')\n"
        "        raise_or_repeat(t, d, 'card-' + str(early), 'computed')\n"
    )
    found = alarm_finder.find(tmp_path)
    assert set(found.kinds) == {"card-too-early", "card-late", "card-lost"}
    assert found.kinds["card-too-early"] == {"daemon/game/play.py:10"}
    assert found.unresolved == [
        "daemon/game/play.py:13: raise_or_repeat(…, 'card-' + str(early), …)"
    ]
    doc = "### Alarms\n\n`card-too-early`, `card-late`\n"
    assert [k for k in sorted(found.kinds) if not documented(k, doc)] == ["card-lost"]


def test_a_missing_type_is_caught():
    """The check can fail: take one documented type out of the text and it is reported."""
    text = EVENTS_MD.read_text(encoding="utf-8")
    assert documented("card.held", text)
    assert not documented("card.held", text.replace("card.held", "card.xxxx"))
    assert not documented("no.such_type", text)


# -- config ----------------------------------------------------------------------------------


def section(text: str, title: str) -> str:
    hits = [body for _, t, body in sections(text) if t.replace("`", "") == title]
    assert hits, f"docs/config.md has no section headed {title!r}"
    return hits[0]


def struct_of(tp: Any) -> type[msgspec.Struct] | None:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp
    if get_origin(tp) is list:
        return struct_of(get_args(tp)[0])
    return None


def config_sections() -> list[tuple[str, type[msgspec.Struct]]]:
    """(heading in docs/config.md, struct) for every part of a config file: each
    ``Config`` section, every game's house rules (all under ``[game]``) and every
    installed driver's options (under a heading naming the driver)."""
    from daemon.games import games
    from daemon.games.baccarat.table import BaccaratRules
    from daemon.procedures.shoe import ShoeRules
    from daemon.runtime.config import Config
    from drivers.base import load_drivers

    out: list[tuple[str, type[msgspec.Struct]]] = []
    for f in msgspec.structs.fields(Config):
        st = struct_of(f.type)
        if st is not None:
            title = f"[[{f.encode_name}]]" if get_origin(f.type) is list else f"[{f.encode_name}]"
            out.append((title, st))
        else:
            assert f.encode_name == "game", f"Config.{f.name}: a new kind of section"
    rules: list[type[msgspec.Struct]] = [ShoeRules, BaccaratRules]
    rules += [g.Rules for g in games().values() if g.Rules not in rules]
    out += [("[game]", r) for r in rules]
    for name, cls in sorted(load_drivers().items()):
        out.append((name, cls.Options))
    return out


def test_config_sections_are_found():
    titles = [t for t, _ in config_sections()]
    for t in ("[table]", "[[devices]]", "[game]", "[journal]", "[bus]", "[control]", "[log]"):
        assert t in titles
    assert "shoe-line" in titles


def test_every_driver_has_its_protocol_page():
    """Each installed driver is named in a page of ``docs/protocols/`` (one page may serve a
    vendor's drivers: ``cammegh.md``); ``sources.md`` lists sources, it is no driver's page."""
    from drivers.base import load_drivers

    pages = [
        p for p in sorted((ROOT / "docs" / "protocols").glob("*.md")) if p.name != "sources.md"
    ]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    missing = [d for d in sorted(load_drivers()) if f"`{d}`" not in text]
    assert not missing, f"drivers no page of docs/protocols/ names: {', '.join(missing)}"
    row = next(
        x for x in CONFIG_MD.read_text(encoding="utf-8").splitlines() if x.startswith("| `driver` ")
    )
    unlisted = [d for d in sorted(load_drivers()) if f"`{d}`" not in row]
    assert not unlisted, f"docs/config.md's devices driver row does not name {', '.join(unlisted)}"


@pytest.mark.parametrize(
    ("title", "struct"),
    [pytest.param(t, s, id=f"{t}:{s.__name__}") for t, s in config_sections()],
)
def test_config_keys_are_documented(title, struct):
    body = section(CONFIG_MD.read_text(encoding="utf-8"), title)
    missing = [
        f.encode_name for f in msgspec.structs.fields(struct) if f"`{f.encode_name}`" not in body
    ]
    assert not missing, (
        f"docs/config.md, section {title}: keys of {struct.__name__} not documented: "
        f"{', '.join(missing)}"
    )


# -- README ------------------------------------------------------------------------------------


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [x.split("#")[0] for x in links if not re.match(r"[a-z]+:", x) and x.split("#")[0]]
    assert local, "README.md links no docs"
    missing = [x for x in local if not (ROOT / x).exists()]
    assert not missing, f"README.md links to missing files: {', '.join(missing)}"


# -- docs ----------------------------------------------------------------------------------------

DOCS = sorted((ROOT / "docs").glob("**/*.md"))
#: a file of this repository named in a code span: `docs/events.md`, `drivers/sim/wheel.py`
SPAN_PATH = re.compile(
    r"`((?:docs|daemon|drivers|tests|config|systemd|fuzz)/[\w./-]+\.(?:md|py|toml|log|jsonl))`"
)


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_doc_links_resolve(doc):
    """Markdown links (relative to the page) and repository paths in code spans name real files."""
    text = doc.read_text(encoding="utf-8")
    missing = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        target = link.split("#")[0]
        if target and not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists():
            missing.append(link)
    missing += [p for p in SPAN_PATH.findall(text) if not (ROOT / p).exists()]
    assert not missing, f"{_rel(doc)} names missing files: {', '.join(sorted(set(missing)))}"


def test_every_game_has_its_events_section():
    heads = {t for level, t, _ in sections(EVENTS_MD.read_text(encoding="utf-8")) if level == 2}
    for h in (
        "Table events",
        "Shoe game events (baccarat, dragon tiger)",
        "Roulette events",
        "Sic Bo events",
        "Blackjack events",
        "Mahjong Pai Gow events",
    ):
        assert h in heads, f"docs/events.md has no section {h!r}"
