"""Content blocks (`ContentBlock`, discriminated on `type`) and embedded resources."""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from ._wire import WireModel

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "Role",
    "TextContent",
    "TextResourceContents",
]

Role: TypeAlias = Literal["assistant", "user"]


class Annotations(WireModel):
    audience: list[Role] | None = None
    last_modified: str | None = None
    priority: float | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    """Base64."""
    mime_type: str
    uri: str | None = None
    annotations: Annotations | None = None


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    mime_type: str | None = None
    title: str | None = None
    description: str | None = None
    size: int | None = None
    annotations: Annotations | None = None


class TextResourceContents(WireModel):
    uri: str
    text: str
    mime_type: str | None = None


class BlobResourceContents(WireModel):
    uri: str
    blob: str
    """Base64."""
    mime_type: str | None = None


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None


ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
