"""What people look at: web pages fed by the bus, never code inside the daemon process.

Each view is its own service (its own process and systemd unit) and a backend of the bus
like the bridge: it imports ``tabled_client`` and its own modules, never ``daemon/``
(``tests/test_views_imports.py``), so it can show only what the table published.
"""
