"""Elicitation: what a server asks the user mid-call, and the host's answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._pause import Question

__all__ = ["Elicitation", "ElicitationHandler", "ElicitationReply", "schema_defaults"]


@dataclass(frozen=True, slots=True)
class Elicitation:
    """A server's request for user input: a form (``schema``: flat JSON schema) or a ``url`` to open."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: Mapping[str, Any] = field(default_factory=dict[str, Any])
    url: str | None = None

    def questions(self) -> list[Question]:
        """The form as harness ``Question``s, one per field (an enum becomes ``choices``); for a URL, one
        question whose answer is "open" or "decline"."""
        if self.mode == "url":
            return [Question("url", f"{self.message}\n{self.url}", ("open", "decline"))]
        out: list[Question] = []
        props: Mapping[str, Any] = self.schema.get("properties") or {}
        for key, prop in props.items():
            title = str(prop.get("title") or key)
            desc = prop.get("description")
            text = f"{title}: {desc}" if desc else title
            choices = prop.get("enum")
            if prop.get("type") == "boolean":
                choices = ["true", "false"]
            out.append(Question(str(key), text, tuple(str(c) for c in choices) if choices else None))
        return out


@dataclass(frozen=True, slots=True)
class ElicitationReply:
    """``accept`` with ``content`` (form values by field), ``decline``, or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @classmethod
    def decline(cls) -> ElicitationReply:
        return cls("decline")


ElicitationHandler = Callable[[Elicitation], Awaitable[ElicitationReply]]


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every top-level field that has one (SEP-1034: a client fills them in)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    return {k: p["default"] for k, p in props.items() if isinstance(p, Mapping) and "default" in p}
