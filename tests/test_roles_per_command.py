"""Issue 28 item 3: which role may send which command in which game, declared once and
documented once, and the dealer role (the game server's) can void nothing.

The declared map is each command's ``CommandSpec`` (``roles``; ``button_roles``: only from
the dealer's panel) and the daemon's own ``DAEMON_COMMANDS``; ``docs/security.md`` (Roles
per command) is checked against it row by row. Every game's every command is then sent
from every role, from the control socket and from a panel, to the real table; and along
every capture of every game, each command the dealer role may send from the control
socket is tried at every state and must never void a hand, a round, a spin or a shoe
(before: ``card.exposed`` from the dealer role voided a blackjack round).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from daemon import games
from daemon.pipeline.capture import load
from daemon.pipeline.replay import Replayer
from daemon.runtime.app import DAEMON_COMMANDS
from daemon.table import ROLES, Command, Input, Table

ROOT = Path(__file__).resolve().parents[1]
VOIDS = {"hand.void", "shoe.void", "round.void", "spin.void"}
GAMES = games.games()
CAPTURES = sorted((ROOT / "tests" / "captures").glob("*/*.log"))
#: arguments a game server might send, each command tried with each
ARGS: list[dict[str, object]] = [
    {},
    {"card": "KD"},
    {"box": "1"},
    {"box": 1, "take": "yes"},
    {"boxes": "1,2"},
    {"turn": "1"},
    {"die1": 3, "die2": 5, "die3": 6},
    {"reason": "game server"},
]


def _map() -> dict[tuple[str, str], tuple[str, ...]]:
    """(command, game) → each role's cell: ``yes``, ``panel`` or ``no``, from the specs."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for game, cls in GAMES.items():
        for name, sp in {**DAEMON_COMMANDS, **Table.commands, **cls.commands}.items():
            out[name, game] = tuple(
                "yes" if r in sp.roles else "panel" if r in sp.button_roles else "no" for r in ROLES
            )
    return out


def _documented() -> dict[tuple[str, str], tuple[str, ...]]:
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## Roles per command", 1)[1].split("\n## ", 1)[0]
    header = f"| command | games | {' | '.join(ROLES)} |"
    assert header in section, f"docs/security.md, Roles per command: no header {header}"
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([a-z.-]+)` \| ([^|]+) \|(.*)\|$", line)
        if m is None:
            continue
        cells = tuple(c.strip() for c in m.group(3).split("|"))
        names = [g.strip() for g in m.group(2).split(",")]
        for game in list(GAMES) if names == ["every game"] else names:
            assert (m.group(1), game) not in out, f"{m.group(1)} {game} documented twice"
            out[m.group(1), game] = cells
    return out


def test_the_documented_role_map_is_the_declared_one():
    assert _documented() == _map()


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_command_from_every_role_is_refused_for_its_role_exactly_when_the_map_says(game):
    cls = GAMES[game]
    table = Table(cls(msgspec.convert({}, cls.Rules)), ["dev"])
    state = table.initial()
    for name, sp in table.all_commands.items():
        for role in ROLES:
            for source in ("control", "button", "timer"):
                d = table.decide(state, Command(name, {}, "t", role, source=source))
                role_refused = d.refused is not None and " role; you are " in d.refused
                allowed = role in sp.roles or (source == "button" and role in sp.button_roles)
                assert role_refused is not allowed, (name, role, source, d.refused)
                if role_refused:
                    assert d.drafts == []


class _Probe(Replayer):
    """A capture's replay that, before each input, tries every command the dealer role may
    send from the control socket on the state at that moment (pure decides: nothing kept)."""

    every = 1

    def _decide(self, inp: Input, when: float) -> None:
        self.seen = getattr(self, "seen", 0) + 1
        if self.seen % self.every == 0:
            self.probe()
        super()._decide(inp, when)

    def probe(self) -> None:
        for name, sp in self.table.all_commands.items():
            if "dealer" not in sp.roles:
                continue
            for args in ARGS:
                d = self.table.decide(self.state, Command(name, args, "gs", "dealer"))
                voids = VOIDS & {x.type for x in d.drafts}
                assert not voids, (name, args, sorted(voids), self.state.game)
                self.probes = getattr(self, "probes", 0) + 1


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_dealer_role_voids_nothing_at_any_state_of_any_capture(path):
    cap = load(path)
    r = _Probe.for_capture(cap)
    r.__class__ = _Probe
    r.every = max(1, len(cap.lines) // 400)  # about 400 states of each capture
    r.feed(cap)
    r.probe()


def test_the_dealer_panel_still_reports_an_exposed_card_and_the_rules_void():
    """What the dealer at the table sees is still the dealer's to report (seed 004 §4)."""
    cls = GAMES["baccarat"]
    table = Table(cls(msgspec.convert({}, cls.Rules)), ["shoe"])
    t = table.initial()
    for c in (Command("shoe.new", {}, "d", "dealer"), Command("betting.open", {}, "d", "dealer")):
        d = table.decide(t, c)
        assert d.refused is None, d.refused
        for x in d.drafts:
            t = table.apply(t, x.type, x.data)
    ctl = table.decide(t, Command("card.exposed", {}, "gs", "dealer"))
    assert ctl.refused is not None and "dealer's panel only" in ctl.refused
    panel = table.decide(t, Command("card.exposed", {}, "panel", "dealer", source="button"))
    assert panel.refused is None and "hand.void" in {x.type for x in panel.drafts}
