"""Peers' specifications (tau-Argus batch files, SSBtools formulas) read as our schema, schedule and policy."""
