"""What a server says of one of its models (``ModelInfo``), and the server kinds recognised.

Kept apart from ``harness.providers`` (which loads the HTTP client): an application reads cached facts
when a session opens, before any request is made. ``harness.providers.model_info`` fills them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

__all__ = ["SERVERS", "ModelInfo", "positive"]

SERVERS: Final = {
    "vllm": "vLLM",
    "llama.cpp": "llama.cpp",
    "ollama": "Ollama",
    "openrouter": "OpenRouter",
    "litellm": "LiteLLM",
    "anthropic": "Anthropic",
}
"""Server kinds this module recognises, with the names shown to a person."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One served model and what the server says of it (None: it does not say)."""

    id: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None
    images: bool | None = None
    source: str = ""
    """Where the window came from, for a person (``vLLM max_model_len``)."""
    server: str | None = None
    """The server kind recognised (a ``SERVERS`` key), None when not recognised."""
    trained_window: int | None = None
    """What the model supports, where the server runs it at less (llama.cpp, Ollama)."""
    default_window: bool = False
    """The server runs the model at its default window, set for no model (Ollama): it may be small, and
    what does not fit is dropped without an error."""
    prices: tuple[float | None, float | None, float | None, float | None] | None = None
    """USD per million tokens: input, output, cache read, cache write (OpenRouter's ``pricing``,
    LiteLLM's ``model_info`` costs); None where the server gives none."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, False, "")}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo | None:
        """A cached entry read back (None when it is not one)."""
        ident = data.get("id")
        if not isinstance(ident, str):
            return None

        def flag(key: str) -> bool | None:
            value = data.get(key)
            return value if isinstance(value, bool) else None

        server = data.get("server")
        raw: Any = data.get("prices")
        prices = (
            tuple(usd(v) for v in raw) if isinstance(raw, list | tuple) and len(raw) == 4 else None  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        )
        return cls(
            ident,
            positive(data.get("context_window")),
            positive(data.get("max_output_tokens")),
            flag("reasoning"),
            flag("images"),
            str(data.get("source") or ""),
            server if isinstance(server, str) else None,
            positive(data.get("trained_window")),
            data.get("default_window") is True,
            prices,  # pyright: ignore[reportArgumentType]
        )


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usd(value: Any) -> float | None:
    """A non-negative price (a number, or a number in a string as OpenRouter sends them), else None."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e6:
        return float(value)
    return None


def per_token_prices(*values: Any) -> tuple[float | None, float | None, float | None, float | None] | None:
    """Four prices per token (input, output, cache read, cache write) as USD per million; None without
    an input and an output price."""
    m = [usd(v) for v in values]
    if m[0] is None or m[1] is None:
        return None
    p = [None if v is None else round(v * 1_000_000, 6) for v in m]
    return (p[0], p[1], p[2], p[3])


def positive(value: Any) -> int | None:
    n = _count(value)
    return n if n is not None and n > 0 else None
