"""tablectl's larger commands, one module each (``register`` adds its sub-parser)."""
