"""ACP conformance scenarios and their runner: ``python -m tests.conformance --agent "cmd ..."``."""
