"""tabled-bridge: a floor of tables into NATS JetStream (``docs/floor.md``)."""
