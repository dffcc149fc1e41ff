"""A casino floor on one machine: nats-server, real tabled daemons, a load generator, the bridge.

``python -m bench.floor`` (``make floor``) runs the 60-second floor and writes its figures to
``bench/results/``; the fault tests (``tests/test_floor_faults.py``) use the same parts.
"""
