"""Shorthand steps a scenario may use, expanded into plain ``send``/``expect`` steps before it runs.

- ``{"initialize": {"id": 0, "params": {...}, "capture": {...}}}``: ``initialize`` with protocol version 1,
  the scenario's client capabilities (its top-level ``"client"``, default ``{}``) and the kit's
  ``clientInfo``; expects a result with ``protocolVersion: 1``. When the profile names an ``auth_method``,
  ``authenticate`` follows.
- ``{"new_session": {"id": 1, "capture": "S", "params": {...}}}``: ``session/new`` in ``${CWD}`` with no MCP
  servers; the session id is captured under the given name.
- ``{"prompt": {"id": 2, "session": "${S}", "text": "hi" | "blocks": [...], "stop": "end_turn",
  "collect": "turn", "timeout_ms": N}}``: ``session/prompt``, then every message until its response, whose
  ``stopReason`` must be ``stop`` (any string when ``stop`` is ``"*"``).

``as``/``lenient``/``timeout_ms`` keys on a macro apply to the step that waits for the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CLIENT_INFO", "expand_macros"]

CLIENT_INFO = {"name": "acp-conformance", "title": "ACP conformance kit", "version": "0.1.0"}
_CARRIED = ("as", "lenient", "timeout_ms")


def _carry(spec: Mapping[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    for key in _CARRIED:
        if key in spec:
            step[key] = spec[key]
    return step


def _initialize(spec: Mapping[str, Any], client: Mapping[str, Any], auth_method: str) -> list[dict[str, Any]]:
    rid = spec.get("id", 0)
    params: dict[str, Any] = {
        "protocolVersion": 1,
        "clientCapabilities": dict(client),
        "clientInfo": CLIENT_INFO,
    }
    params.update(spec.get("params") or {})
    expect: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"protocolVersion": 1},
        "error": "<absent>",
    }
    steps = [
        {"send": {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}},
        _carry(spec, {"expect": expect, "capture": dict(spec.get("capture") or {})}),
    ]
    if auth_method:
        aid = f"auth-{rid}"
        steps.append(
            {
                "send": {
                    "jsonrpc": "2.0",
                    "id": aid,
                    "method": "authenticate",
                    "params": {"methodId": auth_method},
                }
            }
        )
        steps.append({"expect": {"id": aid, "result": "<object>"}})
    return steps


def _new_session(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    rid = spec.get("id", 1)
    params: dict[str, Any] = {"cwd": "${CWD}", "mcpServers": []}
    params.update(spec.get("params") or {})
    capture = spec.get("capture", "S")
    expect = {"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "<nonempty>"}, "error": "<absent>"}
    return [
        {"send": {"jsonrpc": "2.0", "id": rid, "method": "session/new", "params": params}},
        _carry(spec, {"expect": expect, "capture": {capture: "result.sessionId"} if capture else {}}),
    ]


def _prompt(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    rid = spec.get("id", 2)
    blocks = spec.get("blocks") or [{"type": "text", "text": spec.get("text", "Hello")}]
    params = {"sessionId": spec.get("session", "${S}"), "prompt": blocks}
    stop = spec.get("stop", "end_turn")
    until: dict[str, Any] = {"id": rid, "result": {"stopReason": "<string>" if stop == "*" else stop}}
    if "expect" in spec:
        until = dict(spec["expect"])
    wait: dict[str, Any] = {"expect_until": until}
    if "collect" in spec:
        wait["collect"] = spec["collect"]
    if "allow" in spec:
        wait["allow"] = spec["allow"]
    return [
        {"send": {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}},
        _carry(spec, wait),
    ]


def expand_macros(
    steps: Sequence[Mapping[str, Any]], *, client: Mapping[str, Any], auth_method: str = ""
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for step in steps:
        name = next((n for n in ("initialize", "new_session", "prompt") if n in step), None)
        if name is None:
            out.append(dict(step))
            continue
        spec: dict[str, Any] = {**(step[name] or {}), **{k: step[k] for k in _CARRIED if k in step}}
        if name == "initialize":
            out += _initialize(spec, client, auth_method)
        elif name == "new_session":
            out += _new_session(spec)
        else:
            out += _prompt(spec)
    return out
