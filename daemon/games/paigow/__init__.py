"""Mahjong Pai Gow (seed 002, 麻雀排九): the rules, the round, and how its events read."""
