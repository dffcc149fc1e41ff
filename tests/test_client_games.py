"""Each game owns its event types, and the client still carries every in-repository game's.

A game's Structs live in its folder (``daemon/games/<game>/events.py``, its class's
``events``), importing only msgspec and the client's base types; a type several shoe games
share (``hand.result``) is one Struct per game. The client's build collects those modules
(``client/collect.py``), so a backend that installs only ``tabled-client`` decodes every game's
events typed: proved here on the package tree the client's own ``setup.py`` builds, imported
by an interpreter that has no ``daemon`` to find (``docs/decisions.md``, "Each game's event
types live in its folder").
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import msgspec
import pytest
from tabled_client import events, games
from tabled_client.catalogue import SHARED
from tabled_client.registry import register

from daemon.games import games as installed

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = sorted((ROOT / "tests" / "captures").rglob("*.expected.jsonl"))


def _folder(cls: type) -> Path:
    return Path(sys.modules[cls.__module__].__file__ or "").parent


def test_each_game_names_its_own_types_from_its_folder():
    """Every installed game of ours has ``events``, Structs of its folder's ``events.py``; none
    is one of the shared catalogue's types (the table's or a procedure's)."""
    for name, cls in installed().items():
        own = cls.events
        assert own, f"{name} names no event types of its own"
        folder = _folder(cls)
        for type_, data in own.items():
            assert Path(sys.modules[data.__module__].__file__ or "") == folder / "events.py", (
                name,
                type_,
            )
            assert type_ not in SHARED, f"{name}'s {type_} is the shared catalogue's"


def test_a_games_events_module_imports_only_msgspec_and_the_clients_base_types():
    """So the client distribution can carry it without ``daemon``."""
    mods = sorted((ROOT / "daemon" / "games").glob("*/events.py"))
    assert len(mods) == len(installed())
    for path in mods:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for n in names:
                ok = n in ("__future__", "msgspec") or n.startswith(("msgspec.", "tabled_client."))
                assert ok and n != "tabled_client.events", f"{path}: imports {n}"


def test_each_shoe_game_has_a_result_struct_of_its_own():
    """``hand.result`` is one Struct per game, none holding another game's fields."""
    results = events.VARIANTS["hand.result"]
    names = {c.__name__ for c in results}
    assert names == {"BaccaratResultData", "DragonTigerResultData", "BlackjackResultData"}
    common = {"sealed", "dealer_on_duty", "shoe", "hand", "demo", "winner", "rule"}
    common |= {"roads", "paytable"}
    fields = [set(c.__struct_fields__) - common for c in results]
    for i, f in enumerate(fields):
        for g in fields[i + 1 :]:
            assert not f & g, f & g


def test_every_captured_result_decodes_as_its_games_struct():
    by_capture = {
        "shoe-line": "BaccaratResultData",
        "dragon-tiger": "DragonTigerResultData",
        "blackjack": "BlackjackResultData",
    }
    seen = set()
    for path in CAPTURES:
        want = by_capture.get(path.parent.name)
        for raw in path.read_bytes().splitlines():
            if want and json.loads(raw)["type"] == "hand.result":
                ev = events.decode(raw)
                assert type(ev.data).__name__ == want, (path.name, ev.seq)
                assert msgspec.to_builtins(ev.data) == json.loads(raw)["data"]
                seen.add(want)
    assert seen == set(by_capture.values())


def test_our_games_copies_of_their_types_register_as_the_same_types():
    """In a checkout, and in the daemon's install, a game's module is loaded twice (the game's
    own, the client's copy): registering the game's is no change."""
    before = {t: tuple(v) for t, v in events.VARIANTS.items()}
    for cls in installed().values():
        register(cls.events)
    assert {t: tuple(v) for t, v in events.VARIANTS.items()} == before
    assert [m.__name__.rsplit(".", 1)[1] for m in games.modules()] == sorted(
        p.parent.name for p in (ROOT / "daemon" / "games").glob("*/events.py")
    )


PROBE = """
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
try:
    import daemon
    sys.exit("daemon is importable: this is not a client alone")
except ImportError:
    pass
from tabled_client import decode, events, games, schema
assert all(m.__file__.startswith(sys.argv[1]) for m in games.modules()), "not the collected copies"
assert schema.shipped() == schema.generate(), "the packaged schema is not what the Structs give"
assert schema.shipped() == json.loads(Path(sys.argv[3]).read_text())
from importlib import resources
from tabled_client import frames
assert json.loads(resources.files("tabled_client").joinpath("bus.schema.json").read_text()) == frames.generate()
typed = {}
for path in sys.argv[4:]:
    for raw in Path(path).read_bytes().splitlines():
        ev = decode(raw)
        data = type(ev.data)
        assert data.__module__.startswith("tabled_client."), (ev.type, data)
        typed[ev.type] = data.__module__.split(".")[-1]
print(json.dumps(typed))
"""


