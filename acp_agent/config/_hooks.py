"""``[[hooks.<event>]]`` in ``config.toml``: the entries and their check (the ``hooks`` row of
``acp_agent.config``'s settings table). Standard library only: the configuration is resolved before the
agent answers ``initialize``.

```toml
[[hooks.pre_tool_use]]
matcher = "shell|write_file"   # a regular expression over tool names (absent: every tool)
command = "./scripts/check-tool.sh"
timeout_s = 30                  # default 30, at most 600
sandbox = false                 # the user's hooks run as the user (default), like git hooks; true: in
                                # the session's command sandbox
```

A project's hooks (in a trusted project) always run sandboxed, whatever they say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_S",
    "HOOK_EVENTS",
    "MAX_HOOK_TIMEOUT_S",
    "HookEntry",
    "check_hooks",
    "describe_hooks",
]

HOOK_EVENTS: Final = ("pre_tool_use", "post_tool_use", "user_prompt_submit", "session_start", "stop")
TOOL_EVENTS: Final = ("pre_tool_use", "post_tool_use")
DEFAULT_HOOK_TIMEOUT_S: Final = 30.0
MAX_HOOK_TIMEOUT_S: Final = 600.0
_KEYS: Final = ("matcher", "command", "timeout_s", "sandbox")


class Problem(Protocol):
    """Where a value came from, and how to report a problem with it (``acp_agent.config``'s ``At``)."""

    source: str

    def bad(self, message: str) -> None: ...

    def sub(self, key: str) -> Problem: ...


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One hook: the shell ``command`` run at ``event``; for the tool events only on tools whose name
    ``matcher`` matches (the whole name, ``re.fullmatch``; None matches every tool). ``project`` says it
    came from the project's configuration: such a hook runs only in a trusted project."""

    event: str
    command: str
    matcher: str | None = None
    timeout_s: float = DEFAULT_HOOK_TIMEOUT_S
    source: str = ""
    project: bool = False
    sandbox: bool = False
    """Run under the session's sandbox policy (where the machine has one): a project's hook always, the
    user's only when it says ``sandbox = true`` (the user's own command, run as the user like a git hook:
    it reads the user's configuration folder and writes its log where it likes)."""

    def fingerprint(self) -> dict[str, Any]:
        """What the user trusts when trusting a project's hook (``acp_agent.trust``'s digest)."""
        return {
            "event": self.event,
            "command": self.command,
            "matcher": self.matcher,
            "timeout_s": self.timeout_s,
        }

    def for_project(self) -> HookEntry:
        """This entry as a project's: it needs trust and always runs sandboxed."""
        return HookEntry(self.event, self.command, self.matcher, self.timeout_s, self.source, True, True)

    def matches(self, tool: str | None) -> bool:
        if self.event not in TOOL_EVENTS or self.matcher in (None, "", "*"):
            return True
        return tool is not None and re.fullmatch(self.matcher, tool) is not None


def check_hooks(value: Any, at: Problem) -> tuple[HookEntry, ...] | None:
    """The entries of a ``hooks`` table (``at`` is the ``hooks`` key); each bad one is reported and left
    out. None when the table itself is not one."""
    if not isinstance(value, Mapping):
        at.bad("must hold arrays of tables, e.g. [[hooks.pre_tool_use]].")
        return None
    table: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    found: list[HookEntry] = []
    for event, raw_list in table.items():
        where = at.sub(str(event))
        if event not in HOOK_EVENTS:
            where.bad(f"unknown hook event; use one of: {', '.join(HOOK_EVENTS)}.")
        elif not isinstance(raw_list, list):
            where.bad(f"must be an array of tables: write [[hooks.{event}]].")
        else:
            items: list[Any] = raw_list  # pyright: ignore[reportUnknownVariableType]
            for i, raw in enumerate(items):
                entry = _entry(event, raw, where.sub(str(i)), at.source)
                if entry is not None:
                    found.append(entry)
    return tuple(found)


def describe_hooks(hooks: tuple[HookEntry, ...]) -> str:
    """The trust request's line for a project's hooks."""
    return "runs hook commands: " + "; ".join(f"`{h.command}` at {h.event}" for h in hooks)


def _entry(event: str, raw: Any, at: Problem, source: str) -> HookEntry | None:
    if not isinstance(raw, Mapping):
        at.bad("must be a table with command, matcher, timeout_s and sandbox.")
        return None
    entry: Mapping[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    ok = True
    for key in entry:
        if key not in _KEYS:
            at.sub(str(key)).bad(f"unknown key; allowed keys: {', '.join(_KEYS)}.")
            ok = False
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        at.sub("command").bad("a hook needs a command: a non-empty shell command line.")
        ok = False
    matcher = entry.get("matcher")
    if matcher is not None:
        try:
            re.compile(str(matcher))
        except re.error as exc:
            at.sub("matcher").bad(f"is not a valid regular expression ({exc}).")
            ok = False
    timeout: Any = entry.get("timeout_s", DEFAULT_HOOK_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_HOOK_TIMEOUT_S
    ):
        at.sub("timeout_s").bad(f"must be a number of seconds, 0 < s <= {MAX_HOOK_TIMEOUT_S:g}.")
        ok = False
    sandbox: Any = entry.get("sandbox", False)
    if not isinstance(sandbox, bool):
        at.sub("sandbox").bad("must be true or false.")
        ok = False
    if not ok:
        return None
    return HookEntry(
        event, str(command), str(matcher) if matcher else None, float(timeout), source, sandbox=bool(sandbox)
    )
