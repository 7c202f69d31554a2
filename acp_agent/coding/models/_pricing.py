"""A model's price, and what a request cost at it.

In this order: the user's ``[models."<name>"]`` table (``input_price``, ``output_price``,
``cache_read_price``, ``cache_write_price``, USD per million tokens), the server's model list (OpenRouter's
``pricing``, LiteLLM's ``model_info`` costs: ``harness.model_info.ModelInfo.prices``), then a built-in
table of the main hosted models. An unknown price is None: no cost is sent (never a guess, never 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from harness import Usage
    from harness.model_info import ModelInfo

    from ...config import ModelDecl

__all__ = ["BUILTIN_DATE", "BUILTIN_SOURCE", "Price", "builtin_price", "price_for"]

BUILTIN_DATE: Final = "2025-11-20"
BUILTIN_SOURCE: Final = "https://www.anthropic.com/pricing, https://openai.com/api/pricing"

# Prefix of the model name (after any "vendor/"), most specific first: input, output, cache read,
# cache write (5-minute; Anthropic's 1-hour write is 2x input), USD per million tokens, as of BUILTIN_DATE.
_BUILTIN: Final[tuple[tuple[str, float, float, float, float], ...]] = (
    ("claude-opus-4-5", 5.0, 25.0, 0.50, 6.25),
    ("claude-opus-4", 15.0, 75.0, 1.50, 18.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.30, 3.75),
    ("claude-haiku-4", 1.0, 5.0, 0.10, 1.25),
    ("claude-3-5-haiku", 0.80, 4.0, 0.08, 1.0),
    ("gpt-5-nano", 0.05, 0.40, 0.005, 0.05),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.25),
    ("gpt-5", 1.25, 10.0, 0.125, 1.25),
    ("gpt-4.1-nano", 0.10, 0.40, 0.025, 0.10),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.40),
    ("gpt-4.1", 2.0, 8.0, 0.50, 2.0),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.15),
    ("gpt-4o", 2.50, 10.0, 1.25, 2.50),
    ("o4-mini", 1.10, 4.40, 0.275, 1.10),
    ("o3", 2.0, 8.0, 0.50, 2.0),
)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens; ``source`` says where it came from."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    source: str

    def cost(self, usage: Usage) -> float:
        """USD for ``usage`` (``input`` is the uncached part, as ``harness.Usage`` counts it)."""
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_read * self.cache_read
            + usage.cache_write * self.cache_write
        ) / 1_000_000


def builtin_price(name: str, cache_ttl: str | None = "5m") -> Price | None:
    base = name.lower().rsplit("/", 1)[-1]
    row = next((r for r in _BUILTIN if base.startswith(r[0])), None)
    if row is None:
        return None
    write = row[4]
    if cache_ttl == "1h" and base.startswith("claude"):
        write = 2 * row[1]
    return Price(row[1], row[2], row[3], write, f"built-in table ({BUILTIN_DATE})")


def _complete(
    said: tuple[float | None, float | None, float | None, float | None], where: str
) -> Price | None:
    """A price from four figures, of which input and output are needed (cache prices default to them)."""
    inp, out, read, write = said
    if inp is None or out is None:
        return None
    return Price(inp, out, inp if read is None else read, inp if write is None else write, where)


def price_for(
    name: str, declared: ModelDecl | None, served: ModelInfo | None, cache_ttl: str | None = "5m"
) -> Price | None:
    """The first source that gives an input and an output price (see the module docstring)."""
    if declared is not None:
        found = _complete(
            declared.prices, f"configuration ({declared.source})" if declared.source else "configuration"
        )
        if found is not None:
            return found
    if served is not None and served.prices is not None:
        found = _complete(served.prices, "the server's model list")
        if found is not None:
            return found
    return builtin_price(name, cache_ttl)
