"""The table's display in real headless Chromium against real daemons on simulated devices.

For every game's shipped config (fast timings) the page is opened while the table plays,
and what it shows is checked against the events on the bus (the table's replay socket, up
to the seq the page says it shows): the baccarat roads cell by cell for a whole shoe,
across a daemon restart and a display restart; the last roulette numbers and the hot and
cold counts; the Sic Bo dice; Blackjack's boxes and up card, with the hole card never on
the page before the table turns it over; Dragon Tiger's roads; Pai Gow's rounds; and the
banner's betting open, no more bets and void with its reason.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import Daemon, endpoints, fast_copy, tablectl, write_config
from display_harness import (
    READ_ROADS,
    DisplayProc,
    chromium,
    expected_roads,
    replay,
    screenshot,
    since_last,
)

SHOE_FAST = {"betting_seconds": "0.05", "settle_seconds": "0.01"}
WAIT = 60_000  # ms: a shared machine; the tests take seconds when it is quiet


@pytest.fixture(scope="module")
def browser():
    path = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path)
        yield b
        b.close()


def open_page(browser, url: str, init: str | None = None):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    if init:
        page.add_init_script(init)
    page.goto(url)
    page.errors = errors  # type: ignore[attr-defined]
    return page


def page_seq(page) -> int:
    return int(page.evaluate("() => +document.body.dataset.seq"))


def check_roads(page, publish_replay: tuple[str, str]) -> int:
    got = page.evaluate(READ_ROADS)
    events = replay(publish_replay[1], got.pop("seq"))
    want = expected_roads(events)
    for name in ("bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig"):
        assert sorted(got[name]) == want[name], name
    assert got["next"] == want["next"]
    return len(want["bead_plate"])


def test_baccarat_roads_whole_shoe_across_restarts(browser, tmp_path: Path):
    """A whole shoe's five roads and "next", cell by cell against its hand.results; then the
    page goes on across a restart of the daemon (it says the table is offline meanwhile) and
    a restart of the display (it reconnects by itself and shows the replayed state)."""
    cfg = fast_copy(
        "demo.toml",
        tmp_path,
        {**SHOE_FAST, "auto_new_shoe": "false"},
        "seed = 3\npace = 0.005\nerror_every = 0",
    )
    eps = endpoints(cfg)
    d = Daemon(cfg)
    disp = DisplayProc(cfg, "--limits", "Min 10 · Max 5 000")
    try:
        d.start()
        disp.start()
        page = open_page(browser, disp.url)
        assert tablectl(cfg, "shoe", "new").returncode == 0
        page.wait_for_function(
            "() => document.getElementById('banner').dataset.status === 'shoe-ended'", timeout=WAIT
        )
        hands = check_roads(page, eps)
        assert hands > 50  # a whole 8-deck shoe
        assert page.text_content("#limits") == "Min 10 · Max 5 000"
        screenshot(page, "display-baccarat.png")

        # the daemon restarts: the page says the table is offline, then goes on
        before = page_seq(page)
        d.stop()
        page.wait_for_function(
            "() => document.getElementById('online').textContent === 'table offline'", timeout=WAIT
        )
        d.start()
        assert tablectl(cfg, "shoe", "new").returncode == 0
        page.wait_for_function(
            f"() => +document.body.dataset.seq > {before} && "
            "document.querySelectorAll('#bead_plate .cell').length >= 5",
            timeout=WAIT,
        )
        check_roads(page, eps)

        # the display restarts on its port: the page reconnects and shows the replayed state
        disp.stop()
        page.wait_for_function("() => document.body.dataset.link === 'lost'", timeout=WAIT)
        before = page_seq(page)
        disp.start()
        page.wait_for_function(
            f"() => document.body.dataset.link === 'ok' && +document.body.dataset.seq > {before}",
            timeout=WAIT,
        )
        check_roads(page, eps)
        assert page.errors == []
    finally:
        disp.stop()
        d.stop()
        d.close()


#: game → (config, changed keys, simulator, results the page must show before it is checked)
GAMES = {
    "dragon-tiger": (
        "dragon-tiger.toml",
        SHOE_FAST,
        "seed = 3\npace = 0.005\nerror_every = 0",
        "() => document.querySelectorAll('#bead_plate .cell').length >= 12",
    ),
    "roulette": (
        "roulette.toml",
        {},
        "seed = 7\nperiod = 0.5\npace = 0.01\nfault_every = 0",
        "() => document.querySelectorAll('#last-numbers li').length >= 10",
    ),
    "sicbo": (
        "sicbo.toml",
        SHOE_FAST,
        "seed = 3\npace = 0.02\nerror_every = 0",
        "() => document.querySelectorAll('#last-dice li').length >= 8",
    ),
    "paigow": (
        "paigow.toml",
        {**SHOE_FAST, "drop_repeats": "false"},
        "seed = 3\npace = 0.01",
        "() => document.querySelectorAll('#pg-rounds tr').length >= 4",
    ),
    "blackjack": (
        "blackjack.toml",
        {"settle_seconds": "0.05", "decision_seconds": "0.5", "insurance_seconds": "0.3"},
        "seed = 3\npace = 0.01\nerror_every = 0",
        "() => document.querySelectorAll('#results li').length >= 6",
    ),
}

#: what the dealer's area showed at each snapshot, recorded by the test (not by the page)
RECORD_DEALER = """
window.__dealer = [];
new MutationObserver(() => {
  const d = document.getElementById('bj-dealer');
  if (d) window.__dealer.push([+document.body.dataset.seq,
    [...d.querySelectorAll('.card')].map((c) => c.dataset.card)]);
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


def results(events: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == type_]


#: each game's part of the page, read in one go so it belongs to one snapshot (its seq)
BARS = "(sel) => Object.fromEntries([...document.querySelectorAll(sel)].map(s => [s.dataset.what, +s.dataset.count]))"
READ = {
    "roulette": f"""() => {{
      const bars = {BARS};
      const nums = (sel) => [...document.querySelectorAll(sel)].map(l => [+l.dataset.number, +l.dataset.count]);
      return {{
        seq: +document.body.dataset.seq,
        numbers: [...document.querySelectorAll('#last-numbers li')].map(l => +l.dataset.number),
        hot: nums('#hot li'), cold: nums('#cold li'),
        bars: bars('#colours span, #parities span'),
      }};
    }}""",
    "sicbo": f"""() => {{
      const bars = {BARS};
      return {{
        seq: +document.body.dataset.seq,
        dice: [...document.querySelectorAll('#last-dice li')].map(l => [l.dataset.faces, +l.dataset.total]),
        bars: bars('#sizes span'),
      }};
    }}""",
    "paigow": """() => ({
      seq: +document.body.dataset.seq,
      rounds: [...document.querySelectorAll('#pg-rounds tr')].map(r => [+r.dataset.round,
        [...r.querySelectorAll('td[data-position]')].map(t => t.textContent)]),
    })""",
    "blackjack": """() => ({
      seq: +document.body.dataset.seq,
      boxes: [...document.querySelectorAll('#boxes .box')].map(b => [b.dataset.box,
        [...b.querySelectorAll('.cards')].map(h => [...h.querySelectorAll('.card')].map(c => c.dataset.card))]),
      dealer: [...document.querySelectorAll('#bj-dealer .card')].map(c => c.dataset.card),
      seen: window.__dealer,
    })""",
}


def check_roulette(got: dict[str, Any], events: list[dict[str, Any]], window: int) -> None:
    spins = results(events, "spin.result")
    assert got["numbers"] == [s["number"] for s in reversed(spins)][:20]
    w = spins[-window:]
    counts = Counter(s["number"] for s in w)
    hot = sorted(range(37), key=lambda n: (-counts[n], n))[:5]
    cold = sorted(range(37), key=lambda n: (counts[n], n))[:5]
    assert got["hot"] == [[n, counts[n]] for n in hot]
    assert got["cold"] == [[n, counts[n]] for n in cold]
    assert got["bars"] == {
        "red": sum(s["color"] == "red" for s in w),
        "black": sum(s["color"] == "black" for s in w),
        "zero": sum(s["color"] == "green" for s in w),
        "odd": sum(s["parity"] == "odd" for s in w),
        "even": sum(s["parity"] == "even" for s in w),
    }


def check_sicbo(got: dict[str, Any], events: list[dict[str, Any]], window: int) -> None:
    dice = results(events, "dice.result")
    assert (
        got["dice"] == [[",".join(map(str, r["faces"])), r["total"]] for r in reversed(dice)][:20]
    )
    w = dice[-window:]
    assert got["bars"] == {
        "big": sum(r["size"] == "big" for r in w),
        "small": sum(r["size"] == "small" for r in w),
        "triple": sum(r["triple"] for r in w),
    }


def check_paigow(got: dict[str, Any], events: list[dict[str, Any]], window: int) -> None:
    def tiles(p: dict[str, Any]) -> str:
        return " ".join("白" if t == "wd" else t for t in p["tiles"])

    want = [
        [r["round"], [f"{p['position']}: {tiles(p)} ({p['points']})" for p in r["positions"]]]
        for r in reversed(results(events, "round.result"))
    ]
    assert got["rounds"] == want[:20]


def check_blackjack(got: dict[str, Any], events: list[dict[str, Any]], window: int) -> None:
    # the boxes and the dealer's cards the page shows, from the events of the round on it
    rnd = since_last(events, "betting.closed")
    done = [e["data"] for e in rnd if e["type"] == "hand.result"]
    if done:
        r = done[-1]
        assert got["boxes"] == [
            [str(b["box"]), [h["cards"] for h in b["hands"]]] for b in r["boxes"]
        ]
        assert got["dealer"] == r["dealer"]["cards"]
    elif not any(e["type"] == "hand.void" for e in rnd):  # a void shows what it turned over
        closed = [e for e in events if e["type"] == "betting.closed"][-1]["data"]
        boxes: dict[str, list[list[str]]] = {str(b): [[]] for b in closed["boxes"]}
        dealer: list[str] = []
        for e in rnd:
            d = e["data"]
            if e["type"] == "card.dealt" and d["box"] == "dealer":
                dealer.append(d["card"] or "hole")
            elif e["type"] == "card.dealt" and d["box"].isdigit() and not d.get("not_due"):
                hands = boxes.setdefault(d["box"], [[]])
                while len(hands) <= d.get("split_hand", 0):
                    hands.append([])
                hands[d.get("split_hand", 0)].append(d["card"])
            elif e["type"] == "dealer.hole_card":
                dealer = [d["card"] if c == "hole" else c for c in dealer]
        assert got["boxes"] == [[b, h] for b, h in boxes.items()]
        assert got["dealer"] == dealer
    # the hole card was never on the page before its reveal: every snapshot the dealer's
    # area showed between a hole card's deal and its reveal shows the up card and a back
    secret: list[list[Any]] = []  # [dealt seq, revealed seq, card]
    for e in events:
        d = e["data"]
        if e["type"] == "card.dealt" and d.get("hole"):
            assert d["card"] is None  # never on the bus either
            secret.append([e["seq"], float("inf"), None])
        elif secret and secret[-1][2] is None and e["type"] == "dealer.hole_card":
            secret[-1][1:] = [e["seq"], d["card"]]
        elif secret and secret[-1][2] is None and e["type"] == "hand.void" and "hole" in d:
            secret[-1][1:] = [e["seq"], d["hole"]["card"]]
    assert any(card for _, _, card in secret), "no hole card was dealt and turned over"
    assert got["seen"], "the test's recorder saw nothing"
    for seq, cards in got["seen"]:
        for at, revealed, _card in secret:
            if at <= seq < revealed:
                assert cards[1:] == ["hole"], (seq, cards)


CHECKS = {
    "roulette": check_roulette,
    "sicbo": check_sicbo,
    "paigow": check_paigow,
    "blackjack": check_blackjack,
}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_display_shows_what_the_bus_says(browser, tmp_path: Path, game: str):
    name, keys, sim, ready = GAMES[game]
    cfg = fast_copy(name, tmp_path, keys, sim)
    eps = endpoints(cfg)
    d = Daemon(cfg)
    window = 8
    disp = DisplayProc(cfg, "--window", str(window))
    try:
        d.start()
        disp.start()
        page = open_page(browser, disp.url, RECORD_DEALER if game == "blackjack" else None)
        page.wait_for_function(ready, timeout=WAIT)
        assert page.evaluate("() => document.body.dataset.game") == game
        if game == "dragon-tiger":
            check_roads(page, eps)
        else:
            got = page.evaluate(READ[game])
            CHECKS[game](got, replay(eps[1], got["seq"]), window)
        screenshot(page, f"display-{game}.png")
        assert page.errors == []
    finally:
        disp.stop()
        d.stop()
        d.close()


@pytest.mark.campaign
@pytest.mark.parametrize("game", ["baccarat", "dragon-tiger"])
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_roads_of_whole_shoes(browser, tmp_path: Path, game: str, seed: int):
    """The long version: a whole shoe of each game for three more seeds, the roads checked
    cell by cell twice while it is dealt and at its end."""
    cfg = fast_copy(
        "demo.toml" if game == "baccarat" else "dragon-tiger.toml",
        tmp_path,
        {**SHOE_FAST, "auto_new_shoe": "false"},
        f"seed = {seed}\npace = 0.005\nerror_every = 0",
    )
    eps = endpoints(cfg)
    d = Daemon(cfg)
    disp = DisplayProc(cfg)
    try:
        d.start()
        disp.start()
        page = open_page(browser, disp.url)
        assert tablectl(cfg, "shoe", "new").returncode == 0
        for at in (10, 40):
            page.wait_for_function(
                f"() => document.querySelectorAll('#bead_plate .cell').length >= {at}", timeout=WAIT
            )
            check_roads(page, eps)
        page.wait_for_function(
            "() => document.getElementById('banner').dataset.status === 'shoe-ended'",
            timeout=WAIT * 2,
        )
        assert check_roads(page, eps) > 50
        assert page.errors == []
    finally:
        disp.stop()
        d.stop()
        d.close()


def test_the_banner_says_betting_closed_and_void(browser, tmp_path: Path):
    """The table's state, driven by a supervisor on a table with no shoe attached: betting
    open, no more bets, and a hand voided by a card exposed during betting, with its reason."""
    cfg = write_config(tmp_path, port=str(tmp_path / "absent"), sim="")
    text = cfg.read_text().replace("betting_seconds = 0.05\n", "")
    cfg.write_text(text.replace("auto_new_shoe = true\n", ""))
    d = Daemon(cfg)
    disp = DisplayProc(cfg)
    banner = "() => document.getElementById('banner').dataset.status === '{}'"
    try:
        d.start()
        disp.start()
        page = open_page(browser, disp.url)
        assert tablectl(cfg, "shoe", "new").returncode == 0
        assert tablectl(cfg, "betting", "open").returncode == 0
        page.wait_for_function(banner.format("betting"), timeout=WAIT)
        assert page.text_content("#status") == "place your bets"
        assert tablectl(cfg, "betting", "close").returncode == 0
        page.wait_for_function(banner.format("closed"), timeout=WAIT)
        assert page.text_content("#status") == "no more bets"
        assert tablectl(cfg, "void", "hand", "--reason", "dealer mistake").returncode == 0
        page.wait_for_function(banner.format("void"), timeout=WAIT)
        assert page.text_content("#status") == "void: bets returned"
        assert page.text_content("#detail") == "hand 1 void (dealer mistake): bets returned"
        assert page.errors == []
    finally:
        disp.stop()
        d.stop()
        d.close()
