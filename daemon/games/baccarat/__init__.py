"""Baccarat: the drawing rules (``rules.py``), the table (``table.py``), how it reads (``describe.py``)."""
