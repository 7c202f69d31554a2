"""Messages and their parts: what the conversation is made of, and how it serialises."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._errors import HarnessUsageError
from ._kinds import FinishReason, Role
from ._usage import Usage

__all__ = [
    "Image",
    "Message",
    "Part",
    "Reasoning",
    "Text",
    "ToolCall",
    "ToolResult",
    "part_from_dict",
]


@dataclass(frozen=True, slots=True)
class Text:
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class Image:
    """An image, base64 ``data`` with its ``media_type`` (``image/png``), or a ``url``."""

    data: str | None = None
    media_type: str = "image/png"
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "image", "mediaType": self.media_type}
        if self.data is not None:
            d["data"] = self.data
        if self.url is not None:
            d["url"] = self.url
        return d


@dataclass(frozen=True, slots=True)
class Reasoning:
    """The model's reasoning. ``signature`` (Anthropic) and ``redacted`` data are sent back unchanged."""

    text: str
    signature: str | None = None
    redacted: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "reasoning", "text": self.text}
        if self.signature is not None:
            d["signature"] = self.signature
        if self.redacted is not None:
            d["redacted"] = self.redacted
        return d


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tool_call", "id": self.id, "name": self.name, "input": self.input}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of one call as the model sees it; ``name`` repeats the tool name for providers that want it."""

    call_id: str
    content: tuple[Text | Image, ...]
    error: bool = False
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "tool_result",
            "callId": self.call_id,
            "content": [p.to_dict() for p in self.content],
            "error": self.error,
        }
        if self.name is not None:
            d["name"] = self.name
        return d

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))


Part = Text | Image | Reasoning | ToolCall | ToolResult


def part_from_dict(data: dict[str, Any]) -> Part:
    kind = data.get("type")
    if kind == "text":
        return Text(str(data["text"]))
    if kind == "image":
        return Image(data.get("data"), str(data.get("mediaType", "image/png")), data.get("url"))
    if kind == "reasoning":
        return Reasoning(str(data.get("text", "")), data.get("signature"), data.get("redacted"))
    if kind == "tool_call":
        return ToolCall(str(data["id"]), str(data["name"]), dict(data.get("input") or {}))
    if kind == "tool_result":
        content: list[Text | Image] = []
        for raw in data.get("content", []):
            p = part_from_dict(raw)
            if not isinstance(p, Text | Image):
                raise HarnessUsageError(f"a tool result holds text and images only, not {raw.get('type')!r}")
            content.append(p)
        return ToolResult(
            str(data["callId"]), tuple(content), bool(data.get("error", False)), data.get("name")
        )
    raise HarnessUsageError(f"unknown part type {kind!r}")


@dataclass(frozen=True, slots=True)
class Message:
    """One message. Assistant messages carry their ``id``, ``usage`` and ``finish`` once complete."""

    role: Role
    parts: tuple[Part, ...]
    id: str | None = None
    usage: Usage | None = None
    finish: FinishReason | None = None
    meta: dict[str, Any] = field(default_factory=dict[str, Any], compare=False)

    @classmethod
    def user(cls, content: str | Part | Iterable[Part]) -> Message:
        return cls(Role.USER, _parts(content))

    @classmethod
    def assistant(cls, content: str | Part | Iterable[Part], *, id: str | None = None) -> Message:
        return cls(Role.ASSISTANT, _parts(content), id=id)

    @property
    def text(self) -> str:
        """The visible text of the message, parts joined."""
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Reasoning))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p for p in self.parts if isinstance(p, ToolResult)]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role.value, "content": [p.to_dict() for p in self.parts]}
        if self.id is not None:
            d["id"] = self.id
        if self.usage is not None:
            d["usage"] = self.usage.to_dict()
        if self.finish is not None:
            d["finish"] = self.finish.value
        if self.meta:
            d["meta"] = self.meta
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        usage = data.get("usage")
        finish = data.get("finish")
        return cls(
            Role(data["role"]),
            tuple(part_from_dict(p) for p in data.get("content", [])),
            id=data.get("id"),
            usage=Usage.from_dict(usage) if usage is not None else None,
            finish=FinishReason(finish) if finish is not None else None,
            meta=dict(data.get("meta") or {}),
        )


def _parts(content: str | Part | Iterable[Part]) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(content),)
    if isinstance(content, Text | Image | Reasoning | ToolCall | ToolResult):
        return (content,)
    parts = tuple(content)
    for p in parts:
        if not isinstance(p, Text | Image | Reasoning | ToolCall | ToolResult):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise HarnessUsageError(f"not a message part: {p!r}")
    return parts


def messages_to_dicts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]
