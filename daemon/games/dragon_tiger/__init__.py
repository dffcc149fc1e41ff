"""Dragon Tiger: the rules (``rules.py``), the table (``table.py``), how it reads (``describe.py``)."""
