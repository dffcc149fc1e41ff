"""``tablectl`` and the other commands a person runs (``docs/architecture.md``, Folders).

This ``__init__`` imports nothing: ``tablectl --version`` and a command's ``--help`` load
``daemon.ctl.cli`` alone (``tests/test_tablectl_startup.py``); what the commands and the
tools share is :mod:`daemon.ctl.shared`.
"""
