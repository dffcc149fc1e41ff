"""Docs that cannot drift (issue 33), both ways:

* every ``tablectl`` command (the games' too), every installed game, is named in the docs;
* every ``tablectl`` command a doc shows (``tablectl [global options] COMMAND``) exists;
* every event type a heading of ``docs/events.md`` names is one the code or a capture emits;
* every key a table row of ``docs/config.md`` gives exists in its section's structs;
* every repository file a code span names, in any doc, the READMEs too, exists.

``tests/test_docs.py`` holds the other direction for event types, alarm kinds and config
keys (each that exists is documented). Each check here is shown able to fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from test_docs import config_sections, emitted_types, sections

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "client" / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
#: tablectl's global options that take a value (``daemon/ctl/cli.py``)
VALUED = {"-t", "--table", "--config", "--timeout", "--actor", "--role", "--key"}


def _text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in DOCS)


def commands() -> list[str]:
    from daemon.ctl.cli import parser
    from daemon.tools.shell import subcommands

    return [path for path, _ in subcommands(parser())]


def named(path: str, text: str) -> bool:
    """A command is named by ``tablectl … PATH`` or a code span of its own."""
    return (
        f"`{path}`" in text
        or re.search(rf"tablectl(?: (?:-\S+(?: [^-\s`]\S*)?))* {re.escape(path)}\b", text)
        is not None
    )


def test_every_tablectl_command_is_named_in_a_doc():
    text = _text()
    missing = [p for p in commands() if not named(p, text)]
    assert not missing, f"tablectl commands no doc names: {', '.join(missing)}"


def shown_commands(text: str) -> list[str]:
    """The command word of each ``tablectl …`` a doc shows in a code span or a session."""
    out = []
    for m in re.finditer(r"(?:^\$ |`)tablectl((?: [^\s`]+)+)", text, re.M):
        words = m.group(1).split()
        i = 0
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in VALUED else 1
        if i < len(words) and re.fullmatch(r"[a-z][a-z-]*", words[i]):
            out.append(words[i])
    return out


def test_every_tablectl_command_a_doc_shows_exists():
    known = {p.split()[0] for p in commands()}
    bad = {}
    for doc in DOCS:
        for word in shown_commands(doc.read_text(encoding="utf-8")):
            if word not in known:
                bad.setdefault(word, doc.relative_to(ROOT).as_posix())
    assert not bad, f"docs show tablectl commands that do not exist: {bad}"


def test_the_command_checks_can_fail():
    assert shown_commands("run `tablectl --role dealer betting close`") == ["betting"]
    assert shown_commands("$ tablectl -t bac-07 frobnicate\n") == ["frobnicate"]
    assert not named("frobnicate", "tablectl status and `events`")
    assert named("events", "see `tablectl --json events -f`")


def test_every_game_is_named_where_games_are_listed():
    from daemon import games

    readme = (ROOT / "README.md").read_text(encoding="utf-8").lower()
    config = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    row = next(x for x in config.splitlines() if x.startswith("| `game` "))
    events_md = (ROOT / "docs" / "events.md").read_text(encoding="utf-8").lower()
    for name in games.names():
        assert f"`{name}`" in row, f"docs/config.md's table.game row does not name {name}"
        shown = name.replace("-", " ").replace("paigow", "pai gow").replace("sicbo", "sic bo")
        assert shown in readme, f"README.md's list of games does not name {name}"
        assert shown in events_md, f"docs/events.md does not name {name}"


def test_every_event_type_a_heading_names_exists():
    from tabled_client.events import EVENTS

    text = (ROOT / "docs" / "events.md").read_text(encoding="utf-8")
    heads = re.findall(r"^#+ `([a-z_]+\.[a-z_.]+)`", text, re.M)
    assert len(heads) > 40
    real = set(emitted_types()) | set(EVENTS)
    ghosts = sorted(set(heads) - real)
    assert not ghosts, f"docs/events.md documents event types nothing emits: {ghosts}"


#: a row of a keys table: ``| `key` | …``
ROW = re.compile(r"^\| `([a-z_][a-z0-9_]*)` \|", re.M)


def documented_keys() -> dict[str, set[str]]:
    """Section title → the keys its tables give (the rows' first code span)."""
    text = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    out: dict[str, set[str]] = {}
    for _, title, body in sections(text):
        own = re.split(r"^#+ ", body, maxsplit=1, flags=re.M)[0]  # not its subsections
        out.setdefault(title.replace("`", ""), set()).update(ROW.findall(own))
    return out


def test_every_key_a_config_table_gives_exists():
    fields: dict[str, set[str]] = {}
    for title, struct in config_sections():
        fields.setdefault(title, set()).update(
            f.encode_name for f in msgspec.structs.fields(struct)
        )
    ghosts = {
        title: sorted(keys - fields[title])
        for title, keys in documented_keys().items()
        if title in fields and keys - fields[title]
    }
    assert not ghosts, f"docs/config.md documents keys that do not exist: {ghosts}"


#: a repository file in a code span: `daemon/runtime/host.py`, `client/README.md`, `bench/…`
SPAN_PATH = re.compile(
    r"`((?:docs|daemon|drivers|tests|config|systemd|fuzz|bench|bridge|client|requirements)"
    r"/[\w./-]+\.(?:md|py|toml|log|jsonl|txt|json|service|rules|conf))`"
)


#: files a doc names that a run makes, not the repository: each with what makes it
MADE = {
    "bench/results/latest.json": "make bench",
    "bench/results/floor-latest.json": "make floor",
    "bench/results/floor-tests.json": "make floor (its tests' figures for bench.floor)",
    "daemon/data/requirements/table-pc.txt": "the wheel (setup.py)",
}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_a_doc_names_exists(doc):
    text = doc.read_text(encoding="utf-8")
    missing = sorted(
        {p for p in SPAN_PATH.findall(text) if not (ROOT / p).exists() and p not in MADE}
    )
    assert not missing, f"{doc.relative_to(ROOT)} names missing files: {', '.join(missing)}"


def test_the_file_check_can_fail():
    assert SPAN_PATH.findall("see `daemon/nope.py` and `client/README.md`") == [
        "daemon/nope.py",
        "client/README.md",
    ]


def test_the_event_and_key_checks_can_fail():
    assert ROW.findall("| `nope_key` | boolean | false | x |\n| not a row |") == ["nope_key"]
    assert "card.nope" not in set(emitted_types())
    assert re.findall(r"^#+ `([a-z_]+\.[a-z_.]+)`", "### `card.nope`\n", re.M) == ["card.nope"]


#: a key named with its section in a code span anywhere: `[game] decks`, `[bus] sndhwm = 1000`
SECTION_KEY = re.compile(r"`\[([a-z_]+)\] ([a-z_]+)")


def test_every_section_key_a_doc_names_exists():
    fields: dict[str, set[str]] = {}
    for title, struct in config_sections():
        name = title.strip("[]")
        fields.setdefault(name, set()).update(f.encode_name for f in msgspec.structs.fields(struct))
    ghosts = set()
    for doc in DOCS:
        for section, key in SECTION_KEY.findall(doc.read_text(encoding="utf-8")):
            if section in fields and key not in fields[section]:
                ghosts.add(f"{doc.relative_to(ROOT)}: [{section}] {key}")
    assert not ghosts, f"docs name config keys that do not exist: {sorted(ghosts)}"
    assert SECTION_KEY.findall("`[game] nope_key = 1`") == [("game", "nope_key")]


#: names in code spans that look like event types and are something else, each with what it is
NOT_EVENTS = {
    "journal.state": "a bus frame, not journaled (docs/events.md, Journal state)",
    "journal.recovered": "the pipeline's own notice that a failing journal works again",
    "journal.seq": "a `tablectl get` key",
    "journal.ok": "a `tablectl get` key",
    "journal.last_seq": "a key of an earlier status answer (docs/performance-history.md)",
    "journal.last_hash": "the same",
    "table.state_dir": "a config key, [table] state_dir",
    "table.json": "a file name",
    "journal.head": "a file name: the head mark kept outside the state directory",
    "journal.sqlite": "a file name: the journal",
    "table.game": "a config key, [table] game (what config.changed audits)",
    "config.load": "a function, in a profile of an earlier round (docs/performance-history.md)",
}


def test_every_event_type_a_doc_names_in_a_code_span_exists():
    """`card.dealt`-like names in any doc: an event type, else a command, a module, a file,
    or one of NOT_EVENTS; a type renamed or removed leaves no doc naming the old one."""
    from tabled_client.events import EVENTS

    real = set(emitted_types()) | set(EVENTS)
    prefixes = {t.split(".")[0] for t in real}
    commands = set()
    for py in (ROOT / "daemon").rglob("*.py"):
        commands |= set(re.findall(r'"([a-z_]+\.[a-z_]+)": spec\(', py.read_text()))
    ghosts = set()
    for doc in DOCS:
        for name in re.findall(r"`([a-z_]+\.[a-z_]+)`", doc.read_text(encoding="utf-8")):
            head, tail = name.split(".")
            if head not in prefixes or name in real or name in commands or name in NOT_EVENTS:
                continue
            if tail in ("py", "md", "json", "toml") or (ROOT / head / f"{tail}.py").exists():
                continue  # a file, or a module (`daemon.games`)
            if (ROOT / head / tail).is_dir():
                continue
            ghosts.add(f"{doc.relative_to(ROOT)}: {name}")
    assert not ghosts, f"docs name event types that do not exist: {sorted(ghosts)}"
