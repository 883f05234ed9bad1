"""Findings: the document, the claim store, JUnit and provenance of side outputs."""
