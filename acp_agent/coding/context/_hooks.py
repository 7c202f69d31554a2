"""Hooks: the user's shell commands at ``pre_tool_use``, ``post_tool_use``, ``user_prompt_submit``,
``session_start`` and ``stop`` (``[[hooks.<event>]]`` in ``config.toml``; ``acp_agent.config`` checks them).

A hook runs as ``bash -c <command>`` in the session's cwd, in its own process group, with the agent's
environment minus its credentials (``harness.secrets.Secrets.child_env``; what it prints is redacted too) plus ``ACP_AGENT_HOOK_EVENT``, ``ACP_AGENT_SESSION_ID`` and
``ACP_AGENT_PROJECT_DIR`` (also as ``CLAUDE_PROJECT_DIR``, so hooks written for Claude Code run). It gets one
JSON object on stdin: ``event``, ``session_id``, ``cwd``, ``mode``, and per event ``tool``, ``input``,
``tool_call_id``, ``output``/``error`` (post-tool), ``prompt`` (user-prompt), ``last_message`` and
``stop_hook_active`` (stop); the same facts also under Claude Code's names (``hook_event_name``,
``tool_name``, ``tool_input``, ``tool_response``, ``last_assistant_message``). It is killed at its
``timeout_s`` and when the turn is cancelled.

Outcomes: exit 0 goes on; its stdout may be a JSON object with ``decision`` (``allow`` | ``ask`` |
``deny``, pre-tool), ``reason`` and ``context`` (a note for the model; Claude Code's ``hookSpecificOutput``
keys are read too); plain stdout of a user-prompt or session-start hook is context. Exit 2 blocks: a
pre-tool call does not run and the model gets "Blocked by hook `cmd`: <stderr>"; a prompt does not reach
the model, which is told it was blocked and why; a stop hook's block (or ``decision`` ``block``) keeps the
turn going with the reason as the model's next message (``_hook_calls.StopHooks``). ``"continue": false``
(Claude Code's) ends the turn, whatever the decision, its ``stopReason`` shown to the user and not to the
model: a pre-tool hook's call does not run, a post-tool hook's call has run, and either way the turn ends
once the step's calls are done; a prompt ends its turn at once, with no model request and nothing saved
(``PromptStopped``); a stop hook's turn ends (a session-start hook's is not read). Any other failure (exit code, timeout, cannot start) is
logged, shown once in the editor, and does not block. A project's hook (trusted project) runs under the
sandbox policy a shell command would get in the session's mode (none in ``full-access``); the user's own
hooks run as the user, unsandboxed, like git hooks (they read the user's configuration folder and write
logs anywhere), unless one says ``sandbox = true``. ``allow`` means no objection: the mode's permission
rules still apply (a hook can tighten them, never widen them); ``ask`` asks the user even where the mode
would not. Project hooks run only in a trusted project; the user's always.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from harness.programs import find_program
from harness.sandbox import sandbox_argv, spawns_in_this_thread

from ...config import HookEntry
from ._process import Completed, run_bounded

if TYPE_CHECKING:
    from harness.sandbox import SandboxPolicy, Support
    from harness.secrets import Secrets

__all__ = ["HookOutcome", "Hooks", "blocked_text", "context_text", "hook_shell", "interpret", "label"]

log = logging.getLogger(__name__)

CONTEXT_LIMIT: Final = 10_000
_OUTPUT_LIMIT: Final = 64 * 1024
_CLAUDE_NAMES: Final = {
    "pre_tool_use": "PreToolUse",
    "post_tool_use": "PostToolUse",
    "user_prompt_submit": "UserPromptSubmit",
    "session_start": "SessionStart",
    "stop": "Stop",
}
_PLAIN_CONTEXT: Final = ("user_prompt_submit", "session_start")

Show = Callable[[str, str, bool], Awaitable[None]]
"""``(title, text, failed)``: shows a hook's effect in the editor (an ``execute`` tool call of its own)."""


@dataclass(frozen=True, slots=True)
class HookOutcome:
    entry: HookEntry
    blocked: str | None = None
    """The reason, when the hook blocked (exit 2, or ``decision`` ``deny``)."""
    ask: str | None = None
    context: str | None = None
    failure: str | None = None
    halt: str | None = None
    """``"continue": false`` (Claude Code's): the turn ends here; the ``stopReason`` for the user."""


