"""Model set-up: which ``harness.Model`` the agent talks to (``ModelSettings``, from the resolved
``Config``), and the ``script`` provider's model.

Provider ``script`` replays the JSON file named by ``ACP_AGENT_SCRIPT``: a list of replies, one per model
call in order, each ``{"text", "reasoning", "tool_calls": [{"name", "input"}], "finish", "chunks",
"delay_ms", "error": {"kind", "message"}, "usage": {"input", "output", ...}}`` (all keys optional). The HTTP providers
(``harness.providers.registry``: ``openai``, ``openai-responses``, ``anthropic``…) come from
``harness.providers.factory.build_model``, imported only when a model is built so start-up stays light.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from harness import Model
    from harness.model import Delta, Prompt
    from harness.testing import Reply

    from .config import Config

__all__ = [
    "URL_HINT",
    "ModelConfigError",
    "ModelSettings",
    "ScriptModel",
    "build_model",
    "how_to_configure",
    "load_script",
]

URL_HINT: Final = "--base-url, ACP_AGENT_BASE_URL or base_url in config.toml"
"""How a user sets the model endpoint, for the providers' error messages."""


class ModelConfigError(Exception):
    """The model is not configured, or configured wrongly; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """What building a model needs: the provider, the model name, the endpoint and key, or the script."""

    provider: str | None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    script: Path | None = None
    small_model: str | None = None
    """The configured ``small_model`` (side work), for the ``small`` provider of ``providers/*``."""

    @classmethod
    def from_config(cls, config: Config, model: str | None = None) -> ModelSettings:
        """The model part of the resolved configuration (``model`` overrides its model name)."""
        return cls(
            config.provider,
            model or config.model,
            config.base_url,
            config.api_key,
            config.script,
            config.small_model,
        )

    @property
    def configured(self) -> bool:
        """Whether a prompt can run without further set-up (no auth step needed)."""
        if self.provider == "script":
            return self.script is not None
        return self.http and (self.api_key is not None or self.base_url is not None)

    @property
    def http(self) -> bool:
        """Whether the provider is one of the registry's (reached over HTTP, its models listed)."""
        from harness.providers import registry  # (the session layer loads no harness module at import)

        return registry.get(self.provider) is not None


def how_to_configure() -> str:
    from harness.providers import registry

    return (
        "no model is configured: run `acp-harness-agent setup` to choose one, or set ACP_AGENT_PROVIDER "
        f"({', '.join(registry.names())} or script), "
        f"ACP_AGENT_MODEL, and ACP_AGENT_API_KEY (or {' / '.join(registry.key_variables())}); for a local "
        "OpenAI-compatible server set ACP_AGENT_BASE_URL, e.g. http://127.0.0.1:8080/v1 (or put provider, "
        "model and base_url in ~/.config/acp-agent/config.toml)"
    )


def build_model(settings: ModelSettings) -> Model:
    """The configured model. Raises ``ModelConfigError`` with a message a person can act on."""
    if settings.provider is None:
        raise ModelConfigError(how_to_configure())
    if settings.provider == "script":
        if settings.script is None:
            raise ModelConfigError(
                "provider 'script' needs ACP_AGENT_SCRIPT, the path of a JSON list of replies"
            )
        return ScriptModel(load_script(settings.script))
    if settings.http:
        if not settings.model:
            raise ModelConfigError(
                f"provider {settings.provider!r} needs a model name: set ACP_AGENT_MODEL (--model)"
            )
        from harness.providers.factory import build_model as build_http_model  # heavy: httpx2

        return build_http_model(
            settings.provider,
            model=settings.model,
            base_url=settings.base_url,
            api_key=settings.api_key,
            url_hint=URL_HINT,
        )
    from harness.providers import registry

    raise ModelConfigError(
        f"unknown provider {settings.provider!r}; use one of: {', '.join((*registry.names(), 'script'))}"
    )


# --- the script provider --------------------------------------------------------------------------


def load_script(path: Path) -> list[Reply]:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelConfigError(f"cannot read the script {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise ModelConfigError(f"the script {path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise ModelConfigError(f"the script {path} must hold a JSON list of replies")
    items: list[Any] = raw  # pyright: ignore[reportUnknownVariableType]
    return [reply_from_dict(item, i) for i, item in enumerate(items)]


def reply_from_dict(data: Any, index: int = 0) -> Reply:
    """One scripted reply as a ``harness.testing.Reply``."""
    from harness import ErrorKind, FinishReason, ModelError
    from harness.testing import Reply

    if not isinstance(data, dict):
        raise ModelConfigError(f"script reply {index} must be an object")
    d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    # Unique call ids: a session reloaded in a new process must not reuse an id of its history.
    calls: list[tuple[str, Mapping[str, Any], str]] = []
    raw_calls: list[Any] = list(d.get("tool_calls") or [])
    for raw_call in raw_calls:
        c: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(c.get("name"), str):
            raise ModelConfigError(f"script reply {index}: each tool call needs a name")
        calls.append((str(c["name"]), dict(c.get("input") or {}), f"call_{uuid.uuid4().hex[:16]}"))
    error: ModelError | None = None
    if d.get("error") is not None:
        raw_error: Any = d["error"]
        e: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {"message": str(raw_error)}  # pyright: ignore[reportUnknownVariableType]
        try:
            kind = ErrorKind(str(e.get("kind", "model_error")))
        except ValueError as exc:
            raise ModelConfigError(f"script reply {index}: unknown error kind {e.get('kind')!r}") from exc
        error = ModelError(str(e.get("message", f"scripted {kind.value}")), kind)
    finish = d.get("finish")
    usage = None
    if isinstance(d.get("usage"), dict):
        from harness import Usage

        u: dict[str, Any] = d["usage"]
        usage = Usage(
            int(u.get("input", 0)),
            int(u.get("output", 0)),
            int(u.get("cache_read", 0)),
            int(u.get("cache_write", 0)),
        )
    return Reply(
        text=d.get("text"),
        reasoning=d.get("reasoning"),
        tool_calls=calls,
        finish=FinishReason(str(finish)) if finish is not None else None,
        error=error,
        usage=usage,
        chunks=max(1, int(d.get("chunks") or 1)),
        delay_s=max(0.0, float(d.get("delay_ms") or 0) / 1000.0),
    )


class ScriptModel:
    """Replays scripted replies in order; after the last one every call fails with a model error."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        from harness.testing import FakeModel

        self._fake = FakeModel(list(replies))
        self._count = len(replies)

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        if self._fake.calls >= self._count:
            return self._exhausted()
        return self._fake.stream(prompt)

    async def _exhausted(self) -> AsyncIterator[Delta]:
        from harness import ModelError

        raise ModelError(f"the script has no reply left (it holds {self._count})")
        yield  # pragma: no cover - makes this an async generator
