"""The pipeline tier: inputs to committed, published events — the commit loop, a batch's
decide, the commit on the loop's thread, the state recovered from the journal at start, the
request ids committed, the injected clock, and the offline replay of a capture through the
same table (``docs/architecture.md``, "Folders")."""
