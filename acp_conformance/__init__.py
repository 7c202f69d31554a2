"""acp-conformance."""
