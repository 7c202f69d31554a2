"""The model lists the agent has cached per endpoint (``<home>/cache/models.json``) and the ``model``
select's values: standard library only (and ``harness.model_info``), because the first ``session/new`` is
answered from them before the rest of the agent is imported (``acp_agent._early``). ``ModelCatalog``
(``_catalog``) keeps and refreshes them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeGuard, cast

from harness.providers import registry

from ._model_facts import builtin_window, window_text

if TYPE_CHECKING:
    from harness.model_info import ModelInfo

__all__ = ["GROUP_OVER", "cache_key", "is_http", "model_values", "read_cache"]


GROUP_OVER: Final = 12
_FAMILY = re.compile(r"^[A-Za-z]+(?:-?\d+(?:\.\d+)?)?")


def is_http(provider: str | None) -> TypeGuard[str]:
    """Whether ``provider`` is reached over HTTP (``harness.providers.registry``'s), its model list fetched
    and cached."""
    return registry.get(provider) is not None


def cache_key(provider: str, base_url: str | None) -> str:
    """The endpoint's key in the cache: the provider (an ``is_http`` one) and its base URL."""
    spec = registry.get(provider)
    url = (base_url or (spec.default_url if spec is not None else "")).rstrip("/")
    return f"{provider} {url}"


def _value(name: str, window_of: Callable[[str], int | None]) -> dict[str, Any]:
    entry: dict[str, Any] = {"value": name, "name": name}
    window = window_of(name)
    if window is not None:
        entry["description"] = f"{window_text(window)} tokens of context"
    return entry


def _group_of(name: str) -> str:
    vendor, slash, _rest = name.partition("/")
    if slash:
        return vendor
    match = _FAMILY.match(name)
    return match.group(0) if match else name


def model_values(
    names: Sequence[str], window_of: Callable[[str], int | None] = builtin_window
) -> list[dict[str, Any]]:
    """The ``options`` of the ``model`` select: flat, or grouped (vendor or family) when long; each
    model's description gives its context window where ``window_of`` knows it."""
    flat = [_value(n, window_of) for n in names]
    if len(names) <= GROUP_OVER:
        return flat
    groups: dict[str, list[dict[str, Any]]] = {}
    for name, entry in zip(names, flat, strict=True):
        groups.setdefault(_group_of(name), []).append(entry)
    if len(groups) < 2 or len(groups) > len(names) // 2:
        return flat  # grouping would not help
    return [{"group": g, "name": g, "options": entries} for g, entries in groups.items()]


def read_cache(path: Path) -> dict[str, tuple[list[str], dict[str, ModelInfo]]]:
    """The cache file's lists and facts by endpoint key (``{}`` when absent or unreadable)."""
    from harness.model_info import ModelInfo  # (not before initialize is answered)

    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        import logging  # (only here: the early answer imports this module before logging is set up)

        logging.getLogger(__name__).info("%s is unreadable (%s); model lists are fetched again", path, exc)
        return {}
    out: dict[str, tuple[list[str], dict[str, ModelInfo]]] = {}
    for key, entry in (cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}).items():
        got: dict[str, Any] = cast("dict[str, Any]", entry) if isinstance(entry, dict) else {}
        models: Any = got.get("models")
        if not isinstance(models, list):
            continue
        facts: dict[str, ModelInfo] = {}
        stored: Any = got.get("facts")
        for item in cast("list[Any]", stored) if isinstance(stored, list) else []:
            info = ModelInfo.from_dict(cast("dict[str, Any]", item)) if isinstance(item, dict) else None
            if info is not None:
                facts[info.id] = info
        out[key] = ([str(m) for m in cast("list[Any]", models) if isinstance(m, str)], facts)
    return out
