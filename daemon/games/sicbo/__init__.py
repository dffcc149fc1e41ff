"""Sic Bo: the facts of a throw (``rules.py``), the round (``table.py``), how it reads (``describe.py``)."""
