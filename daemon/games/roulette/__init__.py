"""Roulette: the pockets (``rules.py``) and how a spin reads (``describe.py``); the round is
:mod:`daemon.procedures.spin` until the wheel tracking is split from it."""
