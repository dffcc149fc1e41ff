"""The runtime tier: the daemon process — the ``tabled`` command, its wiring and start/stop
order, liveness and systemd, the devices and how each is opened, hotplug, alarm hooks, the
config and this PC's checks, the console log (``docs/architecture.md``, "Folders")."""
