"""``acp-harness-agent sessions list|show|delete``: the saved sessions under ``$ACP_AGENT_HOME/sessions``, read
straight from disk (``meta.json`` and ``messages.jsonl``, one ``harness.Message.to_dict()`` per line)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..chat.render import as_objs
from ..session import SessionInUse, exclusively

__all__ = ["add_arguments", "main"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
DEFAULT_HOME = "~/.local/share/acp-agent"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sessions_action", metavar="ACTION")
    listing = sub.add_parser("list", help="a table of the saved sessions, newest first")
    listing.add_argument("--cwd", help="only sessions of this directory")
    show = sub.add_parser("show", help="print a session's conversation")
    show.add_argument("session_id", metavar="ID")
    delete = sub.add_parser("delete", help="delete a saved session")
    delete.add_argument("session_id", metavar="ID")
    parser.add_argument(
        "--home", dest="home", default=argparse.SUPPRESS, help="the agent's home folder (env ACP_AGENT_HOME)"
    )


def _home(args: argparse.Namespace) -> Path:
    home = getattr(args, "home", None) or os.environ.get("ACP_AGENT_HOME") or DEFAULT_HOME
    return Path(home).expanduser()


def main(args: argparse.Namespace, config: Any = None) -> int:
    root = _home(args) / "sessions"
    action = getattr(args, "sessions_action", None) or "list"
    out: Callable[[str], None] = print
    if action == "list":
        return _list(root, getattr(args, "cwd", None), out)
    session_id: str = args.session_id
    if not _ID_RE.match(session_id) or ".." in session_id or not (root / session_id / "meta.json").is_file():
        print(
            f"acp-harness-agent sessions: no session {session_id!r} in {root}; see `acp-harness-agent sessions list`.",
            file=sys.stderr,
        )
        return 1
    if action == "show":
        return _show(root / session_id, out)
    try:
        with exclusively(root / session_id, session_id):  # not while an agent has it open (``_holds``)
            shutil.rmtree(root / session_id)
    except SessionInUse as exc:
        print(f"acp-harness-agent sessions: {exc}; nothing was deleted.", file=sys.stderr)
        return 1
    out(f"deleted {session_id}")
    return 0


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _list(root: Path, cwd: str | None, out: Callable[[str], None]) -> int:
    metas: list[dict[str, Any]] = []
    if root.is_dir():
        for entry in root.iterdir():
            meta = _read_meta(entry / "meta.json") if entry.is_dir() else None
            if meta is not None and isinstance(meta.get("id"), str):
                metas.append(meta)
    if cwd is not None:
        wanted = os.path.normpath(os.path.abspath(cwd))
        metas = [m for m in metas if os.path.normpath(str(m.get("cwd"))) == wanted]
    if not metas:
        out(f"no sessions in {root}")
        return 0
    metas.sort(key=lambda m: str(m.get("updatedAt") or ""), reverse=True)
    rows = [
        (
            str(m["id"]),
            str(m.get("updatedAt") or "")[:19].replace("T", " "),
            usage_text(_read_meta(root / str(m["id"]) / "usage.json")),
            str(m.get("title") or "(untitled)"),
            str(m.get("cwd") or ""),
        )
        for m in metas
    ]
    header = ("ID", "UPDATED", "TOKENS / COST", "TITLE", "CWD")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        out("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    return 0


def usage_text(kept: dict[str, Any] | None) -> str:
    """A session's kept usage (``usage.json``) as a person reads it: ``12.3k tokens (9.8k cached), $0.0123``;
    ``-`` when none was kept, ``cost unknown`` when a model's price was not known."""
    usage: Any = kept.get("usage") if kept is not None else None
    if not isinstance(usage, dict):
        return "-"
    n: dict[str, Any] = usage  # pyright: ignore[reportUnknownVariableType]
    counts = [
        v if isinstance(v := n.get(k), int) else 0 for k in ("input", "output", "cacheRead", "cacheWrite")
    ]
    total, cached = sum(counts), counts[2]
    cost: Any = kept.get("costUsd") if kept is not None else None
    money = f"${cost:.4f}" if isinstance(cost, int | float) else "cost unknown"
    return f"{_k(total)} tokens ({_k(cached)} cached), {money}"


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _show(directory: Path, out: Callable[[str], None]) -> int:
    meta = _read_meta(directory / "meta.json") or {}
    out(f"session {meta.get('id')}  {meta.get('title') or '(untitled)'}")
    out(f"cwd {meta.get('cwd')}  updated {meta.get('updatedAt')}")
    out(f"usage {usage_text(_read_meta(directory / 'usage.json'))}")
    path = directory / "messages.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    for raw in lines:
        try:
            message: Any = json.loads(raw)
        except ValueError:
            continue  # a torn last line from a crash: the rest is still worth showing
        if isinstance(message, dict):
            _show_message(message, out)  # pyright: ignore[reportUnknownArgumentType]
    return 0


def _show_message(message: dict[str, Any], out: Callable[[str], None]) -> None:
    role = str(message.get("role"))
    for p in as_objs(message.get("content")):
        kind = p.get("type")
        if kind == "text":
            out(f"\n{role}: {p.get('text')}")
        elif kind == "reasoning":
            out(f"\n{role} (thinking): {p.get('text')}")
        elif kind == "tool_call":
            out(f"\n{role} calls {p.get('name')} {json.dumps(p.get('input'), ensure_ascii=False)}")
        elif kind == "tool_result":
            text = "".join(str(c.get("text", "")) for c in as_objs(p.get("content")))
            label = "error" if p.get("error") else "result"
            out(f"  {label}: {text[:2000]}")
        elif kind == "image":
            out(f"\n{role}: [image {p.get('mediaType')}]")
