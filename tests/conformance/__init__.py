"""Tests of the ACP conformance kit (acp_conformance) and of this agent through it; scenarios/ holds this
project's own scenarios (its contract beyond the spec)."""
