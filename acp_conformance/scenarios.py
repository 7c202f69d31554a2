"""Scenario files and what each needs before it can run.

A scenario is a JSON file::

    {"id": "prompt.end-turn", "title": "...", "level": "MUST", "source": "docs/prompt-turn.mdx §4 ...",
     "refs": [44], "requires": ["turn"], "client": {clientCapabilities}, "permission": "allow",
     "schema": "unstable" (its messages are checked against schema.unstable.json; default: schema.json),
     "env": {variables set for the agent (after the profile's)},
     "model": [turns], "script": [agent-native script], "transparent": [...], "timeout_s": 60,
     "steps": [...]}

``requires`` tokens:

- capabilities from the agent's ``initialize`` answer: ``loadSession``, ``session.list``,
  ``session.resume``, ``session.close``, ``session.delete``, ``session.additionalDirectories``,
  ``mcp.http``, ``mcp.sse``, ``mcp.acp``, ``prompt.image``, ``prompt.audio``, ``prompt.embeddedContext``,
  ``auth.logout``, ``auth.status``, ``session.title``, ``session.archive``, ``session.status``,
  ``session.systemPrompt``, ``session.fork``, ``authMethods`` (at least one), ``steering`` (``_meta.steering.supported``, the
  ``_session/steering`` extension); ``!token`` means "not advertised". A missing one is
  reported as *not advertised*, apart from failures;
- ``model`` (the profile points the agent at the fake model), ``turn`` (a model, or an agent that answers
  prompts itself), ``turn:long`` (a turn that lasts until cancelled), ``tool:<role>`` (the profile maps the
  agent's tool for that role), ``setup:<name>`` (the profile's ``[setup.<name>]`` files put the agent in a
  situation, e.g. ``ask_before_read``: its read tool asks the user first; they are written for this scenario), and any other word, a feature the profile lists (``persist``...). A missing
  one is reported as *not applicable*.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .checks import Check, Level, Outcome
from .json_types import is_object, member
from .profile import Profile

__all__ = [
    "CAPABILITY_TOKENS",
    "Scenario",
    "kit_scenario_dir",
    "load_scenarios",
    "requirement_gap",
    "scenario_from_data",
    "tokens_gap",
]

CAPABILITY_TOKENS: dict[str, tuple[str, ...]] = {
    "loadSession": ("loadSession",),
    "session.list": ("sessionCapabilities", "list"),
    "session.resume": ("sessionCapabilities", "resume"),
    "session.close": ("sessionCapabilities", "close"),
    "session.delete": ("sessionCapabilities", "delete"),
    "session.additionalDirectories": ("sessionCapabilities", "additionalDirectories"),
    "mcp.http": ("mcpCapabilities", "http"),
    "mcp.sse": ("mcpCapabilities", "sse"),
    "mcp.acp": ("mcpCapabilities", "acp"),
    "prompt.image": ("promptCapabilities", "image"),
    "prompt.audio": ("promptCapabilities", "audio"),
    "prompt.embeddedContext": ("promptCapabilities", "embeddedContext"),
    "auth.logout": ("auth", "logout"),
    "auth.status": ("auth", "status"),
    "session.title": ("sessionCapabilities", "title"),
    "session.archive": ("sessionCapabilities", "archive"),
    "session.status": ("sessionCapabilities", "status"),
    "session.systemPrompt": ("sessionCapabilities", "systemPrompt"),
    "session.fork": ("sessionCapabilities", "fork"),
}


@dataclass(frozen=True)
class Scenario:
    name: str
    main: Check
    subs: tuple[Check, ...]
    requires: tuple[str, ...]
    data: Mapping[str, Any]

    @property
    def checks(self) -> tuple[Check, ...]:
        return (self.main, *self.subs)


def kit_scenario_dir() -> Path:
    return Path(str(resources.files("acp_conformance").joinpath("scenarios")))


def _check(spec: Mapping[str, Any], where: str, default_id: str) -> Check:
    try:
        level = Level(str(spec.get("level", "")).upper())
    except ValueError:
        raise ValueError(
            f"{where}: level must be MUST, SHOULD or RECOMMENDED, got {spec.get('level')!r}"
        ) from None
    source = str(spec.get("source") or "")
    if not source:
        raise ValueError(
            f"{where}: every check names its source (a docs/*.mdx section, schema.json, JSON-RPC 2.0)"
        )
    return Check(str(spec.get("id") or default_id), str(spec.get("title") or default_id), level, source)


def _subs(steps: Iterable[Mapping[str, Any]], where: str) -> list[Check]:
    out: list[Check] = []
    for i, step in enumerate(steps):
        nested = next(
            (step[k] for k in ("initialize", "new_session", "prompt") if is_object(step.get(k))), None
        )
        spec = step.get("as") or member(nested, "as")
        if spec is not None:
            out.append(_check(spec, f"{where} step {i + 1}", f"{where}.{i + 1}"))
    return out


def load_scenarios(directories: Sequence[Path] | None = None) -> list[Scenario]:
    """Every ``*.json`` scenario in ``directories`` (default: the kit's own), sorted by file name."""
    out: list[Scenario] = []
    for directory in directories or [kit_scenario_dir()]:
        for path in sorted(directory.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            data["_file"] = str(path)
            out.append(scenario_from_data(path.stem, data))
    return out


def scenario_from_data(name: str, data: Mapping[str, Any]) -> Scenario:
    """A scenario from its parsed JSON; raises ``ValueError`` naming what is missing."""
    main = _check(data, name, str(data.get("id") or name))
    subs = _subs(data.get("steps", []), name)
    return Scenario(name, main, tuple(subs), tuple(data.get("requires", [])), data)


def advertises(init: Mapping[str, Any], token: str) -> bool:
    """Whether the ``initialize`` result advertises the capability ``token`` names."""
    if token == "authMethods":
        return bool(init.get("authMethods"))
    if token == "steering":  # the ``_session/steering`` extension, advertised outside agentCapabilities
        steering = member(init.get("_meta"), "steering")
        return member(steering, "supported") is True
    value: Any = init.get("agentCapabilities") or {}
    for part in CAPABILITY_TOKENS[token]:
        if not is_object(value):
            return False
        value = value.get(part)
    return value is not None and value is not False


def requirement_gap(
    scenario: Scenario, init: Mapping[str, Any] | None, profile: Profile
) -> tuple[Outcome, str] | None:
    """Why ``scenario`` cannot run here (an outcome and a reason), or None when it can."""
    return tokens_gap(scenario.requires, init, profile)


def tokens_gap(
    tokens: Iterable[str], init: Mapping[str, Any] | None, profile: Profile
) -> tuple[Outcome, str] | None:
    """Why a run with this ``initialize`` answer and profile lacks one of ``tokens``, or None."""
    for token in tokens:
        negated = token.startswith("!")
        name = token[1:] if negated else token
        if name in CAPABILITY_TOKENS or name in ("authMethods", "steering"):
            if init is None:
                return Outcome.NOT_RUN, "initialize did not answer, so capabilities are unknown"
            if advertises(init, name) == negated:
                if negated:
                    return Outcome.NOT_APPLICABLE, f"the agent advertises {name}"
                return Outcome.NOT_ADVERTISED, f"the agent does not advertise {name}"
            continue
        gap = _profile_gap(name, profile)
        if gap:
            return Outcome.NOT_APPLICABLE, gap
    return None


def _profile_gap(name: str, profile: Profile) -> str | None:
    if name == "model":
        return None if profile.has_model else "no model profile: the agent is not pointed at the fake model"
    if name == "turn":
        return None if profile.has_model or profile.model_free else "no prompt turn: no model profile"
    if name == "turn:long":
        ok = profile.has_model or (profile.model_free and profile.long_prompt)
        return None if ok else "no turn that lasts until cancelled: no model profile and no long_prompt"
    if name.startswith("setup:"):
        setup = name.removeprefix("setup:")
        return None if setup in profile.setups else f"the profile has no [setup.{setup}] for this situation"
    if name.startswith("tool:"):
        role = name.removeprefix("tool:")
        if not profile.has_model:
            return "no model profile"
        return None if role in profile.tools else f"the profile maps no {role!r} tool"
    return None if name in profile.features else f"needs the agent feature {name!r} (profile {profile.name})"
