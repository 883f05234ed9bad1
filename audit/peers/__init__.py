"""The peers' formats: status codes of tau-Argus, sdcTable, GaussSuppression and SDMX, the protected
release written in them, and another tool's pattern read back for an audit."""
