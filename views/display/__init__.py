"""``tabled-display``: the screen at the table, fed only by that table's bus (docs/views.md)."""
