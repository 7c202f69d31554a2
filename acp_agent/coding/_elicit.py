"""MCP servers' elicitations, asked of the user through the editor (``SessionMcp.elicitation_handler``).

A form goes to the editor as ``elicitation/create`` (form mode, the server's schema as is) when the client
advertised ``elicitation.form``; a URL request as ``elicitation/create`` (url mode) when it advertised
``elicitation.url``. Otherwise the permission dialog asks: one request per field that has choices (enums,
booleans; one option per choice, then Decline), fields without choices taking their default; a form with
no field to ask, or a URL, is one accept/decline request. A required free-form field without a default
cannot be asked that way: the elicitation is declined. The request names the server and, when one is
running, the server's tool call it came from (``toolCallId``).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from harness import Decision, Question

from .permissions._gate import Cancelled

if TYPE_CHECKING:
    from harness.mcp import Elicitation, ElicitationReply

    from .permissions._gate import PermissionGate, SessionLink

__all__ = ["McpElicitor"]

log = logging.getLogger(__name__)

_ids = itertools.count(1)


class McpElicitor:
    """An ``ElicitationHandler``: asks the editor, answers the server (see the module docstring)."""

    def __init__(self, gate: PermissionGate, link: SessionLink) -> None:
        self._gate = gate
        self._link = link

    async def __call__(self, request: Elicitation) -> ElicitationReply:
        from harness.mcp import ElicitationReply

        call_id = self._call_of(request.server)
        try:
            if request.mode == "url":
                return await self._url(request, call_id)
            if self._gate.can_elicit("form"):
                return await self._form(request, call_id)
            return await self._by_permission(request, call_id)
        except Cancelled:
            return ElicitationReply("cancel")

    def _call_of(self, server: str) -> str | None:
        """The running tool call of ``server`` (the one that is asking), if any."""
        running = self._link.running
        mcp = [cid for cid, name in running.items() if name.startswith("mcp__")]
        exact = [cid for cid in mcp if running[cid].startswith(f"mcp__{server}__")]
        if exact:
            return exact[-1]
        return mcp[-1] if len(mcp) == 1 else None

    async def _form(self, request: Elicitation, call_id: str | None) -> ElicitationReply:
        from harness.mcp import ElicitationReply

        schema = dict(request.schema) or {"type": "object", "properties": {}}
        schema.setdefault("type", "object")
        params: dict[str, Any] = {
            "mode": "form",
            "message": _message(request),
            "requestedSchema": schema,
        }
        if call_id is not None:
            params["toolCallId"] = call_id
        answer = await self._gate.elicit(params)
        if answer is None:
            return ElicitationReply.decline()
        action = answer.get("action")
        if action == "accept":
            content = answer.get("content")
            return ElicitationReply(
                "accept", cast("dict[str, Any]", content) if isinstance(content, dict) else {}
            )
        if action == "cancel":
            return ElicitationReply("cancel")
        return ElicitationReply.decline()

    async def _url(self, request: Elicitation, call_id: str | None) -> ElicitationReply:
        from harness.mcp import ElicitationReply

        if self._gate.can_elicit("url") and request.url:
            params: dict[str, Any] = {
                "mode": "url",
                "elicitationId": f"mcp-{uuid.uuid4().hex}",
                "url": request.url,
                "message": _message(request),
            }
            if call_id is not None:
                params["toolCallId"] = call_id
            answer = await self._gate.elicit(params)
            action = answer.get("action") if answer is not None else "decline"
            if action in ("accept", "cancel"):
                return ElicitationReply(action)
            return ElicitationReply.decline()
        # Never as a form (the spec forbids it for URLs): the user opens the link, shown in the request.
        text = f"{_message(request)}\n\nOpen this link yourself: {request.url}"
        chosen = await self._gate.request_permission(
            self._tool_call(call_id, request, text),
            [
                {"optionId": "accept", "name": "I will open the link", "kind": "allow_once"},
                {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
            ],
        )
        return ElicitationReply("accept") if chosen == "accept" else ElicitationReply.decline()

    async def _by_permission(self, request: Elicitation, call_id: str | None) -> ElicitationReply:
        from harness.mcp import ElicitationReply, schema_defaults

        props = _props(request.schema)
        required = set(_strings(request.schema.get("required")))
        content: dict[str, Any] = schema_defaults(request.schema)
        asked = False
        for question in request.questions():
            if question.choices is None:
                if question.id not in content and question.id in required:
                    log.info(
                        "MCP server %s asks for %r, which the editor cannot ask (no elicitation); declined",
                        request.server,
                        question.id,
                    )
                    return ElicitationReply.decline()
                continue
            text = f"{_message(request)}\n\n{question.text}"
            shown = Question(question.id, text, question.choices)
            answer = await self._gate.ask_by_permission(self._tool_call(call_id, request, text), shown)
            if isinstance(answer, Decision):
                return ElicitationReply.decline()
            content[question.id] = _typed(props.get(question.id) or {}, question.choices, str(answer))
            asked = True
        if not asked:
            chosen = await self._gate.request_permission(
                self._tool_call(call_id, request, _message(request)),
                [
                    {"optionId": "accept", "name": "Accept", "kind": "allow_once"},
                    {"optionId": "decline", "name": "Decline", "kind": "reject_once"},
                ],
            )
            if chosen != "accept":
                return ElicitationReply.decline()
        return ElicitationReply("accept", content)

    def _tool_call(self, call_id: str | None, request: Elicitation, title: str) -> dict[str, Any]:
        return {
            "toolCallId": call_id or f"elicitation_{next(_ids)}",
            "title": title,
            "status": "pending",
            "rawInput": {"server": request.server, "message": request.message},
        }


def _message(request: Elicitation) -> str:
    return f"MCP server `{request.server}` asks: {request.message}"


def _props(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    raw = schema.get("properties")
    if not isinstance(raw, Mapping):
        return {}
    items = cast("Mapping[str, Any]", raw)
    return {str(k): cast("Mapping[str, Any]", v) for k, v in items.items() if isinstance(v, Mapping)}


def _strings(value: Any) -> list[str]:
    items: list[Any] = cast("list[Any]", value) if isinstance(value, list) else []
    return [str(v) for v in items]


def _typed(prop: Mapping[str, Any], choices: tuple[str, ...], answer: str) -> Any:
    """The chosen string as the schema's type: a boolean, or the enum's own value (a number stays one)."""
    if prop.get("type") == "boolean":
        return answer == "true"
    enum = prop.get("enum")
    if isinstance(enum, list) and answer in choices:
        values = cast("list[Any]", enum)
        index = choices.index(answer)
        if index < len(values):
            return values[index]
    return answer