def test_a_backend_with_only_the_built_client_decodes_every_games_events_typed(tmp_path: Path):
    repo = tmp_path / "repo"  # the files a client's build reads, laid out as in a checkout
    shutil.copytree(ROOT / "client", repo / "client", ignore=shutil.ignore_patterns("__pycache__"))
    for p in (ROOT / "daemon" / "games").glob("*/events.py"):
        (repo / p.relative_to(ROOT)).parent.mkdir(parents=True)
        shutil.copy(p, repo / p.relative_to(ROOT))
    (repo / "docs").mkdir()
    for p in (ROOT / "docs").glob("*.schema.json"):
        shutil.copy(p, repo / "docs")
    built = tmp_path / "built"
    r = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(built)],
        cwd=repo / "client",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (built / "tabled_client" / "games").glob("*.py")) == sorted(
        [
            "__init__.py",
            *(p.parent.name + ".py" for p in (ROOT / "daemon/games").glob("*/events.py")),
        ]
    )
    # -S: no site, so no editable finder for daemon/ or the checkout's client; msgspec and pyzmq
    # come from the venv's site-packages, put on the path by hand
    site = sysconfig.get_paths()["purelib"]
    r = subprocess.run(
        [
            *(sys.executable, "-S", "-c", PROBE, str(built), site),
            *(str(ROOT / "docs" / "events.schema.json"), *map(str, CAPTURES)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    typed = json.loads(r.stdout)
    for type_, module in (
        ("spin.result", "roulette"),
        ("dice.result", "sicbo"),
        ("round.result", "paigow"),
        ("box.decision", "blackjack"),
        ("card.dealt", "shoe_events"),
    ):
        assert typed.get(type_) == module, (type_, typed.get(type_))


def test_a_struct_of_the_same_name_and_another_shape_is_not_a_copy():
    """Only a copy of the same source passes as the type it has: a Struct named like the shoe's
    ``CardDealtData`` with fields of its own is refused, and registers nothing."""
    from tabled_client.base import Data

    class CardDealtData(Data):  # the name of the shoe procedure's, not its fields
        card: str

    before = {t: tuple(v) for t, v in events.VARIANTS.items()}
    with pytest.raises(ValueError, match="tabled's own"):
        register({"card.dealt": CardDealtData})
    assert {t: tuple(v) for t, v in events.VARIANTS.items()} == before


NEW_SHOE_GAME = """
import json, sys
from msgspec import UNSET
from tabled_client import events
from tabled_client.base import ResultData

class WarResultData(ResultData):
    shoe: int
    hand: int
    demo: bool
    player_card: str
    dealer_card: str
    went_to_war: bool

before = {c.__name__: set(c.__struct_fields__) for c in events.VARIANTS["hand.result"]}
events.register({"hand.result": WarResultData})
war = {"shoe": 1, "hand": 3, "demo": False, "player_card": "9H", "dealer_card": "9S",
       "went_to_war": True}
assert events.check_data("hand.result", war) == WarResultData(**war)
raw = json.dumps({"v": 1, "table": "w", "seq": 1, "type": "hand.result",
                  "time": "2026-01-01T00:00:00.000Z", "mono": None, "data": war,
                  "prev": "0" * 64, "hash": "0" * 64}).encode()
assert type(events.decode(raw).data) is WarResultData
for line in open(sys.argv[1], "rb"):
    ev = json.loads(line)
    if ev["type"] == "hand.result":
        assert type(events.decode(line.rstrip()).data).__name__ == "BaccaratResultData"
        events.check_data("hand.result", ev["data"])
try:
    events.check_data("hand.result", {**war, "player": ["9H"]})
    sys.exit("a war result with a baccarat field passed")
except TypeError as e:
    assert "WarResultData" in str(e), e
after = {c.__name__: set(c.__struct_fields__) for c in events.VARIANTS["hand.result"]}
assert {k: v for k, v in after.items() if k in before} == before  # nothing shared grew
print(sorted(after))
"""


def test_a_new_shoe_game_brings_its_result_without_touching_anyone_elses():
    """A new shoe game's ``hand.result`` is one more Struct of the type, its own: the shipped
    games' results keep their fields and still check and decode as theirs (issue 29: the old
    union grew a field set per game). In a subprocess: the registry is process-wide."""
    capture = next(p for p in CAPTURES if p.parent.name == "shoe-line")
    r = subprocess.run(
        [sys.executable, "-c", NEW_SHOE_GAME, str(capture)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "WarResultData" in r.stdout
