"""What a coding session's opening answer says (``modes`` and ``configOptions``), from the configuration
and the cached model list alone.

``CodingControls`` builds its answers with ``modes_state`` and ``options_state``; ``EarlyOpening`` uses the
same two to answer an editor's first ``session/new`` before the rest of the agent is imported
(``acp_agent._early``), so this module keeps to the standard library, the configuration and the light
coding modules (``_model_list``, ``_model_facts``, ``_thinking``, ``_toggles``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._early import advertised
from ._toggles import Toggle, session_switches
from .models._model_facts import resolve_facts
from .models._model_list import cache_key, is_http, model_values, read_cache
from .models._thinking import ThoughtLevel, thought_levels

if TYPE_CHECKING:
    from ..config import Config

__all__ = [
    "MODE_INFO",
    "EarlyOpening",
    "ModeInfo",
    "modes_state",
    "offered_modes",
    "options_state",
    "start_mode",
]


@dataclass(frozen=True, slots=True)
class ModeInfo:
    name: str
    description: str


MODE_INFO: Final[dict[str, ModeInfo]] = {
    "read-only": ModeInfo("Read only", "Reads and searches only: no edits, no commands"),
    "default": ModeInfo("Default", "Reads run; edits and commands ask first"),
    "accept-edits": ModeInfo("Accept edits", "Edits inside the project run; commands ask first"),
    "plan": ModeInfo("Plan", "Read and plan only, then propose switching to a mode that works"),
    "full-access": ModeInfo("Full access", "Everything runs without asking"),
}


def offered_modes(euid: int | None = None) -> list[str]:
    """The modes a session offers: ``full-access`` not when running as root."""
    uid = os.geteuid() if euid is None else euid
    return [m for m in MODE_INFO if not (m == "full-access" and uid == 0)]


def start_mode(configured: str, offered: Sequence[str]) -> str:
    """The mode a session starts in: the configured one when it is offered, else ``default``."""
    return configured if configured in offered else "default"


def modes_state(mode: str, offered: Sequence[str]) -> dict[str, Any]:
    """The ``modes`` of a session response."""
    return {
        "currentModeId": mode,
        "availableModes": [
            {"id": m, "name": MODE_INFO[m].name, "description": MODE_INFO[m].description} for m in offered
        ],
    }


def options_state(
    *,
    mode: str,
    offered: Sequence[str],
    models: Sequence[str],
    current_model: str | None,
    provider: str | None,
    thought_level: str,
    window_of: Callable[[str], int | None],
    toggles: Sequence[Toggle],
    booleans: bool,
) -> list[dict[str, Any]]:
    """The ``configOptions`` of a session response: ``mode``, ``model`` (``models`` with the current one
    first), ``thought_level`` where the provider has levels, and the ``toggles`` for clients that render
    boolean options (``booleans``)."""
    options: list[dict[str, Any]] = [
        {
            "type": "select",
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "description": "What the agent may do without asking",
            "currentValue": mode,
            "options": [
                {"value": m, "name": MODE_INFO[m].name, "description": MODE_INFO[m].description}
                for m in offered
            ],
        }
    ]
    first: list[str] = [current_model] if current_model else []
    names = list(dict.fromkeys([*first, *models]))
    current = current_model or (names[0] if names else provider or "default")
    if current not in names:
        names.insert(0, current)
    options.append(
        {
            "type": "select",
            "id": "model",
            "name": "Model",
            "category": "model",
            "currentValue": current,
            "options": model_values(names, window_of),
        }
    )
    levels = thought_levels(provider)
    if levels:
        options.append(
            {
                "type": "select",
                "id": "thought_level",
                "name": "Thinking",
                "category": "thought_level",
                "currentValue": thought_level,
                "options": [{"value": v, "name": v.capitalize()} for v in levels],
            }
        )
    if booleans:
        options.extend(t.option() for t in toggles)
    return options


class EarlyOpening:
    """The opening state of a new coding session in ``cwd``, as the coding factory will build it, computed
    before the factory is imported: the configuration resolved for ``cwd`` (strictly: a configuration with
    problems gets ``None``, and the factory's own answer says what is wrong) and the cached model list."""

    def __init__(self, flags: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        self._flags = dict(flags)
        self._environ = dict(environ)

    def __call__(self, cwd: Path, client_capabilities: Mapping[str, Any]) -> dict[str, Any] | None:
        from ..config import ConfigError, load_config

        try:
            config = load_config(cwd, self._flags, self._environ)
        except (ConfigError, OSError):
            return None
        return opening_state(config, client_capabilities)


def opening_state(config: Config, client_capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """``modes`` and ``configOptions`` of a fresh session under ``config`` (no choice made yet)."""
    offered = offered_modes()
    mode = start_mode(config.default_mode, offered)
    provider = config.provider
    served: list[str] = []
    facts: Mapping[str, Any] = {}
    if provider is not None and is_http(provider):
        stored = read_cache(config.home / "cache" / "models.json").get(cache_key(provider, config.base_url))
        if stored is not None:
            served, facts = stored

    def window_of(name: str) -> int | None:
        known = resolve_facts(name, config.models.get(name), facts.get(name))
        return None if known.default_window else known.context_window  # an assumed one is not listed

    return {
        "modes": modes_state(mode, offered),
        "configOptions": options_state(
            mode=mode,
            offered=offered,
            models=served,
            current_model=config.model,
            provider=provider,
            thought_level=ThoughtLevel(provider).level,
            window_of=window_of,
            toggles=session_switches(),
            booleans=advertised(client_capabilities, "session", "configOptions", "boolean"),
        ),
    }
