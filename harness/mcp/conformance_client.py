"""A client for the MCP conformance suite (``@modelcontextprotocol/conformance``), built on ``harness.mcp``.

The suite runs ``python -m harness.mcp.conformance_client <server url>`` with ``MCP_CONFORMANCE_SCENARIO``
(and, for auth scenarios, ``MCP_CONFORMANCE_CONTEXT``) set. Exit status 0 when the scenario's calls
worked, 1 otherwise. Logs go to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

import anyio

from ._client import import_mcp
from ._elicit import Elicitation, ElicitationReply, schema_defaults
from ._server import McpServer
from ._status import ServerStatus

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["main"]

_log = logging.getLogger("harness.mcp.conformance")

# The tool each basic scenario must call (others just connect and list tools).
_SCENARIO_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


async def _accept_defaults(request: Elicitation) -> ElicitationReply:
    """Accept a form with the defaults the schema gives (SEP-1034)."""
    return ElicitationReply("accept", schema_defaults(request.schema))


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


class _Storage:
    """The OAuth tokens and client registration of one run, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info


def _auth_provider(scenario: str, url: str) -> Any:
    """The httpx2 auth for an ``auth/*`` scenario (mcp's OAuth providers)."""
    ctx = _context()
    storage = _Storage()
    if scenario in ("auth/client-credentials-jwt", "auth/client-credentials-basic"):
        return _client_credentials(scenario, url, ctx, storage)
    return _authorization_code(url, ctx, storage)


def _client_credentials(scenario: str, url: str, ctx: dict[str, Any], storage: _Storage) -> Any:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    if scenario == "auth/client-credentials-jwt":
        params = SignedJWTParameters(
            issuer=ctx["client_id"],
            subject=ctx["client_id"],
            signing_algorithm=ctx.get("signing_algorithm", "ES256"),
            signing_key=ctx["private_key_pem"],
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=storage,
            client_id=ctx["client_id"],
            assertion_provider=params.create_assertion_provider(),
        )
    return ClientCredentialsOAuthProvider(
        server_url=url, storage=storage, client_id=ctx["client_id"], client_secret=ctx["client_secret"]
    )


def _authorization_code(url: str, ctx: dict[str, Any], storage: _Storage) -> Any:
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

    redirect = "http://localhost:3000/callback"
    if ctx.get("client_id"):
        secret = ctx.get("client_secret")
        storage.info = OAuthClientInformationFull(
            client_id=ctx["client_id"],
            client_secret=secret,
            redirect_uris=[redirect],  # pyright: ignore[reportArgumentType]
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    got: dict[str, str | None] = {}

    async def on_redirect(authorization_url: str) -> None:
        # The mock authorization server approves at once: follow its redirect and keep the code.
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        query = parse_qs(urlparse(response.headers.get("location", "")).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the redirect from {authorization_url}")
        got["code"] = query["code"][0]
        got["state"] = query.get("state", [None])[0]
        got["iss"] = query.get("iss", [None])[0]

    async def on_callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=got["code"] or "", state=got.get("state"), iss=got.get("iss"))

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="acp-agent conformance client",
            redirect_uris=[redirect],  # pyright: ignore[reportArgumentType]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
        client_metadata_url="https://conformance-test.local/client-metadata.json",
    )


async def run(scenario: str, url: str) -> int:
    await import_mcp()
    mode = "auto" if os.environ.get("CONF_MODE") == "auto" else "legacy"
    auth = _auth_provider(scenario, url) if scenario.startswith("auth/") else None
    server = McpServer.http(
        "conformance",
        url,
        mode=mode,
        call_timeout=25.0,
        connect_timeout=25.0,
        elicitation_handler=_accept_defaults,
        http_auth=auth,
    )
    async with server:
        if server.status != ServerStatus.READY:
            _log.error("could not connect: %s", server.state.cause)
            return 1
        tools = {t.original_name: t for t in await server.tools()}
        _log.info("tools: %s", sorted(tools))
        name, args = _SCENARIO_CALLS.get(scenario, ("", {}))
        if not name and scenario.startswith("auth/") and tools:
            name = sorted(tools)[0]  # an authorised call, as the auth scenarios expect
        if name:
            result = await server.call_tool(name, args)
            _log.info("%s -> %s", name, result.as_text()[:500])
            if result.error:
                return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    if not args:
        _log.error("usage: python -m harness.mcp.conformance_client <server url>")
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    return anyio.run(run, scenario, args[-1])


if __name__ == "__main__":
    sys.exit(main())
