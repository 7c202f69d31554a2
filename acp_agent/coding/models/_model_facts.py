"""A model's facts (context window, output limit, reasoning, images) and where each came from.

In this order: the configuration (``[models."<name>"]``, the user's file and a trusted project's), what
the server's model list says (``harness.model_info``), then the built-in table of hosted model
families. Each fact is taken from the first source that says it, and its source is kept for ``doctor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from harness.model_info import ModelInfo

    from ...config import ModelDecl

__all__ = ["FACTS", "OLLAMA_DEFAULT_WINDOW", "ModelFacts", "builtin_window", "resolve_facts", "window_text"]

FACTS: Final = ("context_window", "max_output_tokens", "reasoning", "images")
SMALL_WINDOW: Final = 8192
"""At or under this many tokens a server's default window is too small for a coding agent."""
OLLAMA_DEFAULT_WINDOW: Final = 4096
"""The window assumed for an Ollama model with no ``num_ctx`` whose server does not say what it runs it
at (``/api/ps`` lists loaded models only, and only since 0.10): Ollama's smallest current default, the
one of a machine with under 24 GiB of VRAM (32k at 24-48 GiB, 256k above; ``OLLAMA_CONTEXT_LENGTH``
sets it). Assuming more would let a conversation outgrow the window, which Ollama cuts without an error."""
_ASSUMED: Final = "Ollama's default, assumed: the model has no num_ctx and /api/ps did not say"

# prefix of the model name (after any "vendor/"), window, output limit, reasoning, images
_BUILTIN: Final[tuple[tuple[str, int, int | None, bool | None, bool | None], ...]] = (
    ("claude-3-5", 200_000, 8192, False, True),
    ("claude-3-7", 200_000, 64_000, True, True),
    ("claude-sonnet-4", 200_000, 64_000, True, True),
    ("claude-opus-4", 200_000, 32_000, True, True),
    ("claude-haiku-4", 200_000, 64_000, True, True),
    ("claude", 200_000, None, None, True),
    ("gpt-4.1", 1_047_576, 32_768, False, True),
    ("gpt-5", 400_000, 128_000, True, True),
    ("gpt-4o", 128_000, 16_384, False, True),
    ("o3", 200_000, 100_000, True, True),
    ("o4", 200_000, 100_000, True, True),
)


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What is known of one model; ``sources`` names where each known fact came from."""

    name: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None
    images: bool | None = None
    sources: Mapping[str, str] = field(default_factory=dict[str, str])
    server: str | None = None
    """The server kind recognised from its model list (``harness.model_info.SERVERS``)."""
    trained_window: int | None = None
    default_window: bool = False
    """The server runs the model at its own default window (Ollama), which nothing declared: the window
    is then ``OLLAMA_DEFAULT_WINDOW``, assumed."""

    @property
    def declared_window(self) -> bool:
        return self.sources.get("context_window", "").startswith("configuration")

    @property
    def evicts_silently(self) -> bool:
        """The server is one that drops what does not fit without an error (Ollama), running this model
        at a small default window the user did not declare."""
        if self.server != "ollama" or self.declared_window:
            return False
        return self.default_window or (self.context_window or 0) <= SMALL_WINDOW


def _builtin(name: str) -> tuple[int, int | None, bool | None, bool | None] | None:
    base = name.lower().rsplit("/", 1)[-1]
    return next((row[1:] for row in _BUILTIN if base.startswith(row[0])), None)


def builtin_window(name: str | None) -> int | None:
    """The built-in table's window for a hosted model family; None when it is not one."""
    row = _builtin(name) if name else None
    return row[0] if row else None


def resolve_facts(name: str, declared: ModelDecl | None, served: ModelInfo | None) -> ModelFacts:
    """Each fact from the first source that says it: the configuration, the server, the built-in table."""
    row = _builtin(name)
    # (where the window came from, where the other facts came from, the facts in FACTS order)
    layers: list[tuple[str, str, tuple[int | bool | None, ...]]] = []
    if declared is not None:
        where = f"configuration ({declared.source})" if declared.source else "configuration"
        said = (declared.context_window, declared.max_output_tokens, declared.reasoning, declared.images)
        layers.append((where, where, said))
    if served is not None:
        from harness.model_info import SERVERS

        server = SERVERS.get(served.server or "", "the server")
        listed = f"{server}'s model list"
        said = (served.context_window, served.max_output_tokens, served.reasoning, served.images)
        layers.append((f"{server}: {served.source}" if served.source else listed, listed, said))
    if row is not None:
        layers.append(("built-in table", "built-in table", row))
    values: dict[str, int | bool | None] = {}
    sources: dict[str, str] = {}
    for i, fact in enumerate(FACTS):
        for window_where, where, said in layers:
            if said[i] is not None:
                values[fact] = said[i]
                sources[fact] = window_where if i == 0 else where
                break
    window = values.get("context_window")
    output = values.get("max_output_tokens")
    default = served is not None and served.default_window and window is None
    if default:
        window, sources["context_window"] = OLLAMA_DEFAULT_WINDOW, _ASSUMED
    return ModelFacts(
        name,
        window if isinstance(window, int) and not isinstance(window, bool) else None,
        output if isinstance(output, int) and not isinstance(output, bool) else None,
        values.get("reasoning") if isinstance(values.get("reasoning"), bool) else None,  # pyright: ignore[reportArgumentType]
        values.get("images") if isinstance(values.get("images"), bool) else None,  # pyright: ignore[reportArgumentType]
        sources,
        served.server if served is not None else None,
        served.trained_window if served is not None else None,
        default,
    )


def window_text(window: int) -> str:
    """``32k``, ``1M``: a window as a person reads it."""
    if window >= 1_000_000:
        return f"{round(window / 1_000_000, 1):g}M"
    if window >= 1000:
        return f"{round(window / 1000):g}k"
    return str(window)
