"""Blackjack (seed 003 part III): ``rules.py`` the pure rules, ``state.py`` the round's state and apply, ``table.py`` its decide, ``clock.py`` its timers, ``describe.py`` how it reads."""
