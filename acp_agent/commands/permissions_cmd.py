"""``acp-harness-agent permissions list|remove N|clear``: the rules remembered from "always" answers.

The rules live in human-readable JSON-lines files (the project's ``.acp-agent/permissions.jsonl`` and the
user's ``~/.config/acp-agent/permissions.jsonl`` unless the configuration moves them); this lists them,
numbered, and forgets the ones the user names. In an untrusted project, an allow rule of the project's file
that the user did not give through the agent is marked: it is ignored until the project is trusted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from ..config import load_config

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="the project whose rules to show (default: here)")
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("list", help="list the remembered rules, numbered (the default)")
    remove = sub.add_parser("remove", help="forget the rules with these numbers (from `list`)")
    remove.add_argument("numbers", nargs="+", type=int)
    sub.add_parser("clear", help="forget every rule of the project")


def _config(cwd: Path) -> Any:
    config = load_config(cwd, {}, os.environ, strict=False)
    for problem in config.problems:
        print(f"note: the configuration has a problem ({problem}); it is skipped", file=sys.stderr)
    return config


async def _run(action: str, numbers: list[int], cwd: Path) -> int:
    from harness.policy import PermissionStore, Rule, Verdict

    from ..coding.reports import RuleFileStore, store_paths
    from ..trust import TrustStore, rule_key

    config = _config(cwd)
    project_path, user_path = store_paths(config, cwd, os.environ)
    trust = TrustStore(config.home)
    vouched = trust.vouched(project_path)
    untrusted = config.project is not None and not config.project.trusted

    def note(store: PermissionStore, rule: Rule) -> str:
        shipped = rule.verdict is Verdict.ALLOW and rule_key(rule.to_dict()) not in vouched
        if store.path == project_path and untrusted and shipped:
            return "  (ignored: it came with the project; `acp-harness-agent trust` to use it)"
        return ""

    # The session's reader for both files (a project's: no symlink followed from its folder down).
    beneath = config.project_root or cwd
    stores = [
        ("project", RuleFileStore(project_path, beneath=beneath)),
        ("user", RuleFileStore(user_path, follow=True)),
    ]
    listed: list[tuple[PermissionStore, Rule]] = []
    for _, store in stores:
        listed.extend((store, rule) for rule in await store.rules())
    if action == "list":
        n = 0
        for label, store in stores:
            rules = [r for s, r in listed if s is store]
            print(f"{label} rules ({store.path}):" if rules else f"{label} rules ({store.path}): none")
            for rule in rules:
                n += 1
                print(f"  {n}. {rule.describe()}{note(store, rule)}")
        return 0
    forget = [r for s, r in listed if s is stores[0][1]] if action == "clear" else []
    if action != "clear":
        bad = [k for k in numbers if not 1 <= k <= len(listed)]
        if bad:
            print(
                f"no rule numbered {', '.join(map(str, bad))}; `acp-harness-agent permissions list` shows the numbers",
                file=sys.stderr,
            )
            return 1
    try:
        if action == "clear":
            for rule in forget:
                await stores[0][1].remove(rule)
                trust.unvouch(project_path, rule.to_dict())
            print(f"forgot every rule in {project_path}")
            return 0
        for k in sorted(set(numbers)):
            store, rule = listed[k - 1]
            await store.remove(rule)
            trust.unvouch(store.path, rule.to_dict())
            print(f"forgot: {rule.describe()}")
    except OSError as exc:  # not a rule file (PermissionFileError), or not writable
        print(f"acp-harness-agent permissions: {exc}", file=sys.stderr)
        return 1
    return 0


def main(args: argparse.Namespace, config: Any = None) -> int:
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).expanduser().resolve()
    action = getattr(args, "action", None) or "list"
    return anyio.run(_run, action, list(getattr(args, "numbers", []) or []), cwd)
