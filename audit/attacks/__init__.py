"""The attacks: exact (generate-then-verify, implied, intervals), ranking, linear, difference, re-identification."""
