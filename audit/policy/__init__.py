"""The policy: rules read from YAML and their verdict on the findings."""
