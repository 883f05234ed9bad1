"""Protection: suppression, rounding and noise recommended and re-audited."""
