"""Every message an agent writes, checked: the JSON-RPC 2.0 envelope, then ``schema.json`` (the ACP stable
schema shipped in this package): the whole message, the params of agent requests and notifications, and
the result of each response to a request the kit sent (matched by id)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_VERSION", "MessageValidator", "id_key", "load_schema"]

SCHEMA_VERSION = "1.21.0"
"""The ACP schema release ``schema/schema.json`` was copied from (agentclientprotocol/agent-client-protocol
``schema/v1/schema.json``)."""

CLIENT_TO_AGENT: dict[str, str] = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "logout": "LogoutResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/resume": "ResumeSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/close": "CloseSessionResponse",
    "session/delete": "DeleteSessionResponse",
    "session/prompt": "PromptResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
}
AGENT_TO_CLIENT: dict[str, str] = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
    "elicitation/create": "CreateElicitationRequest",
}
AGENT_NOTIFICATIONS: dict[str, str] = {
    "session/update": "SessionNotification",
    "elicitation/complete": "CompleteElicitationNotification",
    "$/cancel_request": "CancelRequestNotification",
}


def load_schema() -> dict[str, Any]:
    text = resources.files("acp_conformance").joinpath("schema", "schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def id_key(value: Any) -> tuple[str, Any]:
    """1, 1.0 and True must not collide with each other: key on type and value."""
    return (type(value).__name__, value)


class MessageValidator:
    """``check(msg, sent_methods)`` returns the problems found (empty = valid)."""

    def __init__(self) -> None:
        self._schema = load_schema()
        self._validators: dict[str, Any] = {}

    def _jsonschema(self, ref: str) -> Any:
        validator = self._validators.get(ref)
        if validator is None:
            from jsonschema import Draft202012Validator

            root = {k: v for k, v in self._schema.items() if k not in ("anyOf", "title")}
            root["$defs"] = {**self._schema["$defs"], "_AgentMessage": self._schema["anyOf"][0]}
            root["$ref"] = ref
            validator = Draft202012Validator(root)
            self._validators[ref] = validator
        return validator

    def _check(self, ref: str, value: Any, what: str) -> list[str]:
        errors = sorted(self._jsonschema(ref).iter_errors(value), key=lambda e: list(e.path))
        return [f"{what}: schema.json {ref}: {e.message[:300]} at {list(e.path)}" for e in errors[:3]]

    def check(self, msg: Any, sent_methods: dict[Any, str]) -> list[str]:
        """``sent_methods`` maps the ids of the kit's requests (``id_key``) to their methods."""
        if isinstance(msg, list):  # the answer to a batch: a non-empty array of responses
            if not msg:
                return ["an empty array"]
            problems: list[str] = []
            for item in msg:
                if not isinstance(item, dict) or "method" in item:
                    problems.append("a batch answer may only hold responses")
                else:
                    problems += self.check(item, sent_methods)
            return problems
        if not isinstance(msg, dict):
            return ["not a JSON object"]
        obj: dict[str, Any] = msg
        if _other_version(obj, sent_methods):
            return []  # the agent chose another protocol version: its answer follows that version's schema
        problems = self._check("#/$defs/_AgentMessage", obj, "message")
        if "method" in obj:
            return problems + self._check_call(obj)
        if "id" not in obj:
            return [*problems, "neither request, notification nor response"]
        if ("result" in obj) == ("error" in obj):
            return [*problems, "a response must carry exactly one of result and error"]
        if "error" in obj:
            return problems
        method = sent_methods.get(id_key(obj["id"]))
        name = CLIENT_TO_AGENT.get(method) if method is not None else None
        result = obj["result"]
        if method == "initialize" and isinstance(result, dict) and result.get("protocolVersion") != 1:
            return (
                problems  # the agent chose another protocol version: its answer follows that version's schema
            )
        if name is not None:
            if not isinstance(result, dict):
                problems.append(f"{method} result must be an object, got {json.dumps(result)[:80]}")
            problems += self._check(f"#/$defs/{name}", result, f"{method} result")
        return problems

    def _check_call(self, obj: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        if "result" in obj or "error" in obj:
            problems.append("a request/notification carrying result or error")
        method = obj["method"]
        params = obj.get("params")
        table = AGENT_TO_CLIENT if "id" in obj else AGENT_NOTIFICATIONS
        name = table.get(method) if isinstance(method, str) else None
        if name is not None:
            problems += self._check(f"#/$defs/{name}", params, str(method))
        elif not str(method).startswith("_"):
            kind = "request" if "id" in obj else "notification"
            problems.append(f"agent {kind} of a method ACP does not define: {method!r}")
        return problems


def _other_version(obj: dict[str, Any], sent_methods: dict[Any, str]) -> bool:
    """An ``initialize`` answer choosing a protocol version other than 1 (a v2 agent asked for 999)."""
    if "result" not in obj or "id" not in obj or sent_methods.get(id_key(obj["id"])) != "initialize":
        return False
    result: Any = obj["result"]
    return isinstance(result, dict) and result.get("protocolVersion") != 1
