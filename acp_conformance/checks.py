"""What the kit reports: checks (each with its level and its source in the spec) and their outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["GLOBAL_CHECKS", "Check", "CheckResult", "Level", "Outcome"]


class Level(StrEnum):
    """How binding a check is: MUST (the ACP spec or JSON-RPC 2.0 requires it), SHOULD (they recommend
    it), RECOMMENDED (this kit's advice, e.g. an error that names the bad field)."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    RECOMMENDED = "RECOMMENDED"


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_ADVERTISED = "not_advertised"
    """The agent did not advertise the capability the check needs: not run, and no fault."""
    NOT_APPLICABLE = "not_applicable"
    """The run cannot exercise the check (no model profile, a feature of another agent, a tool the profile
    does not map)."""
    NOT_RUN = "not_run"
    """An earlier step of the same scenario failed, so this check was never reached."""


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    level: Level
    source: str
    """Where the requirement is written: ``docs/<page>.mdx §Section``, ``schema.json $defs/<Name>``,
    ``JSON-RPC 2.0 §N``, or ``acp-conformance`` for the kit's own advice."""


@dataclass
class CheckResult:
    check: Check
    scenario: str
    outcome: Outcome
    detail: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0

    @property
    def counts_against(self) -> bool:
        return self.outcome is Outcome.FAILED


GLOBAL_CHECKS = {
    "wire.only-acp-on-stdout": Check(
        "wire.only-acp-on-stdout",
        "every stdout line is one JSON-RPC message, valid against schema.json",
        Level.MUST,
        "docs/transports.mdx §stdio; schema.json",
    ),
    "client.capabilities-respected": Check(
        "client.capabilities-respected",
        "no fs/*, terminal/* or elicitation/create request unless the client advertised it",
        Level.MUST,
        "docs/file-system.mdx §Checking Support; docs/terminals.mdx; docs/elicitation.mdx §Checking support",
    ),
}
