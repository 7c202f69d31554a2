"""What the command line's subcommands read of the coding agent (``acp_agent.commands``): the doctor's
sandbox line and model facts, the rule files ``permissions`` lists and the protected paths ``sandbox`` keeps. The public face of the concern
folders for them; the stdio agent never imports this module."""

from __future__ import annotations

from .models._model_facts import resolve_facts
from .models._model_notes import ollama_warning
from .permissions._modes import store_paths
from .permissions._protected import AGENT_ROOT_PATHS, home_sandbox_paths
from .permissions._sandboxing import sandbox_status
from .permissions._trust import RuleFileStore

__all__ = [
    "AGENT_ROOT_PATHS",
    "RuleFileStore",
    "home_sandbox_paths",
    "ollama_warning",
    "resolve_facts",
    "sandbox_status",
    "store_paths",
]
