"""``acp-agent permissions list|remove N|clear``: the rules remembered from "always" answers.

The rules live in human-readable JSON-lines files (the project's ``.acp-agent/permissions.jsonl`` and the
user's ``~/.config/acp-agent/permissions.jsonl`` unless the configuration moves them); this lists them,
numbered, and forgets the ones the user names.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", help="the project whose rules to show (default: here)")
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("list", help="list the remembered rules, numbered (the default)")
    remove = sub.add_parser("remove", help="forget the rules with these numbers (from `list`)")
    remove.add_argument("numbers", nargs="+", type=int)
    sub.add_parser("clear", help="forget every rule of the project")


def _paths(cwd: Path) -> tuple[Path, Path]:
    from .coding._modes import store_paths
    from .config import ConfigError, load_config

    try:
        config: Any = load_config(cwd, {}, os.environ)
    except ConfigError as exc:
        print(f"note: the configuration has problems ({exc}); using the default rule files", file=sys.stderr)
        config = None
    return store_paths(config, cwd, os.environ)


async def _run(action: str, numbers: list[int], cwd: Path) -> int:
    from harness.policy import PermissionStore, Rule

    project_path, user_path = _paths(cwd)
    stores = [("project", PermissionStore(project_path)), ("user", PermissionStore(user_path))]
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
                print(f"  {n}. {rule.describe()}")
        return 0
    if action == "clear":
        project = stores[0][1]
        for rule in [r for s, r in listed if s is project]:
            await project.remove(rule)
        print(f"forgot every rule in {project.path}")
        return 0
    bad = [k for k in numbers if not 1 <= k <= len(listed)]
    if bad:
        print(
            f"no rule numbered {', '.join(map(str, bad))}; `acp-agent permissions list` shows the numbers",
            file=sys.stderr,
        )
        return 1
    for k in sorted(set(numbers)):
        store, rule = listed[k - 1]
        await store.remove(rule)
        print(f"forgot: {rule.describe()}")
    return 0


def main(args: argparse.Namespace, config: Any = None) -> int:
    cwd = Path(getattr(args, "cwd", None) or os.getcwd()).expanduser().resolve()
    action = getattr(args, "action", None) or "list"
    return anyio.run(_run, action, list(getattr(args, "numbers", []) or []), cwd)


def _register() -> None:
    from .cli import register_command

    register_command(
        "permissions", 'list or forget the rules remembered from "always" answers', add_arguments, main
    )


_register()
