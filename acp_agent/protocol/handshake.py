"""A pydantic-free reading of `initialize` params, for answering `initialize` fast at start-up.

Importing pydantic and the models costs ~90 ms, more than the start-up budget allows before the first
answer; `parse_initialize` needs neither. It applies the same rules as `models.InitializeRequest`
(strict uint16 `protocolVersion`; omitted capabilities = unsupported) and is lenient with malformed
optional capability fields (treated as not advertised, as the schema's `x-deserialize-default-on-error`
suggests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from .errors import RpcError
from .jsonvalue import as_object

__all__ = ["ClientHandshake", "parse_initialize"]


@dataclass(frozen=True, slots=True)
class ClientHandshake:
    """What the client told us in `initialize`."""

    protocol_version: int
    fs_read_text_file: bool = False
    fs_write_text_file: bool = False
    terminal: bool = False
    auth_terminal: bool = False
    boolean_config_options: bool = False
    elicitation_form: bool = False
    elicitation_url: bool = False
    client_name: str | None = None
    client_version: str | None = None
    client_title: str | None = None
    capabilities_meta: dict[str, Any] = field(default_factory=lambda: {})
    """`clientCapabilities._meta` (e.g. Zed's `terminal_output`), or `{}`."""


def _flag(value: Any) -> bool:
    return value is True


def _present(value: Any) -> bool:
    return isinstance(value, dict)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_initialize(params: Any) -> ClientHandshake:
    """Read `initialize` params; raises `RpcError` (-32602) for a missing or invalid `protocolVersion`
    or non-object params."""
    if not isinstance(params, dict):
        raise RpcError.invalid_params("invalid params: expected an object")
    fields = cast(dict[str, Any], params)
    if "protocolVersion" not in fields:
        raise RpcError.invalid_params("invalid params: protocolVersion: field required")
    version = fields["protocolVersion"]
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 65535:
        raise RpcError.invalid_params("invalid params: protocolVersion: expected an integer from 0 to 65535")
    capabilities = as_object(fields.get("clientCapabilities"))
    fs = as_object(capabilities.get("fs"))
    session = as_object(capabilities.get("session"))
    config_options = as_object(session.get("configOptions"))
    elicitation = as_object(capabilities.get("elicitation"))
    info = as_object(fields.get("clientInfo"))
    return ClientHandshake(
        protocol_version=version,
        fs_read_text_file=_flag(fs.get("readTextFile")),
        fs_write_text_file=_flag(fs.get("writeTextFile")),
        terminal=_flag(capabilities.get("terminal")),
        auth_terminal=_flag(as_object(capabilities.get("auth")).get("terminal")),
        boolean_config_options=_present(config_options.get("boolean")),
        elicitation_form=_present(elicitation.get("form")),
        elicitation_url=_present(elicitation.get("url")),
        client_name=_text(info.get("name")),
        client_version=_text(info.get("version")),
        client_title=_text(info.get("title")),
        capabilities_meta=as_object(capabilities.get("_meta")),
    )