def label(entry: HookEntry) -> str:
    command = " ".join(entry.command.split())
    return command if len(command) <= 120 else command[:119] + "…"


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _text(value: Any) -> str | None:
    return value.strip()[:CONTEXT_LIMIT] if isinstance(value, str) and value.strip() else None


def interpret(entry: HookEntry, done: Completed) -> HookOutcome:
    """What a finished hook asks for."""
    if done.error is not None:
        return HookOutcome(entry, failure=done.error)
    if done.timed_out:
        return HookOutcome(entry, failure=f"timed out after {entry.timeout_s:g} s and was killed")
    if done.code == 2:
        reason = done.stderr.strip() or done.stdout.strip() or "no reason given"
        return HookOutcome(entry, blocked=reason[:CONTEXT_LIMIT])
    if done.code != 0:
        detail = done.stderr.strip()[:500]
        return HookOutcome(
            entry, failure=f"exited with status {done.code}" + (f": {detail}" if detail else "")
        )
    out = done.stdout.strip()
    data: dict[str, Any] = {}
    if out.startswith("{"):
        try:
            data = _obj(json.loads(out))
        except ValueError:
            data = {}
    if not data:
        plain = _text(out) if entry.event in _PLAIN_CONTEXT else None
        return HookOutcome(entry, context=plain)
    # Claude Code's ``continue: false`` wins over any decision, at every event (``_hook_calls``).
    if data.get("continue") is False and entry.event != "session_start":
        return HookOutcome(entry, halt=_text(data.get("stopReason")) or "a hook ended the turn")
    special = _obj(data.get("hookSpecificOutput"))
    decision = data.get("decision") or special.get("permissionDecision")
    reason = _text(data.get("reason")) or _text(special.get("permissionDecisionReason"))
    context = _text(data.get("context")) or _text(special.get("additionalContext"))
    if decision in ("deny", "block"):
        return HookOutcome(entry, blocked=reason or "no reason given", context=context)
    if decision == "ask" and entry.event == "pre_tool_use":
        return HookOutcome(entry, ask=reason or "a hook asks you to confirm this call", context=context)
    return HookOutcome(entry, context=context)


def hook_shell(path: str | None, fenced: tuple[str, ...] = ()) -> tuple[str, ...]:
    """``bash -c`` where ``PATH`` has a bash, else ``sh -c``, found outside ``fenced`` (the session's folder,
    where the hook runs) and never through an empty or relative ``PATH`` entry (``harness.programs``: a
    project's own ``bash`` file would run every hook). Where it was found is kept per ``PATH``, folder and
    home (a lookup is a dozen ``stat``s); one missing is looked up again by the next session, and a hook
    that cannot start is shown, not fatal."""
    bash = find_program("bash", path, fenced)
    return (bash, "-c") if bash is not None else (find_program("sh", path, fenced) or "/bin/sh", "-c")


