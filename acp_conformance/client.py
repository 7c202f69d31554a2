"""The kit's side of agent-initiated requests: how the conformance client answers them while a scenario
waits for something else.

Permission requests get the scenario's policy (``allow`` by default: the first ``allow_once`` option).
``fs/*`` is served from disk, inside the scenario's temporary directory only, when the scenario's client
capabilities advertise it; a request the client did
not advertise (``fs/*``, ``terminal/*``, ``elicitation/create``) is a capability violation, answered
``-32601``. ``mcp/message`` goes to the kit's MCP server over ACP (``mcp_over_acp``). Anything else gets
``-32601`` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .json_types import JsonObject, is_object
from .mcp_over_acp import answer_mcp_message

__all__ = ["ClientAnswer", "answer_agent_request", "choose_permission"]

ClientAnswer = tuple[dict[str, Any], str | None]
"""The reply (``result`` or ``error`` member only) and a capability violation to report, if any."""


def choose_permission(params: Any, policy: str) -> dict[str, Any]:
    """The ``RequestPermissionResponse`` for ``policy``: ``allow``, ``allow_always``, ``reject``, ``cancel``."""
    if policy == "cancel":
        return {"outcome": {"outcome": "cancelled"}}
    options: list[Any] = list(params.get("options") or []) if is_object(params) else []
    prefs = {
        "allow": ("allow_once", "allow_always"),
        "allow_always": ("allow_always", "allow_once"),
        "reject": ("reject_once", "reject_always"),
    }.get(policy, ("allow_once", "allow_always"))
    for kind in prefs:
        for option in options:
            if is_object(option) and option.get("kind") == kind:
                return {"outcome": {"outcome": "selected", "optionId": option.get("optionId")}}
    first = options[0] if options else None
    if is_object(first):
        return {"outcome": {"outcome": "selected", "optionId": first.get("optionId")}}
    return {"outcome": {"outcome": "cancelled"}}


def _advertised(caps: Mapping[str, Any], *path: str) -> bool:
    value: Any = caps
    for part in path:
        if not is_object(value):
            return False
        value = value.get(part)
    return value is not None and value is not False


def _not_found(method: str) -> dict[str, Any]:
    return {"error": {"code": -32601, "message": f"the conformance client does not offer {method}"}}


def answer_agent_request(
    method: str, params: Any, caps: Mapping[str, Any], policy: str, root: Path
) -> ClientAnswer:
    """How the conformance client answers ``method``; ``caps`` are the client capabilities it sent, ``root``
    the only directory its file system serves."""
    p: JsonObject = params if is_object(params) else {}
    if method == "session/request_permission":
        return {"result": choose_permission(p, policy)}, None
    if method == "fs/read_text_file":
        if not _advertised(caps, "fs", "readTextFile"):
            return _not_found(method), f"{method} although the client did not advertise fs.readTextFile"
        return _read_text_file(p, root), None
    if method == "fs/write_text_file":
        if not _advertised(caps, "fs", "writeTextFile"):
            return _not_found(method), f"{method} although the client did not advertise fs.writeTextFile"
        return _write_text_file(p, root), None
    if method.startswith("terminal/"):
        if not _advertised(caps, "terminal"):
            return _not_found(method), f"{method} although the client did not advertise terminal"
        return _not_found(method), None
    if method == "elicitation/create":
        mode = str(p.get("mode") or "form")
        if not _advertised(caps, "elicitation", mode):
            return _not_found(method), f"{method} (mode {mode}) although the client did not advertise it"
        return {"result": {"action": "decline"}}, None
    if method == "mcp/message":  # only the kit's own server, which a scenario declares in session/new
        return answer_mcp_message(p), None
    return _not_found(method), None


def _resolve(params: dict[str, Any], root: Path) -> Path | dict[str, Any]:
    path = Path(str(params.get("path") or ""))
    if not path.is_absolute():
        return {"error": {"code": -32602, "message": f"path must be absolute: {path}"}}
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        return {
            "error": {"code": -32002, "message": f"outside the project: {path}", "data": {"uri": str(path)}}
        }
    return resolved


def _read_text_file(params: dict[str, Any], root: Path) -> dict[str, Any]:
    path = _resolve(params, root)
    if isinstance(path, dict):
        return path
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except OSError as exc:
        return {
            "error": {
                "code": -32002,
                "message": f"cannot read {path}: {exc.strerror}",
                "data": {"uri": str(path)},
            }
        }
    start = max(int(params.get("line") or 1), 1) - 1
    limit = params.get("limit")
    chosen = lines[start : start + int(limit)] if isinstance(limit, int) else lines[start:]
    return {"result": {"content": "".join(chosen)}}


def _write_text_file(params: dict[str, Any], root: Path) -> dict[str, Any]:
    path = _resolve(params, root)
    if isinstance(path, dict):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(params.get("content") or ""), encoding="utf-8")
    except OSError as exc:
        return {"error": {"code": -32603, "message": f"cannot write {path}: {exc.strerror}"}}
    return {"result": {}}
