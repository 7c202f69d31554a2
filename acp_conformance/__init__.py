"""acp-conformance: a conformance kit for Agent Client Protocol agents.

``acp-conformance --agent "CMD ..." [--profile NAME]`` runs capability-aware, spec-cited scenarios against
any ACP agent over stdio; prompt turns run against a local fake model streaming the providers' formats.
The library API below is what the command uses.
"""

from .checks import Check, CheckResult, Level, Outcome
from .fake_model import FakeModel, FakeServer, Reply, Turn
from .profile import Profile, ProfileError, load_profile
from .report import KIT_VERSION, exit_status, summary, to_json, to_junit, to_table
from .scenarios import Scenario, kit_scenario_dir, load_scenarios
from .suite import SuiteResult, run_scenario, run_suite
from .validate import SCHEMA_VERSION, MessageValidator

__all__ = [
    "KIT_VERSION",
    "SCHEMA_VERSION",
    "Check",
    "CheckResult",
    "FakeModel",
    "FakeServer",
    "Level",
    "MessageValidator",
    "Outcome",
    "Profile",
    "ProfileError",
    "Reply",
    "Scenario",
    "SuiteResult",
    "Turn",
    "exit_status",
    "kit_scenario_dir",
    "load_profile",
    "load_scenarios",
    "run_scenario",
    "run_suite",
    "summary",
    "to_json",
    "to_junit",
    "to_table",
]