class Hooks:
    """The session's hooks (the project's are among them only in a trusted project: the configuration
    drops them otherwise). ``show`` puts a hook's effect in the editor; ``mode`` is the session's mode now;
    ``secrets`` keeps the agent's credentials out of the hooks' environment and out of what they say."""

    def __init__(
        self,
        entries: Sequence[HookEntry],
        *,
        session_id: str,
        cwd: Path,
        environ: Mapping[str, str],
        secrets: Secrets,
        show: Show,
        mode: Callable[[], str] = lambda: "default",
        sandbox: Callable[[], SandboxPolicy | None] | None = None,
        support: Support | None = None,
    ) -> None:
        self.use(entries)
        self._session_id = session_id
        self._cwd = cwd
        self._environ = environ
        self._secrets = secrets
        self._show = show
        self._mode = mode
        self._shell = hook_shell(environ.get("PATH"), (str(cwd),))
        self._failures_shown: set[tuple[str, str]] = set()
        self._sandbox = sandbox
        self._support = support

    def use(self, entries: Sequence[HookEntry]) -> None:
        """The hooks from now on (the user trusted the project: its hooks join). The user's run first."""
        self.entries = tuple(sorted(entries, key=lambda e: e.project))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def has(self, event: str) -> bool:
        return any(e.event == event for e in self.entries)

    def active(self, event: str, tool: str | None = None) -> list[HookEntry]:
        return [e for e in self.entries if e.event == event and e.matches(tool)]

    def _payload(self, event: str, facts: Mapping[str, Any]) -> bytes:
        payload: dict[str, Any] = {
            "event": event,
            "session_id": self._session_id,
            "cwd": str(self._cwd),
            "mode": self._mode(),
            **facts,
            "hook_event_name": _CLAUDE_NAMES[event],
        }
        for ours, theirs in (("tool", "tool_name"), ("input", "tool_input"), ("tool_call_id", "tool_use_id")):
            if ours in facts:
                payload[theirs] = facts[ours]
        if "output" in facts:
            payload["tool_response"] = {"output": facts["output"], "error": facts.get("error", False)}
        return json.dumps(payload, default=str).encode()

    async def run(self, event: str, facts: Mapping[str, Any], tool: str | None = None) -> list[HookOutcome]:
        """Run the active hooks of ``event`` in order; stops at the first that blocks or ends the turn."""
        outcomes: list[HookOutcome] = []
        stdin = None
        for entry in self.active(event, tool):
            stdin = stdin or self._payload(event, facts)
            env = {
                **self._secrets.child_env(self._environ),
                "ACP_AGENT_HOOK_EVENT": event,
                "ACP_AGENT_SESSION_ID": self._session_id,
                "ACP_AGENT_PROJECT_DIR": str(self._cwd),
                "CLAUDE_PROJECT_DIR": str(self._cwd),
            }
            try:
                argv = await self._argv(entry)
            except OSError as exc:  # harness.sandbox.SandboxUnavailable, or the spec cannot be written
                done = Completed(None, error=f"cannot be sandboxed: {exc}")
            else:
                done = await run_bounded(
                    argv,
                    cwd=self._cwd,
                    env=env,
                    timeout_s=entry.timeout_s,
                    stdin=stdin,
                    limit=_OUTPUT_LIMIT,
                )
            redact = self._secrets.redact
            outcome = interpret(entry, replace(done, stdout=redact(done.stdout), stderr=redact(done.stderr)))
            command = redact(entry.command)
            if command != entry.command:  # a key written into the command: its label goes to the model too
                outcome = replace(outcome, entry=replace(entry, command=command))
            outcomes.append(outcome)
            if outcome.failure is not None:
                await self._failed(outcome)
            if outcome.blocked is not None or outcome.halt is not None:
                break
        return outcomes

    async def _argv(self, entry: HookEntry) -> list[str]:
        """``bash -c <command>``, wrapped to run under the policy a shell command would get now (a project's
        hook always; none in ``full-access``, where the machine has no sandbox, or for the user's hook
        unless it asked for the sandbox)."""
        argv = [*self._shell, entry.command]
        boxed = entry.project or entry.sandbox
        policy = self._sandbox() if self._sandbox is not None and boxed else None
        if policy is None:
            return argv

        tied = spawns_in_this_thread()  # (here, on the event loop's thread)
        return await anyio.to_thread.run_sync(
            lambda: sandbox_argv(policy, argv, support=self._support, tied=tied)
        )

    async def _failed(self, outcome: HookOutcome) -> None:
        entry = outcome.entry
        log.warning("hook %s (%s, %s) failed: %s", entry.command, entry.event, entry.source, outcome.failure)
        key = (entry.event, entry.command)
        if key in self._failures_shown:
            return
        self._failures_shown.add(key)
        await self._show(
            f"Hook {entry.event} failed: {label(entry)}",
            f"The hook `{entry.command}` ({entry.source}) {outcome.failure}. It did not block anything; "
            "further failures of this hook are only logged.",
            True,
        )

    async def show(self, title: str, text: str, failed: bool = False) -> None:
        await self._show(title, text, failed)


def blocked_text(outcome: HookOutcome) -> str:
    return f"Blocked by hook `{label(outcome.entry)}`: {outcome.blocked}"


def context_text(outcome: HookOutcome) -> str:
    return f"Note from hook `{label(outcome.entry)}` ({outcome.entry.event}): {outcome.context}"
