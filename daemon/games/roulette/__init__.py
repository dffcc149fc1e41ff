"""Roulette: the pockets (``rules.py``), the state and house rules (``state.py``), the wheel's
frames as the table follows them (``wheel.py``), the round (``round.py``), the game that joins
them (``table.py``) and how a spin reads (``describe.py``)."""
