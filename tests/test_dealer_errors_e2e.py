"""Every dealer error, end to end: the simulated shoe on a real pty, the real daemon, the bus.

The shoe simulator injects each error at its first chance; the test plays the
supervisor through tablectl where the procedure needs one.
"""

from __future__ import annotations

import json

from daemon_harness import Daemon, endpoints, tablectl, write_config

from daemon.bus.subscriber import Follower


def run_daemon(tmp_path, errors):
    cfg = write_config(tmp_path, sim=f"seed = 8\npace = 0.01\nerrors = {json.dumps(errors)}\n")
    # the dealer's extra cards come well before the croupier opens betting again
    text = cfg.read_text().replace("betting_seconds = 0.05", "betting_seconds = 0.3")
    cfg.write_text(text.replace("settle_seconds = 0.01", "settle_seconds = 0.5"))
    return cfg, Daemon(cfg)


def test_forgotten_burn_voids_the_hand_and_the_shoe(tmp_path):
    cfg, d = run_daemon(tmp_path, ["forgotten-burn"])
    pub, rep = endpoints(cfg)
    try:
        d.start()
        f = Follower(pub, rep, table="it")
        f.until(lambda e: e.type == "shoe.started", 10)
        # the dealer forgot the burn and opens betting; the croupier closes it, the shoe deals
        assert tablectl(cfg, "betting", "open").returncode == 0
        seen = f.until(lambda e: e.type == "shoe.void", 10)
        seen += f.until(lambda e: e.type == "shoe.burn", 10)  # the croupier's new shoe burns
        f.close()
    finally:
        d.stop()
        d.close()
    by = {(e.type, e.data.get("reason")) for e in seen}
    assert ("hand.void", "burn-not-completed") in by and ("shoe.void", "burn-not-completed") in by


def test_each_dealer_error_through_a_pty(tmp_path):
    errors = ["garbage", "unreadable", "face-up", "early-card", "two-extra-cards", "extra-card"]
    cfg, d = run_daemon(tmp_path, errors)
    pub, rep = endpoints(cfg)
    seen: list = []
    try:
        d.start()
        f = Follower(pub, rep, table="it")
        # the burn's first card comes after line noise, unreadable: the table pauses
        # until a supervisor enters the card
        seen += f.until(lambda e: e.type == "table.paused", 15)
        r = tablectl(cfg, "card", "2C")
        assert r.returncode == 0, r.stderr
        seen += f.until(
            lambda e: e.type == "alarm.raised" and e.data["kind"] == "card-before-betting-closed",
            15,
        )
        aid = seen[-1].data["id"]
        assert tablectl(cfg, "alarm", "clear", aid, "--reason", "set aside").returncode == 0
        seen += f.until(lambda e: e.type == "card.dealt" and e.data.get("carried"), 20)
        seen += f.until(
            lambda e: (
                e.type == "card.dealt"
                and e.data.get("extra_card")
                and not e.data.get("carried")
                and e.data["hand"] > seen[-1].data["hand"]
            ),
            20,
        )
        seen += f.until(lambda e: e.type == "hand.result", 20)
        f.close()
        dev = json.loads(tablectl(cfg, "--json", "devices").stdout)["devices"][0]
    finally:
        d.stop()
        d.close()
    by = {(e.type, e.data.get("reason") or e.data.get("kind")) for e in seen}
    assert ("alarm.raised", "card-unreadable") in by
    entered = [e for e in seen if e.type == "card.dealt" and e.data.get("entered_by")]
    assert entered and entered[0].data["card"] == "2C"
    assert any(e.type == "card.dealt" and e.data["face_up"] for e in seen)
    assert ("alarm.raised", "card-before-betting-closed") in by
    assert dev["malformed"] >= 1  # the line noise: counted, never a card
    assert tablectl(cfg, "verify").returncode == 0
