"""Table specifications: the schema, the table schedule, the attacker model (YAML, validated)."""
