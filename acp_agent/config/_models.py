"""Declared model facts: ``[models."<name>"]`` tables (strict: unknown keys are problems).

A user on a local server or a gateway says what the server's list does not (or says it wrong)::

    [models."qwen3-coder"]
    context_window = 32768
    max_output_tokens = 8192
    reasoning = false
    images = false

What is declared wins over what the server's model list says, which wins over the built-in table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._checks import At, listed

__all__ = ["MODEL_KEYS", "ModelDecl", "check_models"]

FACT_KEYS: Final = ("context_window", "max_output_tokens", "reasoning", "images")
PRICE_KEYS: Final = ("input_price", "output_price", "cache_read_price", "cache_write_price")
"""USD per million tokens: input (uncached), output, cache reads, cache writes."""
MODEL_KEYS: Final = (*FACT_KEYS, *PRICE_KEYS)
_MAX_PRICE: Final = 10_000.0
_MAX_TOKENS: Final = 100_000_000


@dataclass(frozen=True, slots=True)
class ModelDecl:
    """What the configuration says of one model (None: not said)."""

    name: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None
    images: bool | None = None
    source: str = ""
    prices: tuple[float | None, float | None, float | None, float | None] = (None, None, None, None)
    """``PRICE_KEYS`` in order (None: not said)."""

    def fingerprint(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("name", *FACT_KEYS)} | dict(
            zip(PRICE_KEYS, self.prices, strict=True)
        )

    def describe(self) -> str:
        said = [f"{k} = {getattr(self, k)}" for k in FACT_KEYS if getattr(self, k) is not None]
        said += [f"{k} = {v:g}" for k, v in zip(PRICE_KEYS, self.prices, strict=True) if v is not None]
        return f"declares model {self.name}: {', '.join(said) or 'nothing'}"


def _tokens(value: Any, at: At) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_TOKENS:
        at.bad(f"must be a whole number of tokens, 1 to {_MAX_TOKENS:,} (e.g. 32768).")
        return None
    return value


def _flag(value: Any, at: At) -> bool | None:
    if not isinstance(value, bool):
        at.bad("must be true or false.")
        return None
    return value


def _price(value: Any, at: At) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= _MAX_PRICE:
        at.bad(f"must be a price in USD per million tokens, 0 to {_MAX_PRICE:g} (e.g. 3.0).")
        return None
    return float(value)


def _entry(name: str, raw: Any, at: At) -> ModelDecl | None:
    if not isinstance(raw, Mapping):
        at.bad(f'must be a table, e.g. [models."{name}"] with context_window = 32768.')
        return None
    entry: Mapping[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    for key in entry:
        if key not in MODEL_KEYS:
            at.sub(key).bad(f"unknown key for a model; allowed keys: {listed(MODEL_KEYS)}.")
    window = _tokens(entry["context_window"], at.sub("context_window")) if "context_window" in entry else None
    output = (
        _tokens(entry["max_output_tokens"], at.sub("max_output_tokens"))
        if "max_output_tokens" in entry
        else None
    )
    if window is not None and output is not None and output >= window:
        at.sub("max_output_tokens").bad(f"must be less than context_window ({window}).")
        output = None
    reasoning = _flag(entry["reasoning"], at.sub("reasoning")) if "reasoning" in entry else None
    images = _flag(entry["images"], at.sub("images")) if "images" in entry else None
    p = [_price(entry[k], at.sub(k)) if k in entry else None for k in PRICE_KEYS]
    prices = (p[0], p[1], p[2], p[3])
    return ModelDecl(name, window, output, reasoning, images, source=at.source, prices=prices)


def check_models(value: Any, at: At) -> dict[str, ModelDecl] | None:
    """``[models."<name>"]`` tables of a ``config.toml``, by model name."""
    if not isinstance(value, Mapping):
        at.bad('must hold one table per model, e.g. [models."qwen3-coder"] with context_window = 32768.')
        return None
    models: dict[str, ModelDecl] = {}
    for name, raw in value.items():  # pyright: ignore[reportUnknownVariableType]
        decl = _entry(str(name), raw, at.sub(str(name)))  # pyright: ignore[reportUnknownArgumentType]
        if decl is not None:
            models[decl.name] = decl
    return models
