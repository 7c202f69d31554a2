"""The models a provider serves, for the ``model`` config option, without a network wait on ``session/new``.

``ModelCatalog`` keeps each endpoint's list (keyed by provider and base URL) in memory and in
``<home>/cache/models.json``: ``session/new`` lists what is cached (so an editor's saved default, applied
only when it is among the listed values, is found in a freshly spawned agent), and ``refresh`` asks the
server in the background after the answer (at most once per ``FRESH_S`` per endpoint and process; its
client is built, and the HTTP stack imported, in a worker thread). The
option's values carry the context window where the model family is known, and are grouped by vendor or
family when the list is long.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from harness.atomic import private_dir

from ...session.plugin import write_json_atomic
from ._model_list import cache_key, is_http, model_values, read_cache

if TYPE_CHECKING:
    from harness.model_info import ModelInfo

__all__ = ["ModelCatalog", "import_http_sync", "is_http", "model_values"]

log = logging.getLogger(__name__)

FRESH_S: Final = 600.0
LIST_TIMEOUT_S: Final = 15.0


class ModelCatalog:
    """The cached model lists of the endpoints this agent talks to (see the module docstring); one per
    agent process, shared by its sessions."""

    def __init__(self, home: Path) -> None:
        self._file = home / "cache" / "models.json"
        self._memory: dict[str, list[str]] = {}
        self._facts: dict[str, dict[str, ModelInfo]] = {}
        self._read_file = False
        self._file_lock = threading.Lock()
        self._refreshed: dict[str, float] = {}
        self._locks: dict[str, anyio.Lock] = {}

    key = staticmethod(cache_key)

    async def cached(self, provider: str, base_url: str | None) -> list[str]:
        """The endpoint's last known list (memory, else the cache file; ``[]`` when never listed)."""
        if not self._read_file:
            return await anyio.to_thread.run_sync(self.cached_sync, provider, base_url)
        return list(self._memory.get(self.key(provider, base_url), []))

    def cached_sync(self, provider: str, base_url: str | None) -> list[str]:
        """``cached``, blocking (the first call reads the cache file): for a session's set-up thread."""
        with self._file_lock:  # sessions set up at once, in two worker threads
            if not self._read_file:
                for k, (names, facts) in read_cache(self._file).items():
                    self._memory.setdefault(k, names)
                    self._facts.setdefault(k, facts)
                self._read_file = True
        return list(self._memory.get(self.key(provider, base_url), []))

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
                with anyio.fail_after(LIST_TIMEOUT_S):
                    infos = await _describe(provider, base_url, api_key)
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


def import_http_sync() -> None:
    """Import what an HTTP provider's first request needs (blocking: ~100 ms the first time, a no-op
    after). httpx2 is imported where a request is made and httpcore2 (trio with it, where installed) where
    a client is made, both on the event loop: the first session's set-up after its answer imports them in
    its worker thread instead (for the session ``acp_agent._early`` answered, before any later request is
    served), and so does the first model listing."""
    import httpcore2  # noqa: F401  # pyright: ignore[reportUnusedImport]
    import httpx2  # noqa: F401  # pyright: ignore[reportUnusedImport]

    import harness.providers.factory  # noqa: F401  # pyright: ignore[reportUnusedImport]


async def _describe(provider: str, base_url: str | None, api_key: str | None) -> list[ModelInfo]:
    """The server's models (``harness.providers.factory.describe_models``), the provider's client built
    in a worker thread: its imports and its TLS context (the CA bundle) stay off the event loop, where
    the next request of the editor waits."""

    def build():  # returns the provider's model class, as build_model says
        import_http_sync()
        from harness.providers.factory import build_model

        return build_model(provider, model="-", base_url=base_url, api_key=api_key)

    model = await anyio.to_thread.run_sync(build)
    try:
        return await model.describe_models()
    finally:
        await model.aclose()


def _write(path: Path, key: str, models: list[str], facts: dict[str, ModelInfo]) -> None:
    private_dir(path.parent)  # 0700, as every folder of the agent's own data

    stored: dict[str, Any] = {
        k: {"models": names, "facts": [i.to_dict() for i in known.values()]}
        for k, (names, known) in read_cache(path).items()
    }
    stored[key] = {"models": models, "facts": [i.to_dict() for i in facts.values()], "fetchedAt": time.time()}
    write_json_atomic(path, stored, indent=None)
