"""``acp-harness-agent trust [PATH] | --list | --revoke [PATH]``: trust a project's configuration from the terminal.

``trust PATH`` shows what the project's configuration would do (its settings that need trust: MCP servers it
would start, the endpoint it would send your key to, …) and records the trust for exactly those settings;
a later change to them asks again. ``--list`` shows the trusted projects (and which changed since);
``--revoke`` forgets one. Trust lives in ``<home>/trust.json`` (``acp_agent.trust``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..config import flag_values, load_config

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", help="the project directory (default: here)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--list", action="store_true", help="list the trusted projects")
    group.add_argument("--revoke", action="store_true", help="forget the trust in the project at PATH")


def _project_at(path: Path, flags: dict[str, Any]) -> Any:
    return load_config(path, flags, os.environ, trust=False, strict=False)


def _list(home: Path) -> int:
    from ..trust import TrustStore

    records = TrustStore(home).records()
    if not records:
        print(f"no trusted projects (in {home / 'trust.json'})")
        return 0
    for record in records:
        root = Path(record.root)
        if not root.is_dir():
            state = "the folder is gone"
        else:
            project = load_config(root, {}, os.environ, strict=False).project
            if project is None or not project.items:
                state = "nothing in its configuration needs trust any more"
            elif project.digest == record.digest:
                state = "trusted"
            else:
                state = "changed since it was trusted: the editor will ask again"
        print(f"{root}  ({state}; trusted {record.granted_at})")
        for item in record.items:
            print(f"    - {item}")
    return 0


def main(args: argparse.Namespace, config: Any = None) -> int:
    from ..trust import TrustStore

    flags = flag_values(args)
    path = Path(getattr(args, "path", None) or os.getcwd()).expanduser().resolve()
    resolved = _project_at(path, flags)
    store = TrustStore(resolved.home)
    if getattr(args, "list", False):
        return _list(resolved.home)
    project = resolved.project
    root = project.root if project is not None else path
    if getattr(args, "revoke", False):
        if store.revoke(root):
            print(f"{root} is no longer trusted; its configuration's settings that need trust are ignored")
            return 0
        print(f"{root} was not trusted", file=sys.stderr)
        return 1
    if project is None:
        print(
            f"{path} has no project configuration (.acp-agent/) up to its repository root: nothing to trust"
        )
        return 0
    for problem in resolved.problems:
        print(f"note: {problem}", file=sys.stderr)
    if not project.items:
        print(f"nothing in the configuration of {root} needs trust: it applies as it is")
        return 0
    store.grant(root, project.digest, [item.text for item in project.items])
    print(f"trusted {root}; its configuration may now:\n{project.summary()}")
    print("a change to these settings (a new server, another endpoint) will need trust again")
    return 0
