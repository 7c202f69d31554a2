"""Small ACP agents made to fail the conformance kit on purpose: ``python fake_agents.py MODE``.

``good`` is a minimal agent (no model: prompts are echoed) that advertises list and delete; each other mode
breaks it in one way:

- ``answers-notification``: answers the ``session/cancel`` notification with an error response without an
  id (what codex-acp 0.16.0 does), a MUST violation twice over (an answer to a notification, and an invalid
  JSON-RPC message);
- ``no-delete``: does not advertise ``sessionCapabilities.delete`` and answers ``session/delete`` -32601;
- ``delete-not-routed``: advertises delete, yet answers ``session/delete`` -32601;
- ``vague-errors``: invalid params are -32602 with a message that names nothing, a RECOMMENDED miss only;
- ``field-in-data``: invalid params name the field in ``data``, not in the message (that passes).

Standard library only: it stands for an agent written by someone else.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any, cast

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"


def out(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def error(rid: Any, code: int, message: str, data: Any = None) -> None:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    out({"jsonrpc": "2.0", "id": rid, "error": err})


def invalid_params(rid: Any, field: str) -> None:
    if MODE == "vague-errors":
        error(rid, -32602, "Invalid params")
    elif MODE == "field-in-data":
        error(rid, -32602, "Invalid params", {"errors": [{"loc": [field], "msg": "Field required"}]})
    else:
        error(rid, -32602, f"Invalid params: {field} is required")


SESSIONS: dict[str, str] = {}


def capabilities() -> dict[str, Any]:
    session: dict[str, Any] = {"list": {}}
    if MODE != "no-delete":
        session["delete"] = {}
    return {"sessionCapabilities": session}


def handle(msg: dict[str, Any]) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
    if "id" not in msg:  # a notification
        if method == "session/cancel" and MODE == "answers-notification":
            out({"jsonrpc": "2.0", "error": {"code": -32603, "message": "no turn to cancel"}})
        return
    p = cast(dict[str, Any], params) if isinstance(params, dict) else {}
    if method == "initialize":
        if not isinstance(p.get("protocolVersion"), int):
            invalid_params(rid, "protocolVersion")
            return
        result: dict[str, Any] = {
            "protocolVersion": 1,
            "agentCapabilities": capabilities(),
            "authMethods": [],
        }
        out(
            {"jsonrpc": "2.0", "id": rid, "result": {**result, "agentInfo": {"name": "fake", "version": "1"}}}
        )
    elif method == "session/new":
        cwd = p.get("cwd")
        if not isinstance(cwd, str) or not isinstance(p.get("mcpServers"), list):
            invalid_params(rid, "cwd" if not isinstance(cwd, str) else "mcpServers")
        elif not cwd.startswith("/"):
            invalid_params(rid, "cwd")
        else:
            sid = uuid.uuid4().hex
            SESSIONS[sid] = cwd
            out({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": sid}})
    elif method == "session/prompt":
        if not isinstance(p.get("prompt"), list):
            invalid_params(rid, "prompt")
        elif p.get("sessionId") not in SESSIONS:
            error(rid, -32002, "Session not found")
        else:
            blocks: list[Any] = p["prompt"]
            text = "".join(
                str(cast(dict[str, Any], b).get("text", "")) for b in blocks if isinstance(b, dict)
            )
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
            out(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": p["sessionId"], "update": update},
                }
            )
            out({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif method == "session/list":
        sessions = [{"sessionId": s, "cwd": c} for s, c in SESSIONS.items() if p.get("cwd") in (None, c)]
        out({"jsonrpc": "2.0", "id": rid, "result": {"sessions": sessions}})
    elif method == "session/delete" and MODE not in ("no-delete", "delete-not-routed"):
        SESSIONS.pop(str(p.get("sessionId")), None)
        out({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        error(rid, -32601, f"Method not found: {method}")


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            error(None, -32700, "Parse error")
            continue
        if isinstance(msg, dict):
            handle(cast(dict[str, Any], msg))
        else:
            error(None, -32600, "Invalid Request")


if __name__ == "__main__":
    main()
