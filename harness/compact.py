"""``Compact``: a model middleware that keeps the prompt within the context window with a checkpoint.

When the prompt would exceed ``Options.context_window`` less a buffer, the older part of the conversation
is summarised by the model (the same ``next``, a separate call with no tools), and the model is sent the
summary as a user message followed by the recent messages verbatim (opencode's compaction). The split
never separates an assistant's ``ToolCall`` from the user message holding its ``ToolResult``. The run's
messages are never touched: every prompt is rewritten from them again, through the checkpoints.

Checkpoints are kept per instance, the last 8 by default, each keyed by a content hash of the messages
it covers; one instance may serve many runs (the forks of a sub-agent template, concurrent ones too):
each finds the checkpoint of its own conversation, and two runs needing the same checkpoint at once
make it once. Token counts are estimated: the last assistant usage the provider reported plus ~4
characters a token for what came after it, never less than the character estimate of the whole prompt.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from ._errors import HarnessUsageError
from ._kinds import Role
from ._messages import Image, Message, Reasoning, Text, ToolCall, ToolResult
from ._options import Options
from ._prefix_hashes import PrefixHashes
from ._usage import Usage
from .middleware import NextModel, Prelude
from .model import Delta, Prompt, TextChunk, UsageChunk, close_stream

__all__ = ["Checkpoint", "Compact", "CompactListener", "Compacted"]

log = logging.getLogger(__name__)

SUMMARY_SYSTEM = (
    "You summarise a conversation between a user and an AI assistant that uses tools, so that the "
    "assistant can continue the work from your summary alone."
)

SUMMARY_INSTRUCTION = (
    "Write a detailed summary of the conversation above for continuing it. Include: what the user asked "
    "for, in their words where it matters (goals, constraints, preferences); what was done and found, "
    "with the files, commands, names and values that matter; decisions made and why; errors met and how "
    "they were resolved; the current state and what remains to be done. Write only the summary."
)

_IMAGE_TOKENS = 1500  # a typical image's cost; its base64 length says nothing about it
_MESSAGE_OVERHEAD = 4
_PART_CHARS = 10_000  # a tool result or input is cut to this much in what the summariser reads


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A summary of the first ``covered`` messages of a conversation, keyed by their content hash.

    ``made_at`` is how many messages the prompt had when it was made: usage reported before that was
    measured on a longer prompt and is not used for estimates after it.
    """

    key: str
    summary: str
    covered: int
    made_at: int
    usage: Usage = Usage()

    def message(self) -> Message:
        text = (
            "<summary>\nThe earlier part of this conversation was replaced by this summary of it:\n\n"
            f"{self.summary}\n</summary>"
        )
        return Message(Role.USER, (Text(text),), meta={"checkpoint": self.key})

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "summary": self.summary,
            "covered": self.covered,
            "madeAt": self.made_at,
            "usage": self.usage.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(
            str(data["key"]),
            str(data["summary"]),
            int(data["covered"]),
            int(data.get("madeAt", data["covered"])),
            Usage.from_dict(data.get("usage") or {}),
        )


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a listener hears: the new checkpoint, whether it was asked for, the estimates around it."""

    checkpoint: Checkpoint
    requested: bool
    tokens_before: int
    tokens_after: int


CompactListener = Callable[[Compacted], Awaitable[None] | None]


class Compact:
    """Keep each prompt within ``context_window - buffer`` tokens by summarising its older part.

    ``buffer`` defaults to ``Options.max_output_tokens``, else a quarter of the window up to 8192;
    ``keep`` is the token budget of the recent messages sent verbatim (default: a quarter of the
    limit). A prompt without ``context_window`` passes as is, unless compaction was asked for
    (``compact_now()``), for ``/compact``.
    """

    def __init__(
        self,
        *,
        buffer: int | None = None,
        keep: int | None = None,
        capacity: int = 8,
        chars_per_token: float = 4.0,
        instruction: str = SUMMARY_INSTRUCTION,
        on_compacted: CompactListener | None = None,
    ) -> None:
        if capacity < 1:
            raise HarnessUsageError("Compact needs capacity >= 1")
        if buffer is not None and buffer < 0:
            raise HarnessUsageError("Compact needs buffer >= 0")
        if keep is not None and keep < 0:
            raise HarnessUsageError("Compact needs keep >= 0")
        self.buffer = buffer
        self.keep = keep
        self.capacity = capacity
        self.chars_per_token = chars_per_token
        self.instruction = instruction
        self._listeners: list[CompactListener] = [on_compacted] if on_compacted is not None else []
        self._cache: OrderedDict[str, Checkpoint] = OrderedDict()
        self._making: dict[str, anyio.Event] = {}
        self._last: Checkpoint | None = None
        self._requested = False
        self._hashes = PrefixHashes()

    # -- public -----------------------------------------------------------------------------------

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        async def opening() -> AsyncIterator[Delta]:
            requested, self._requested = self._requested, False
            try:
                sent = await self._prepare(prompt, next, force=requested)
            except BaseException:
                self._requested = self._requested or requested  # not done: the next call tries again
                raise
            return next(sent)

        # Compacted (when due) before the first delta; the deltas then handed on with no frame each.
        return Prelude(opening)

    def compact_now(self) -> None:
        """Compact at the next model call whatever the prompt's size (``/compact``)."""
        self._requested = True

    async def compact(self, prompt: Prompt, next: NextModel) -> Checkpoint | None:
        """Compact ``prompt`` now; the checkpoint now covering it, or None when there is nothing older
        than the recent messages to summarise."""
        msgs = list(prompt.messages)
        hashes = self._hashes.of(msgs)
        cp = self._lookup(hashes)
        made = await self._compact(prompt, msgs, hashes, cp, next, requested=True)
        return made or cp

    def last(self) -> Checkpoint | None:
        """The latest checkpoint this instance made (shared by every run it serves)."""
        return self._last

    def checkpoints(self) -> list[Checkpoint]:
        """The kept checkpoints, oldest first (to persist them)."""
        return list(self._cache.values())

    def remember(self, checkpoint: Checkpoint) -> None:
        """Keep a checkpoint made earlier (restored from storage)."""
        self._store(checkpoint)

    def subscribe(self, listener: CompactListener) -> Callable[[], None]:
        """Call ``listener(Compacted)`` (sync or async) after every compaction; returns unsubscribe."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def estimate(self, prompt: Prompt) -> int:
        """The estimated tokens of ``prompt`` as this middleware would send it now."""
        msgs = list(prompt.messages)
        cp = self._lookup(self._hashes.of(msgs))
        return self._estimate(prompt, msgs, cp)

    # -- the work ---------------------------------------------------------------------------------

    async def _prepare(self, prompt: Prompt, next: NextModel, *, force: bool) -> Prompt:
        msgs = list(prompt.messages)
        hashes = self._hashes.of(msgs)
        cp = self._lookup(hashes)
        # Without a window only a requested compaction happens; its checkpoint applies from then on.
        within = prompt.options.context_window is None or (
            self._estimate(prompt, msgs, cp) <= self._limit(prompt.options)
        )
        if not force and within:
            return self._view(prompt, msgs, cp)
        made = await self._compact(prompt, msgs, hashes, cp, next, requested=force)
        return self._view(prompt, msgs, made or cp)

    async def _compact(
        self,
        prompt: Prompt,
        msgs: list[Message],
        hashes: list[str],
        cp: Checkpoint | None,
        next: NextModel,
        *,
        requested: bool,
    ) -> Checkpoint | None:
        start = cp.covered if cp is not None else 0
        split = self._split(msgs, start, self._keep(prompt, msgs, cp))
        if split is None:
            log.info("compaction: nothing older than the recent messages to summarise")
            return None
        key = hashes[split]
        while True:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
            making = self._making.get(key)
            if making is None:
                break
            # Another run (a concurrent fork) is making this very checkpoint: wait and share it; when
            # its maker failed or was cancelled, the loop finds no checkpoint and makes it here.
            await making.wait()
        done = anyio.Event()
        self._making[key] = done
        try:
            before = self._estimate(prompt, msgs, cp)
            summary, usage = await self._summarise(prompt, cp, msgs[start:split], next)
            if not summary.strip():
                log.warning("compaction: the model gave an empty summary; the prompt goes uncompacted")
                return None
            made = Checkpoint(key, summary.strip(), split, len(msgs), usage)
            self._store(made)
            self._last = made
        finally:
            del self._making[key]
            done.set()
        after = self._estimate(prompt, msgs, made)
        await self._notify(Compacted(made, requested, before, after))
        return made

    def _split(self, msgs: Sequence[Message], start: int, keep: int) -> int | None:
        """The first message to send verbatim: after ``start``, never a message of tool results (its
        calls are in the message before), leaving at least the last message, recent ones within ``keep``."""
        valid = [s for s in range(start + 1, len(msgs)) if not _has_results(msgs[s])]
        if not valid:
            return None
        best: int | None = None
        tail = 0.0
        allowed = set(valid)
        for s in range(len(msgs) - 1, start, -1):
            tail += self._tokens(msgs[s])
            if tail > keep:
                break
            if s in allowed:
                best = s
        return best if best is not None else valid[-1]

    async def _summarise(
        self, prompt: Prompt, cp: Checkpoint | None, older: Sequence[Message], next: NextModel
    ) -> tuple[str, Usage]:
        limit = self._limit(prompt.options)
        budget = max(
            2000, int((limit - len(self.instruction) / self.chars_per_token - 200) * self.chars_per_token)
        )
        piece = max(1000, budget // 2)
        blocks = [b[i : i + piece] for b in (_render(m) for m in older) if b for i in range(0, len(b), piece)]
        summary = cp.summary if cp is not None else None
        usage = Usage()
        i = 0
        # Fold: each chunk is summarised together with the summary so far, so an older part larger than
        # the window still gets summarised, chunk by chunk.
        while i < len(blocks) or summary is None:
            room = max(piece, budget - len(summary or ""))
            chunk: list[str] = []
            size = 0
            while i < len(blocks) and (not chunk or size + len(blocks[i]) <= room):
                chunk.append(blocks[i])
                size += len(blocks[i]) + 2
                i += 1
            text = ""
            if summary is not None:
                text += f"<previous-summary>\n{summary}\n</previous-summary>\n\n"
            text += "<conversation>\n" + "\n\n".join(chunk) + "\n</conversation>\n\n" + self.instruction
            summary, used = await self._ask(prompt, text, next)
            usage = usage + used
            if not summary.strip():
                return "", usage
        return summary, usage

    async def _ask(self, prompt: Prompt, text: str, next: NextModel) -> tuple[str, Usage]:
        ask = prompt.replace(system=SUMMARY_SYSTEM, messages=(Message.user(text),), tools=(), continue_=False)
        out: list[str] = []
        usage = UsageChunk()
        stream = next(ask)
        try:
            async for delta in stream:
                if isinstance(delta, TextChunk):
                    out.append(delta.text)
                elif isinstance(delta, UsageChunk):
                    usage = UsageChunk(
                        delta.input if delta.input is not None else usage.input,
                        delta.output if delta.output is not None else usage.output,
                        delta.cache_read if delta.cache_read is not None else usage.cache_read,
                        delta.cache_write if delta.cache_write is not None else usage.cache_write,
                    )
        finally:
            await close_stream(stream)
        total = Usage(usage.input or 0, usage.output or 0, usage.cache_read or 0, usage.cache_write or 0)
        return "".join(out), total

    # -- estimates and views ----------------------------------------------------------------------

    def _limit(self, options: Options) -> int:
        window = options.context_window
        if window is None:
            return 1 << 62
        buffer = self.buffer
        if buffer is None:
            buffer = options.max_output_tokens or min(window // 4, 8192)
        return max(1, window - buffer)

    def _keep(self, prompt: Prompt, msgs: Sequence[Message], cp: Checkpoint | None) -> int:
        if self.keep is not None:
            return self.keep
        if prompt.options.context_window is not None:
            return self._limit(prompt.options) // 4
        return self._estimate(prompt, msgs, cp) // 4

    def _view(self, prompt: Prompt, msgs: Sequence[Message], cp: Checkpoint | None) -> Prompt:
        if cp is None:
            return prompt
        return prompt.replace(messages=(cp.message(), *msgs[cp.covered :]))

    def _estimate(self, prompt: Prompt, msgs: Sequence[Message], cp: Checkpoint | None) -> int:
        start = cp.covered if cp is not None else 0
        fixed = len(prompt.system or "") + sum(len(json.dumps(t.to_dict())) for t in prompt.tools)
        chars = fixed / self.chars_per_token
        if cp is not None:
            chars += self._tokens(cp.message())
        by_chars = chars + sum(self._tokens(m) for m in msgs[start:])
        # The provider's own count of the prompt up to its last reply is better than a guess, when it
        # was measured on the prompt as it is sent now (after this checkpoint was made).
        floor = max(start, cp.made_at if cp is not None else 0)
        for j in range(len(msgs) - 1, floor - 1, -1):
            m = msgs[j]
            if m.role == Role.ASSISTANT and m.usage is not None and m.usage.prompt > 0:
                by_usage = m.usage.prompt + m.usage.output + sum(self._tokens(x) for x in msgs[j + 1 :])
                return int(max(by_chars, by_usage))
        return int(by_chars)

    def _tokens(self, m: Message) -> float:
        chars = 0
        images = 0
        for p in m.parts:
            if isinstance(p, Text | Reasoning):
                chars += len(p.text)
            elif isinstance(p, ToolCall):
                chars += len(p.name) + len(json.dumps(p.input, ensure_ascii=False))
            elif isinstance(p, ToolResult):
                for c in p.content:
                    if isinstance(c, Text):
                        chars += len(c.text)
                    else:
                        images += 1
            else:
                images += 1
        return chars / self.chars_per_token + images * _IMAGE_TOKENS + _MESSAGE_OVERHEAD

    # -- the cache ---------------------------------------------------------------------------------

    def _lookup(self, hashes: Sequence[str]) -> Checkpoint | None:
        """The checkpoint covering the longest prefix of the conversation (``hashes[i]`` is of
        ``messages[:i]``)."""
        for i in range(len(hashes) - 1, 0, -1):
            cp = self._cache.get(hashes[i])
            if cp is not None and cp.covered == i:
                self._cache.move_to_end(cp.key)
                return cp
        return None

    def _store(self, cp: Checkpoint) -> None:
        self._cache[cp.key] = cp
        self._cache.move_to_end(cp.key)
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)

    async def _notify(self, info: Compacted) -> None:
        for listener in tuple(self._listeners):
            try:
                out = listener(info)
                if inspect.isawaitable(out):
                    await out
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:
                log.exception("compaction listener %r failed", listener)


def _has_results(m: Message) -> bool:
    return any(isinstance(p, ToolResult) for p in m.parts)


def _cut(text: str) -> str:
    if len(text) <= _PART_CHARS:
        return text
    return text[:_PART_CHARS] + f"\n[... {len(text) - _PART_CHARS} more characters cut]"


def _render(m: Message) -> str:
    """A message as plain text for the summariser (no tool blocks: the summary call offers no tools)."""
    lines: list[str] = []
    for p in m.parts:
        if isinstance(p, Text):
            if p.text.strip():
                lines.append(_cut(p.text))
        elif isinstance(p, ToolCall):
            lines.append(f"[tool call {p.name} {_cut(json.dumps(p.input, ensure_ascii=False))}]")
        elif isinstance(p, ToolResult):
            images = sum(1 for c in p.content if isinstance(c, Image))
            label = "tool error" if p.error else "tool result"
            extra = f" ({images} image{'s' if images != 1 else ''})" if images else ""
            lines.append(f"[{label}{extra}]\n{_cut(p.text)}")
        elif isinstance(p, Image):
            lines.append("[image]")
    if not lines:
        return ""
    return f"{m.role.value.upper()}:\n" + "\n".join(lines)
