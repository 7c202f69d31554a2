"""The hooks at work: around each tool call (``PreToolHooks`` outside the mode's policy, ``PostToolHooks``
inside it), on each prompt, at the session's first prompt and when a reply would end the turn (``StopHooks``,
which can make it go on). What each
outcome does is in ``_hooks``'s docstring."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from harness import Message, Result, Role, Text
from harness.model import FinishReason

from ...meta_keys import HOOK_SHOWN_META
from ._hooks import HookOutcome, Hooks, blocked_text, context_text, label

if TYPE_CHECKING:
    from harness import Call, ToolCall
    from harness.middleware import NextTool, TurnEnding

__all__ = [
    "MAX_CONTINUATIONS",
    "PostToolHooks",
    "PreToolHooks",
    "PromptVerdict",
    "StopHooks",
    "prompt_hooks",
    "session_start_hooks",
]

_OUTPUT_LIMIT: Final = 64 * 1024
MAX_CONTINUATIONS: Final = 8
"""How many times in a row the stop hooks may keep one turn going (Claude Code's default cap too)."""


@dataclass(frozen=True, slots=True)
class _Verdict:
    deny: str | None = None
    ask: str | None = None
    notes: tuple[str, ...] = ()
    halt: str | None = None
    """The label of the hook that said ``"continue": false``: the call is not run, the turn ends."""


def _halting(outcomes: list[HookOutcome]) -> HookOutcome | None:
    """The first outcome that said ``"continue": false``, if one did."""
    return next((o for o in outcomes if o.halt is not None), None)


async def _show_halt(hooks: Hooks, outcome: HookOutcome) -> None:
    """A hook's ``"continue": false``: its ``stopReason`` goes to the user (never to the model)."""
    await hooks.show(f"Hook {outcome.entry.event}: {label(outcome.entry)}", f"The turn ends: {outcome.halt}")


class PreToolHooks:
    """Tool middleware, outside the mode's policy: runs the ``pre_tool_use`` hooks once per call. A block
    fails the call with the hook's reason; ``ask`` puts a question to the user (the gate outside answers
    it, and the same answer serves the policy's own question); context goes with the call's result."""

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks
        self._verdicts: dict[str, _Verdict] = {}

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        if not self._hooks.has("pre_tool_use"):
            return await next(call, context)
        verdict = self._verdicts.get(call.id)
        if verdict is None:
            verdict = await self._judge(call)
            if len(self._verdicts) > 256:  # calls whose question was never answered (a cancelled turn)
                self._verdicts.clear()
            self._verdicts[call.id] = verdict
        try:
            if verdict.halt is not None:
                text = f"Not run: hook `{verdict.halt}` ended the turn before this call."
                return replace(Result.failure(text, meta={"hook": "halt"}), ends_turn=True)
            if verdict.deny is not None:
                return Result.failure(verdict.deny, meta={"hook": "deny"})
            asked = None if verdict.ask is None else context.ask_or_deny(verdict.ask, {"hook": "declined"})
            if asked is not None:
                return asked
            result = await next(call, context)
            if verdict.notes and context.pending() is None:
                result = replace(
                    result, content=(*result.content, *(Text("\n\n" + n) for n in verdict.notes))
                )
            return result
        finally:
            if context.pending() is None:
                self._verdicts.pop(call.id, None)

    async def _judge(self, call: ToolCall) -> _Verdict:
        facts = {"tool": call.name, "input": dict(call.input), "tool_call_id": call.id}
        outcomes = await self._hooks.run("pre_tool_use", facts, call.name)
        notes = tuple(context_text(o) for o in outcomes if o.context)
        halt = _halting(outcomes)
        if halt is not None:
            await _show_halt(self._hooks, halt)
            return _Verdict(halt=label(halt.entry))
        for o in outcomes:
            if o.blocked is not None:
                return _Verdict(deny=blocked_text(o), notes=notes)
        asks = [o for o in outcomes if o.ask is not None]
        if asks:
            reason = "; ".join(f"hook `{label(o.entry)}` asks: {o.ask}" for o in asks)
            await self._hooks.show(f"Hook asks before {call.name}", reason)
            return _Verdict(ask=reason, notes=notes)
        return _Verdict(notes=notes)


class PostToolHooks:
    """Tool middleware, inside the mode's policy (so only calls that really ran): the ``post_tool_use``
    hooks see the call and its output; their context, or the stderr of an exit 2, is added to the result."""

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        result = await next(call, context)
        if context.pending() is not None or not self._hooks.has("post_tool_use"):
            return result
        facts: dict[str, Any] = {
            "tool": call.name,
            "input": dict(call.input),
            "tool_call_id": call.id,
            "output": result.as_text()[:_OUTPUT_LIMIT],
            "error": result.error,
        }
        outcomes = await self._hooks.run("post_tool_use", facts, call.name)
        notes = [context_text(o) for o in outcomes if o.context]
        notes += [f"Hook `{label(o.entry)}` reports: {o.blocked}" for o in outcomes if o.blocked]
        halt = _halting(outcomes)
        if halt is not None:
            await _show_halt(self._hooks, halt)
            result = replace(result, ends_turn=True)
        if not notes:
            return result
        return replace(result, content=(*result.content, *(Text("\n\n" + n) for n in notes)))


@dataclass(frozen=True, slots=True)
class PromptVerdict:
    """A prompt's hooks: ``stopped`` (a hook's ``"continue": false``: the turn ends there), ``blocked`` (the
    reason shown to the model instead of the prompt) or notes."""

    blocked: str | None = None
    notes: tuple[str, ...] = ()
    stopped: bool = False


async def prompt_hooks(hooks: Hooks, prompt: str) -> PromptVerdict:
    outcomes = await hooks.run("user_prompt_submit", {"prompt": prompt})
    notes = tuple(context_text(o) for o in outcomes if o.context)
    halt = _halting(outcomes)
    if halt is not None:  # the prompt goes no further; the reason is the user's alone
        await _show_halt(hooks, halt)
        return PromptVerdict(stopped=True)
    for o in outcomes:
        if o.blocked is not None:
            await hooks.show(f"Prompt blocked by hook: {label(o.entry)}", o.blocked, True)
            return PromptVerdict(blocked=blocked_text(o), notes=notes)
    for o in outcomes:
        if o.context:
            await hooks.show(f"Hook user_prompt_submit: {label(o.entry)}", o.context)
    return PromptVerdict(notes=notes)


async def session_start_hooks(hooks: Hooks, source: str) -> list[str]:
    """The session-start hooks' context notes (they go into the system prompt)."""
    outcomes = await hooks.run("session_start", {"source": source})
    for o in outcomes:
        if o.context:
            await hooks.show(f"Hook session_start: {label(o.entry)}", o.context)
        elif o.blocked:
            await hooks.show(f"Hook session_start: {label(o.entry)}", o.blocked, True)
    return [context_text(o) for o in outcomes if o.context]


class StopHooks:
    """End middleware (``harness.middleware.EndMiddleware``): when a reply would end the turn, the ``stop``
    hooks run (Claude Code's ``Stop``). A block (exit 2's stderr, or ``decision`` ``block`` and its
    ``reason``) keeps the turn going: the reason is the model's next message ("Stop hook feedback: ..."),
    shown in the editor as the hook's effect, and the model takes another step; the hooks then get
    ``stop_hook_active: true``. ``"continue": false`` lets the turn end whatever another hook said. At most
    ``MAX_CONTINUATIONS`` in a row per turn (Claude Code's cap too); past it the turn ends and the user is
    told. A reply cut by the output limit or refused does not run them (the turn did not finish)."""

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks

    async def before_end(self, ending: TurnEnding) -> Message | None:
        hooks = self._hooks
        if not hooks.has("stop") or ending.message.finish not in (None, FinishReason.STOP):
            return None
        text = ending.message.text[:_OUTPUT_LIMIT]
        facts = {
            "last_message": text,
            "last_assistant_message": text,
            "stop_hook_active": ending.continued > 0,
        }
        outcomes = await hooks.run("stop", facts)
        halt = _halting(outcomes)
        block = next((o for o in outcomes if o.blocked is not None), None)
        for o in outcomes:
            if o.context and o is not block:
                await hooks.show(f"Hook stop: {label(o.entry)}", o.context)
        if halt is not None:
            await hooks.show(f"Hook stop: {label(halt.entry)}", f"The turn ends: {halt.halt}")
            return None
        if block is None:
            return None
        title, reason = f"Hook stop: {label(block.entry)}", block.blocked
        if ending.continued >= MAX_CONTINUATIONS:
            await hooks.show(
                title,
                f"The hook asks to go on ({reason}), but stop hooks kept this turn going "
                f"{ending.continued} times in a row, the limit: the turn ends here. Send a prompt to go on.",
                True,
            )
            return None
        shown = f"The turn goes on: {reason}"
        await hooks.show(title, shown)
        feedback = Text(f"Stop hook feedback:\n[{label(block.entry)}]: {reason}")
        return Message(Role.USER, (feedback,), meta={HOOK_SHOWN_META: {"title": title, "text": shown}})
