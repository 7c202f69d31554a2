"""The one pydantic base class of the wire layer and the dump helper.

Every ACP model derives from `WireModel`: snake_case attributes, camelCase JSON keys, `_meta` kept as
`field_meta`, unknown keys ignored on input. Schemas build lazily (`defer_build=True`) so importing the
model modules stays cheap; the first validation of a model pays for its schema.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["JsonObject", "RequestId", "WireModel", "dump"]

RequestId: TypeAlias = int | str | None
"""A JSON-RPC id exactly as sent: integer, string, or null (the ACP schema allows null)."""

JsonObject: TypeAlias = dict[str, Any]


class WireModel(BaseModel):
    """Base of every ACP wire model."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        defer_build=True,
    )

    field_meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def dump(model: BaseModel) -> dict[str, Any]:
    """Wire JSON of a model: camelCase keys, `None` fields left out, JSON-safe values."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
