"""Attack engines: exact (SAT / IP), ranking (RAP-RANK) and linear (LP / least squares)."""
