"""Every message an agent writes, checked: the JSON-RPC 2.0 envelope, then the ACP schema shipped in this
package (``schema.json``, the stable v1 schema, or ``schema.unstable.json`` for a run that uses unstable
parts): the whole message, the params of agent requests and notifications, and the result of each response
to a request the kit sent (matched by id). Which definition checks which method is read off the schema's own
``x-method`` / ``x-side`` tags, so a newer schema brings its methods with it."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from .json_types import is_array, is_object

__all__ = ["SCHEMA_VERSION", "MessageValidator", "MethodTables", "id_key", "load_schema", "method_tables"]

SCHEMA_VERSION = "v1 (TypeScript SDK 2.4.0, 2026-11-02)"
"""The ACP schema release ``schema/schema.json`` and ``schema/schema.unstable.json`` were copied from
(``@agentclientprotocol/sdk`` 2.4.0's ``schema/v1/``)."""

SCHEMA_FILES = {False: "schema.json", True: "schema.unstable.json"}


@cache
def _load(unstable: bool) -> dict[str, Any]:
    text = (
        resources.files("acp_conformance")
        .joinpath("schema", SCHEMA_FILES[unstable])
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def load_schema(unstable: bool = False) -> dict[str, Any]:
    """The stable schema (or the unstable one). Shared: do not mutate it."""
    return _load(unstable)


class MethodTables:
    """Which schema definition checks what the agent writes, per method: the result of a response to a
    client request (``responses``), the params of an agent request (``requests``) and of an agent
    notification (``notifications``)."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.responses: dict[str, str] = {}
        self.requests: dict[str, str] = {}
        self.notifications: dict[str, str] = {}
        for name, body in defs.items():
            method, side = body.get("x-method"), body.get("x-side")
            if not isinstance(method, str):
                continue
            if name.endswith("Response") and side == "agent":
                self.responses[method] = name  # an answer the agent gives
            elif name.endswith("Request") and side == "client":
                self.requests[method] = name  # a request the client handles
            elif name.endswith("Notification") and (side == "client" or side == "protocol"):
                self.notifications[method] = name
        # A provider's `mcp/message` notification (MCP over ACP) flows either way; the agent sends one
        # for an inner MCP notification to a client-provided server.
        if "MessageMcpNotification" in defs:
            self.notifications["mcp/message"] = "MessageMcpNotification"


@cache
def method_tables(unstable: bool = False) -> MethodTables:
    return MethodTables(load_schema(unstable)["$defs"])


def id_key(value: Any) -> tuple[str, Any]:
    """1, 1.0 and True must not collide with each other: key on type and value."""
    return (type(value).__name__, value)


class MessageValidator:
    """``check(msg, sent_methods)`` returns the problems found (empty = valid). ``unstable``: check against
    ``schema.unstable.json`` (a run that advertises or calls unstable parts)."""

    def __init__(self, unstable: bool = False) -> None:
        self.unstable = unstable
        self._schema = load_schema(unstable)
        self._tables = method_tables(unstable)
        self._file = SCHEMA_FILES[unstable]
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
        return [f"{what}: {self._file} {ref}: {e.message[:300]} at {list(e.path)}" for e in errors[:3]]

    def check(self, msg: Any, sent_methods: dict[Any, str]) -> list[str]:
        """``sent_methods`` maps the ids of the kit's requests (``id_key``) to their methods."""
        if is_array(msg):  # the answer to a batch: a non-empty array of responses
            if not msg:
                return ["an empty array"]
            problems: list[str] = []
            for item in msg:
                if not is_object(item) or "method" in item:
                    problems.append("a batch answer may only hold responses")
                else:
                    problems += self.check(item, sent_methods)
            return problems
        if not is_object(msg):
            return ["not a JSON object"]
        obj = msg
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
        name = self._tables.responses.get(method) if method is not None else None
        result = obj["result"]
        if method == "initialize" and is_object(result) and result.get("protocolVersion") != 1:
            return (
                problems  # the agent chose another protocol version: its answer follows that version's schema
            )
        if name is not None:
            if not is_object(result):
                problems.append(f"{method} result must be an object, got {json.dumps(result)[:80]}")
            problems += self._check(f"#/$defs/{name}", result, f"{method} result")
        return problems

    def _check_call(self, obj: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        if "result" in obj or "error" in obj:
            problems.append("a request/notification carrying result or error")
        method = obj["method"]
        params = obj.get("params")
        table = self._tables.requests if "id" in obj else self._tables.notifications
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
    result = obj["result"]
    return is_object(result) and result.get("protocolVersion") != 1
