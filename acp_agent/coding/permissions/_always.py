"""The options of a tool-call permission request, and the words of its "always" options.

An "always" option stores rules; its name lists every rule it stores, in words the user can check
(``commands starting with `git status` ``, ``exactly `sort -o out.txt data.txt` ``, ```write_file` at or
under `/p/src` ``, ``every `web_fetch` call``). When the rules are too many, or too long, to list in a button, "always"
is not offered at all: a remembered rule is never wider than what the dialog said.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Final

from harness.policy import Rule

__all__ = ["MAX_ALWAYS_LABEL", "MAX_ALWAYS_RULES", "always_label", "code", "permission_options"]

MAX_ALWAYS_RULES: Final = 6
MAX_ALWAYS_LABEL: Final = 400


def permission_options(allow_rules: Sequence[Rule], deny_rules: Sequence[Rule]) -> list[dict[str, str]]:
    """allow_once, allow_always (when its rules can be listed), reject_once, reject_always (likewise).
    Each "always" option stores exactly the rules its name lists."""
    allow = always_label("Always allow", allow_rules)
    deny = always_label("Always reject", deny_rules)
    options = [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}]
    if allow is not None:
        options.append({"optionId": "allow_always", "name": allow, "kind": "allow_always"})
    options.append({"optionId": "reject_once", "name": "Reject", "kind": "reject_once"})
    if deny is not None:
        options.append({"optionId": "reject_always", "name": deny, "kind": "reject_always"})
    return options


def always_label(prefix: str, rules: Sequence[Rule]) -> str | None:
    """``prefix`` and every rule of ``rules`` in words; None when there is none, or too many to list."""
    if not rules or len(rules) > MAX_ALWAYS_RULES:
        return None
    starts: list[str] = []
    exact: list[str] = []
    patterns: list[str] = []
    paths: list[str] = []
    tools: list[str] = []
    for rule in rules:
        match rule.kind:
            case "command" if rule.command_pattern is not None:
                patterns.append(code(rule.command_pattern))
            case "command" if rule.exact:
                exact.append(code(shlex.join(rule.command_words)))
            case "command":
                starts.append(code(shlex.join(rule.command_words)))
            case "path":
                paths.append(f"{code(rule.tool_glob)} at or under {code(str(rule.path_prefix))}")
            case "tool":
                tools.append(f"every {code(rule.tool_glob)} call")
            case "hints":
                return None  # never suggested; no words a button could hold
    groups = [
        *([f"commands starting with {', '.join(starts)}"] if starts else []),
        *([f"exactly {', '.join(exact)}"] if exact else []),
        *([f"commands matching {', '.join(patterns)}"] if patterns else []),
        *paths,
        *tools,
    ]
    label = f"{prefix} {'; '.join(groups)}"
    return label if len(label) <= MAX_ALWAYS_LABEL else None


def code(text: str) -> str:
    """``text`` as a code span (doubled backticks when it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
