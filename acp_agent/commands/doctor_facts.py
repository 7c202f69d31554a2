"""``doctor``'s model facts line: the model's context window, output limit, reasoning and images, each
with where it came from (the configuration, the server's model list, the built-in table), and what to do
when the window is unknown or is a server's small default that evicts silently (Ollama). ``doctor`` makes
it a check (this module knows nothing of it: ``doctor`` imports it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.model_info import ModelInfo

    from ..config import Config

__all__ = ["facts_check"]


def _said(value: int | bool | None, source: str | None, unit: str = "") -> str:
    if value is None:
        return "unknown"
    shown = ("yes" if value else "no") if isinstance(value, bool) else f"{value:,}{unit}"
    return f"{shown} ({source})" if source else shown


def facts_check(config: Config, infos: Sequence[ModelInfo], env_config_file: str) -> tuple[bool | None, str]:
    """The facts of the configured model, given what its server's list said (``infos``), as the check's
    outcome: True (fine) or None (a warning), and its message."""
    from ..coding.reports import ollama_warning, resolve_facts

    name = config.model or ""
    served = next((i for i in infos if i.id == name), None)
    facts = resolve_facts(name, config.models.get(name), served)
    src = facts.sources
    text = (
        f"{name}: context window {_said(facts.context_window, src.get('context_window'), ' tokens')}; "
        f"output limit {_said(facts.max_output_tokens, src.get('max_output_tokens'), ' tokens')}; "
        f"reasoning {_said(facts.reasoning, src.get('reasoning'))}; "
        f"images {_said(facts.images, src.get('images'))}"
    )
    if facts.trained_window and facts.trained_window != facts.context_window:
        text += f"; the model supports {facts.trained_window:,}"
    if facts.evicts_silently:
        warning = ollama_warning(facts, Path(env_config_file)).replace("\n\n", " ").replace("\n", " ")
        return None, f"{text}. {warning}"
    if facts.context_window is None:
        return (
            None,
            f"{text}. Without a window there is no usage meter and no automatic compaction; declare it "
            f'in {env_config_file}: [models."{name}"] context_window = <tokens>',
        )
    return True, text
