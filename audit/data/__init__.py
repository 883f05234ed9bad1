"""The confidential microdata: reading, validating, streaming by geography; the loaded inputs."""
