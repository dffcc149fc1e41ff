"""Coin toss: a toy game written as a third party writes one — its own package, its own
event types, one entry point — for ``tests/test_third_party_game.py``. ``rules.py`` the
rule, ``table.py`` the game, ``describe.py`` how it reads, ``events.py`` its events."""
