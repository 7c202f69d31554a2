"""Validation of every message an agent writes: JSON-RPC shape, the official SDK's pydantic models
(``acp.schema``, always) and jsonschema against ``../shared/acp-spec/schema.json`` (when present)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["MessageValidator", "schema_path"]

# method -> (request params model, result model), names in acp.schema
_CLIENT_TO_AGENT: dict[str, tuple[str, str]] = {
    "initialize": ("InitializeRequest", "InitializeResponse"),
    "authenticate": ("AuthenticateRequest", "AuthenticateResponse"),
    "logout": ("LogoutRequest", "LogoutResponse"),
    "session/new": ("NewSessionRequest", "NewSessionResponse"),
    "session/load": ("LoadSessionRequest", "LoadSessionResponse"),
    "session/resume": ("ResumeSessionRequest", "ResumeSessionResponse"),
    "session/list": ("ListSessionsRequest", "ListSessionsResponse"),
    "session/close": ("CloseSessionRequest", "CloseSessionResponse"),
    "session/delete": ("DeleteSessionRequest", "DeleteSessionResponse"),
    "session/prompt": ("PromptRequest", "PromptResponse"),
    "session/set_mode": ("SetSessionModeRequest", "SetSessionModeResponse"),
    "session/set_config_option": ("SetSessionConfigOptionSelectRequest", "SetSessionConfigOptionResponse"),
}
_AGENT_TO_CLIENT: dict[str, str] = {
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest",
    "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest",
    "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest",
}
_AGENT_NOTIFICATIONS: dict[str, str] = {"session/update": "SessionNotification"}
_STABLE_UPDATES = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
)


def schema_path() -> Path:
    """``<repo>/../shared/acp-spec/schema.json`` (the repo root is three levels above this file)."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "acp-spec" / "schema.json"


class MessageValidator:
    """Checks agent messages; ``check`` returns the problems found (empty = valid)."""

    def __init__(self, use_jsonschema: bool = True) -> None:
        import acp.schema

        self._sdk = acp.schema
        self._schema: dict[str, Any] | None = None
        self._validators: dict[str, Any] = {}
        self.jsonschema_skipped: str | None = None
        path = schema_path()
        if not use_jsonschema:
            self.jsonschema_skipped = "disabled"
        elif not path.is_file():
            self.jsonschema_skipped = f"{path} is absent"
        else:
            self._schema = json.loads(path.read_text(encoding="utf-8"))

    def _jsonschema(self, ref: str) -> Any:
        validator = self._validators.get(ref)
        if validator is None:
            from jsonschema import Draft202012Validator

            assert self._schema is not None
            root = {k: v for k, v in self._schema.items() if k not in ("anyOf", "title")}
            root["$defs"] = {**self._schema["$defs"], "_AgentMessage": self._schema["anyOf"][0]}
            root["$ref"] = ref
            validator = Draft202012Validator(root)
            self._validators[ref] = validator
        return validator

    def _check_jsonschema(self, ref: str, value: Any, what: str) -> list[str]:
        if self._schema is None:
            return []
        errors = sorted(self._jsonschema(ref).iter_errors(value), key=lambda e: list(e.path))
        return [f"{what}: schema.json {ref}: {e.message[:300]} at {list(e.path)}" for e in errors[:3]]

    def _check_sdk(self, model_name: str, value: Any, what: str) -> list[str]:
        model = getattr(self._sdk, model_name, None)
        if model is None:
            return []
        try:
            model.model_validate(value)
        except Exception as exc:
            return [f"{what}: acp.schema.{model_name}: {str(exc)[:400]}"]
        return []

    def check(self, msg: Any, sent_methods: dict[Any, str]) -> list[str]:
        """``sent_methods`` maps the ids of the client's requests to their methods."""
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
        problems = []
        if msg.get("jsonrpc") != "2.0":
            problems.append('missing "jsonrpc": "2.0"')
        has_id, has_method = "id" in msg, "method" in msg
        has_result, has_error = "result" in msg, "error" in msg
        problems += (
            self._check_jsonschema("#/$defs/_AgentMessage", msg, "message")
            if self._schema is not None
            else []
        )
        if has_method:
            if has_result or has_error:
                problems.append("a request/notification carrying result or error")
            method = msg["method"]
            params = msg.get("params")
            if has_id:
                name = _AGENT_TO_CLIENT.get(method)
                if name is not None:
                    problems += self._check_sdk(name, params, method)
                    problems += self._check_jsonschema(f"#/$defs/{name}", params, method)
                elif not str(method).startswith("_"):
                    problems.append(f"agent request of unknown method {method!r}")
            else:
                name = _AGENT_NOTIFICATIONS.get(method)
                if name is not None:
                    problems += self._check_sdk(name, params, method)
                    problems += self._check_jsonschema(f"#/$defs/{name}", params, method)
                    tag = (
                        (params or {}).get("update", {}).get("sessionUpdate")
                        if isinstance(params, dict)
                        else None
                    )
                    if tag not in _STABLE_UPDATES:
                        problems.append(f"session/update with a non-stable tag {tag!r}")
                elif not str(method).startswith(("_", "$/")):
                    problems.append(f"agent notification of unknown method {method!r}")
            return problems
        if not has_id:
            return [*problems, "neither request, notification nor response"]
        if has_result == has_error:
            return [*problems, "a response must carry exactly one of result and error"]
        if has_error:
            error = msg["error"]
            if (
                not isinstance(error, dict)
                or not isinstance(error.get("code"), int)
                or not isinstance(error.get("message"), str)
            ):
                problems.append(f"malformed error object {error!r}")
            return problems
        method = sent_methods.get(_id_key(msg["id"]))
        if method is None:
            return problems  # a response to an id we cannot attribute (checked by the scenario)
        names = _CLIENT_TO_AGENT.get(method)
        if names is not None:
            result = msg["result"]
            if not isinstance(result, dict):
                problems.append(f"{method} result must be an object, got {json.dumps(result)[:80]}")
            problems += self._check_sdk(names[1], result, f"{method} result")
            problems += self._check_jsonschema(f"#/$defs/{names[1]}", result, f"{method} result")
        return problems


def _id_key(value: Any) -> Any:
    # 1 and 1.0 and True must not collide with each other: key on type and value.
    return (type(value).__name__, value)
