"""The release: queries, tabulation, published values and the constraints an attacker derives."""
