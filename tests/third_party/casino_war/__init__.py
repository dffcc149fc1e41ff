"""Casino War: a shoe game written as a third party writes one, on the shoe procedure's public
hooks only — its own package, its own event types, one entry point — for
``tests/test_third_party_war.py``. ``rules.py`` the rules, ``table.py`` the game on the
hooks, ``describe.py`` how it reads, ``events.py`` its events."""
