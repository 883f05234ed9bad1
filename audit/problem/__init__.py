"""Per-unit problems over compressed domains (plain and coupled levels); claims and verdicts."""
