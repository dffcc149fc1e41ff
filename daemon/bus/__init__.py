"""The bus tier: every socket the table serves — the PUB bus and its replay server, the
control socket and its commands' answers, safe binds, connection caps and the descriptor
budget, the metrics endpoint — and the subscriber recipe clients use
(``docs/architecture.md``, "Folders")."""
