"""The models a provider serves, for the ``model`` config option, without a network wait on ``session/new``.

``ModelCatalog`` keeps each endpoint's list (keyed by provider and base URL) in memory and in
``<home>/cache/models.json``: ``session/new`` lists what is cached (so an editor's saved default, applied
only when it is among the listed values, is found in a freshly spawned agent), and ``refresh`` asks the
server in the background after the answer (at most once per ``FRESH_S`` per endpoint and process). The
option's values carry the context window where the model family is known, and are grouped by vendor or
family when the list is long.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import anyio.to_thread

from ._model_facts import builtin_window, window_text

if TYPE_CHECKING:
    from harness.model_info import ModelInfo

__all__ = ["HTTP_PROVIDERS", "ModelCatalog", "model_values"]

log = logging.getLogger(__name__)

HTTP_PROVIDERS: Final = ("openai", "openai-responses", "anthropic")
FRESH_S: Final = 600.0
LIST_TIMEOUT_S: Final = 15.0
GROUP_OVER: Final = 12
_DEFAULT_URLS: Final = {"anthropic": "https://api.anthropic.com"}

_FAMILY = re.compile(r"^[A-Za-z]+(?:-?\d+(?:\.\d+)?)?")


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


class ModelCatalog:
    """The cached model lists of the endpoints this agent talks to (see the module docstring); one per
    agent process, shared by its sessions."""

    def __init__(self, home: Path) -> None:
        self._file = home / "cache" / "models.json"
        self._memory: dict[str, list[str]] = {}
        self._facts: dict[str, dict[str, ModelInfo]] = {}
        self._read_file = False
        self._refreshed: dict[str, float] = {}
        self._locks: dict[str, anyio.Lock] = {}

    @staticmethod
    def key(provider: str, base_url: str | None) -> str:
        url = (base_url or _DEFAULT_URLS.get(provider) or "https://api.openai.com/v1").rstrip("/")
        return f"{provider} {url}"

    async def cached(self, provider: str, base_url: str | None) -> list[str]:
        """The endpoint's last known list (memory, else the cache file; ``[]`` when never listed)."""
        key = self.key(provider, base_url)
        if not self._read_file:
            self._read_file = True
            stored = await anyio.to_thread.run_sync(_read, self._file)
            for k, (names, facts) in stored.items():
                self._memory.setdefault(k, names)
                self._facts.setdefault(k, facts)
        return list(self._memory.get(key, []))

    def facts(self, provider: str, base_url: str | None) -> Mapping[str, ModelInfo]:
        """What the endpoint's model list said of each model, as last known (by model id; not a copy:
        read for every model of the picker)."""
        return self._facts.get(self.key(provider, base_url), {})

    async def refresh(
        self, provider: str, base_url: str | None, api_key: str | None, *, force: bool = False
    ) -> list[str] | None:
        """Ask the server for its models (unless asked within ``FRESH_S``, or ``force``); the list, or
        None when the server could not be asked."""
        key = self.key(provider, base_url)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            if not force and time.monotonic() - self._refreshed.get(key, -FRESH_S) < FRESH_S:
                return list(self._memory.get(key, []))
            try:
                from harness.providers.factory import describe_models

                with anyio.fail_after(LIST_TIMEOUT_S):
                    infos = await describe_models(provider, base_url=base_url, api_key=api_key)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                log.info("listing the models of %s failed: %s", key, exc)
                return None
            self._refreshed[key] = time.monotonic()
            found = sorted({i.id for i in infos})
            facts = {i.id: i for i in infos}
            if found != self._memory.get(key) or facts != self._facts.get(key):
                self._memory[key] = found
                self._facts[key] = facts
                try:
                    await anyio.to_thread.run_sync(_write, self._file, key, found, facts)
                except OSError as exc:
                    log.info("cannot write %s: %s", self._file, exc)
            return found


def _read(path: Path) -> dict[str, tuple[list[str], dict[str, ModelInfo]]]:
    from harness.model_info import ModelInfo

    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.info("%s is unreadable (%s); model lists are fetched again", path, exc)
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


def _write(path: Path, key: str, models: list[str], facts: dict[str, ModelInfo]) -> None:
    from ..session._store import write_json_atomic

    stored: dict[str, Any] = {
        k: {"models": names, "facts": [i.to_dict() for i in known.values()]}
        for k, (names, known) in _read(path).items()
    }
    stored[key] = {"models": models, "facts": [i.to_dict() for i in facts.values()], "fetchedAt": time.time()}
    write_json_atomic(path, stored, indent=None)
