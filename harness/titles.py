"""A conversation's title, written by a model: one short side request, off any turn.

``ask_title(model, user, reply)`` sends ``TITLE_SYSTEM`` with an excerpt of one exchange and no tools, and
returns the first line of the answer cleaned (no quotes, markdown or final full stop, cut short), or None
when the request failed, timed out or answered nothing usable: a title is a nicety, the caller keeps the
one it has. The request is recognisable by its system text (``harness.testing.FakeModel`` answers it apart
from the scripted replies).
"""

from __future__ import annotations

import logging
import re
from typing import Final

import anyio

from ._messages import Message
from .model import Model, Prompt, TextChunk

__all__ = ["TITLE_SYSTEM", "ask_title", "clean_title", "title_prompt"]

log = logging.getLogger(__name__)

TITLE_SYSTEM: Final = (
    "Write a short title for the conversation below, of at most six words, in the language of the user's "
    "message. Answer with the title only: no quotes, no markdown, no punctuation at its end."
)
MAX_TITLE: Final = 80
_EXCERPT: Final = 2000
_TIMEOUT_S: Final = 30.0


def title_prompt(user: str, reply: str) -> Prompt:
    """The title request for the exchange ``user`` -> ``reply`` (each cut to an excerpt)."""
    conversation = f"User: {user[:_EXCERPT]}\n\nAssistant: {reply[:_EXCERPT]}"
    return Prompt(system=TITLE_SYSTEM, messages=(Message.user(conversation),), tools=())


async def ask_title(model: Model, user: str, reply: str, *, timeout: float = _TIMEOUT_S) -> str | None:
    """The model's title for an exchange, or None (it failed, timed out, or answered nothing usable)."""
    out: list[str] = []
    try:
        with anyio.fail_after(timeout):
            stream = model.stream(title_prompt(user, reply))
            try:
                async for delta in stream:
                    if isinstance(delta, TextChunk):
                        out.append(delta.text)
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:  # a title is a nicety: the caller goes on with the one it has
        log.info("writing a title failed: %s", exc)
        return None
    return clean_title("".join(out))


def clean_title(text: str) -> str | None:
    """The first line of a model's answer, without quotes, markdown or a final full stop, cut short."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip(), flags=re.IGNORECASE)
    line = line.strip(" \t#*`_\"'\u201c\u201d\u2018\u2019").rstrip(".")
    line = " ".join(line.split())
    if not line:
        return None
    return line if len(line) <= MAX_TITLE else line[: MAX_TITLE - 1].rstrip() + "…"
