"""``tabled-pit``: the pit's floor view, read from JetStream, with acknowledged alarms (docs/views.md)."""
