"""``TextToolCalls``: a model middleware that runs the tool calls a model wrote as text.

A server with no tool-call parser (llama.cpp without ``--jinja``, vLLM without ``--tool-call-parser``)
passes the model's call through as text; the turn would end with it shown to the user. This middleware
streams text as it comes until a text call may begin (a marker of ``_text_call_parse.MARKERS``, or a
reply opening with ``{``), holds the rest, and at the reply's end turns it into native calls when
``parse_text_calls`` finds calls to offered tools, tools were offered and the model made no native call;
otherwise the held text is sent as it was. The first reply with text calls is logged as a warning (later
ones at debug level); ``on_detected`` (once per instance, with the dialect) tells the user how to turn
the server's parser on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable

from ._kinds import FinishReason
from ._text_call_parse import MARKERS, in_fence, parse_text_calls
from .middleware import NextModel
from .model import Delta, Finish, Prompt, TextChunk, ToolReady, ToolStart

__all__ = ["SERVER_PARSER_HINT", "TextToolCalls"]

log = logging.getLogger("harness.run")

SERVER_PARSER_HINT = (
    "The model server is not parsing tool calls: the model wrote its calls as text ({dialect}), and the "
    "agent ran them. Turn the server's parser on for reliable calls: llama.cpp `llama-server --jinja`; "
    "vLLM `--enable-auto-tool-choice --tool-call-parser <hermes|mistral|llama3_json|deepseek_v3|...>`; "
    "Ollama uses the model's template (pull a model tagged for tools)."
)


def _held_from(text: str) -> int:
    """Where text that may start a text call begins in ``text`` (``len(text)``: none may)."""
    first = len(text)
    for marker in MARKERS:
        at = text.find(marker)
        if at >= 0:
            first = min(first, at)
            continue
        # A marker's beginning at the very end may be completed by the next chunk.
        for k in range(min(len(marker) - 1, len(text)), 0, -1):
            if text.endswith(marker[:k]):
                first = min(first, len(text) - k)
                break
    return first


class TextToolCalls:
    """See the module docstring."""

    def __init__(self, on_detected: Callable[[str], Awaitable[None]] | None = None) -> None:
        self._on_detected = on_detected
        self._told = False

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if not prompt.tools:
            return next(prompt)
        return self._stream(prompt, next)

    async def _stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        offered = [t.name for t in prompt.tools]
        native = holding = False
        sent: list[str] = []  # the text passed on
        held = ""  # from a marker (or a reply's opening brace) on: may be a call
        finish: Finish | None = None
        async for delta in next(prompt):
            # The hot path, before the match (a class pattern costs more than this whole test): text
            # in which no marker can begin, after text already passed on.
            if type(delta) is TextChunk and sent and not (native or holding or held):
                text = delta.text
                if "<" not in text and "[" not in text:
                    sent.append(text)
                    yield delta
                    continue
            match delta:
                case TextChunk(text=text) if not native:
                    if holding:
                        held += text
                        continue
                    if sent and not held and "<" not in text and "[" not in text:
                        sent.append(text)  # the hot path: no marker can begin in this chunk
                        yield delta
                        continue
                    pending = held + text
                    if not sent and not pending.strip():
                        held = pending
                        continue
                    if not sent and pending.lstrip().startswith("{"):
                        held, holding = pending, True  # Llama's call is the whole reply
                        continue
                    cut = _held_from(pending)
                    whole = any(pending.startswith(m, cut) for m in MARKERS)
                    if whole and in_fence("".join(sent) + pending, cut + sum(map(len, sent))):
                        cut, whole = len(pending), False  # an example being explained, not a call
                    out, held, holding = pending[:cut], pending[cut:], whole
                    if out:
                        sent.append(out)
                        yield TextChunk(out)
                case ToolStart():
                    native = True
                    if held:
                        sent.append(held)
                        yield TextChunk(held)
                        held, holding = "", False
                    yield delta
                case Finish():
                    finish = delta
                case _:
                    yield delta
        async for d in self._settle(held if holding else "", native, finish, offered, held):
            yield d

    async def _settle(
        self, candidate: str, native: bool, finish: Finish | None, offered: list[str], held: str
    ) -> AsyncIterator[Delta]:
        """The held text as calls (and its prose), or as the text it was; then the reply's finish.

        A reply cut at its output limit is not run: its last call may be cut short."""
        cut = finish is not None and finish.reason is FinishReason.LENGTH
        found = None if native or cut or not candidate else parse_text_calls(candidate, offered)
        if found is None:
            if held:
                yield TextChunk(held)
            if finish is not None:
                yield finish
            return
        # Logged once (a warning, with the fix) and then at debug level: every reply of such a server has it.
        log.log(
            logging.DEBUG if self._told else logging.WARNING,
            "the model wrote %d tool call(s) as text (%s): the server is not parsing tool calls; "
            "llama.cpp: --jinja, vLLM: --enable-auto-tool-choice --tool-call-parser",
            len(found.calls),
            found.dialect,
        )
        if not self._told:
            self._told = True
            if self._on_detected is not None:
                await self._on_detected(found.dialect)
        if found.prose:
            yield TextChunk(found.prose)
        for name, args in found.calls:
            call_id = "call_" + os.urandom(6).hex()
            yield ToolStart(call_id, name)
            yield ToolReady(call_id, args)
        yield Finish(FinishReason.TOOL_CALLS)
