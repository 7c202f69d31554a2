"""What changes between turns reaches the model as part of the history, never as an edit of what it was
sent before: so every request of a session extends the one before it, and the providers' prompt caches
(Anthropic's breakpoints, OpenAI's, vLLM's and llama.cpp's prefix caches) serve the whole history again.

The system prompt is frozen at a session's first turn (in this process): the base prompt, the
instructions, the skills list and the session-start hooks' notes as they were then. Each turn starts by
making the *sections* anew (the environment block, those three, and the plan-mode note) and comparing each
with what the model was last told of it: the latest version of it in the history (``Message.meta
[CONTEXT_META]`` of the prompts that carried one), else the frozen system prompt. The sections that differ
(all of the environment at the first turn) go in front of the turn's prompt, as one text part marked in
its meta, so they are kept in the transcript and every later request (and a ``session/load``) re-sends
them byte for byte.

After a compaction the messages that carried them are summarised away: ``reattached`` gives the latest
version of each section among the summarised messages, which the coding compaction appends to the
summary message (deterministically: it depends on the checkpoint alone).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from harness import Message, Text
from harness.tools.plan import Reminder

if TYPE_CHECKING:
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

from ...session.plugin import CONTEXT_PARTS_META

__all__ = [
    "CONTEXT_META",
    "SECTIONS",
    "ContextAfterCompaction",
    "TurnReminder",
    "changed_sections",
    "context_text",
    "known_sections",
    "reattached",
    "with_context",
]

CONTEXT_META: Final = "context"
"""``Message.meta`` key: ``{section: text}`` of the sections a prompt brought to the model."""
SECTIONS: Final = ("environment", "instructions", "skills", "notes", "mode")
_TITLES: Final = {
    "environment": "Environment",
    "instructions": "Instructions",
    "skills": "Skills",
    "notes": "Notes from the session-start hooks",
    "mode": "Mode",
}
_OPEN: Final = (
    "<context>\nNot the user's words: the session's environment and instructions, as they are now (each "
    "section replaces what an earlier one of the same name said).\n\n"
)
_CLOSE: Final = "\n</context>\n\n"  # the user's words follow in the same message


def known_sections(history: Sequence[Message], frozen: Mapping[str, str]) -> dict[str, str]:
    """What the model was last told of each section: the latest in ``history``, else ``frozen`` (the
    system prompt's)."""
    known = dict(frozen)
    for m in history:
        said: Any = m.meta.get(CONTEXT_META)
        if isinstance(said, dict):
            for name, text in said.items():  # pyright: ignore[reportUnknownVariableType]
                if isinstance(name, str) and isinstance(text, str):
                    known[name] = text
    return known


def changed_sections(current: Mapping[str, str], known: Mapping[str, str]) -> dict[str, str]:
    """The sections whose text differs from what the model knows (a new empty one is no news)."""
    return {
        name: current.get(name, "")
        for name in SECTIONS
        if current.get(name, "") != known.get(name, "") and (current.get(name) or name in known)
    }


def context_text(sections: Mapping[str, str]) -> str:
    """The text part that tells ``sections`` (an emptied one says so)."""
    parts: list[str] = []
    for name in SECTIONS:
        if name not in sections:
            continue
        text = sections[name].strip()
        if not text and name == "mode":
            text = "# Mode\n\nYou are no longer in plan mode: edit files and run commands as the mode allows."
        elif not text:
            text = (
                f"# {_TITLES[name]}\n\n(None now: what was said under this heading before no longer applies.)"
            )
        elif name == "mode":
            text = f"# {_TITLES[name]}\n\n{text}"
        parts.append(text)
    return _OPEN + "\n\n".join(parts) + _CLOSE


def with_context(message: Message, sections: Mapping[str, str]) -> Message:
    """``message`` with ``sections`` told in front of it, kept in its meta."""
    if not sections:
        return message
    meta = {**message.meta, CONTEXT_META: dict(sections), CONTEXT_PARTS_META: 1}
    return Message(message.role, (Text(context_text(sections)), *message.parts), meta=meta)


def reattached(summarised: Sequence[Message]) -> str | None:
    """The latest version of each section told in ``summarised`` (messages a checkpoint covers), as the
    text to append to its summary; None when they told none."""
    latest = known_sections(summarised, {})
    latest = {k: v for k, v in latest.items() if v}
    return context_text(latest) if latest else None


def _without_context(message: Message) -> Message:
    skip = message.meta.get(CONTEXT_PARTS_META)
    if not isinstance(skip, int) or isinstance(skip, bool) or not skip:
        return message
    return replace(message, parts=message.parts[skip:])


class TurnReminder(Reminder):
    """``Reminder`` only while there is a plan (the goal alone repeats the prompt the request just sent,
    in every request), its goal the user's words, not the context told in front of them. It rides on one
    request (the next drops it): the providers put no cache breakpoint on it (``harness.providers._cache``)."""

    def text(self, messages: Sequence[Message]) -> str | None:
        if self.plan is None or not self.plan.items:
            return None
        return super().text([_without_context(m) for m in messages])


class ContextAfterCompaction:
    """Model middleware, just inside the compaction: a prompt that starts with a checkpoint's summary gets
    the sections the summarised messages told (``reattached``) appended to it. ``history``: the session's
    messages; ``covered(key)``: how many of them the checkpoint ``key`` summarises (None: unknown)."""

    def __init__(
        self, history: Callable[[], Sequence[Message]], covered: Callable[[str], int | None]
    ) -> None:
        self._history = history
        self._covered = covered

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        msgs = prompt.messages
        key: Any = msgs[0].meta.get("checkpoint") if msgs else None
        covered = self._covered(key) if isinstance(key, str) else None
        if covered is None:
            return next(prompt)
        text = reattached(self._history()[:covered])
        if text is None:
            return next(prompt)
        first = msgs[0]
        first = replace(first, parts=(*first.parts, Text("\n\n" + text)))
        return next(prompt.replace(messages=(first, *msgs[1:])))
