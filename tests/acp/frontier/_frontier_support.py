"""The real ``acp-agent`` process against a local fake model server (Chat Completions over HTTP), and
every message it writes checked against ``schema.unstable.json``.

``frontier_agent(tmp_path, turns, capabilities)`` starts both and initializes the agent with the given
client capabilities; ``check_wire(client)`` validates every ``session/update`` the agent wrote (and
returns them); ``validate(defn, value)`` checks one value against a definition of the unstable schema.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.fake_model import FakeModel, Turn
from tests.acp_client import AcpClient, spawned_agent
from tests.conftest import ACP_UNSTABLE_SCHEMA as UNSTABLE_SCHEMA
from tests.conftest import require_shared

__all__ = ["Frontier", "check_wire", "frontier_agent", "model_messages", "validate"]

KEY = "sk-frontier-test-0123456789"
ZED_BETA: Mapping[str, Any] = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
    "session": {"configOptions": {"boolean": {}}, "compaction": {}, "notices": {}},
    "plan": {},
}
"""What Zed sends with its ACP beta flag, plus ``plan`` (the plan-operations RFD), files kept local."""


@cache
def _schema() -> dict[str, Any]:
    return json.loads(require_shared(UNSTABLE_SCHEMA).read_text())


def validate(defn: str, value: Any) -> None:
    import jsonschema

    schema = _schema()
    # jsonschema's validator classes are made at run time: pyright sees their methods as partly unknown.
    validator: Any = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{defn}", "$defs": schema["$defs"]})
    validator.validate(value)


def check_wire(client: AcpClient, session_id: str | None = None) -> list[dict[str, Any]]:
    """Every ``session/update`` so far (of ``session_id``), each validated as a ``SessionNotification``."""
    out: list[dict[str, Any]] = []
    for message in map(as_object, client.messages):
        if message.get("method") == "session/update":
            validate("SessionNotification", message["params"])
            if session_id is None or message["params"]["sessionId"] == session_id:
                out.append(message["params"]["update"])
    return out


def model_messages(model: FakeModel, index: int) -> list[dict[str, Any]]:
    """The chat messages of the ``index``th model request."""
    body = model.model_requests[index].json
    return list(body["messages"])


@dataclass
class Frontier:
    client: AcpClient
    model: FakeModel
    project: Path
    home: Path
    initialize: dict[str, Any]

    async def new_session(self, **extra: Any) -> dict[str, Any]:
        return await self.client.call("session/new", {"cwd": str(self.project), "mcpServers": [], **extra})

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.client.call("session/prompt", self.client.prompt_params(session_id, text))


@asynccontextmanager
async def frontier_agent(
    tmp_path: Path,
    turns: Sequence[Turn],
    capabilities: Mapping[str, Any] | None = None,
    *,
    on_request: Callable[[str, Any], Awaitable[Any]] | None = None,
    environ: Mapping[str, str] | None = None,
    client_info: Mapping[str, Any] | None = None,
    title: str = "",
    side_models: Sequence[str] = (),
) -> AsyncGenerator[Frontier]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    home = tmp_path / "home"
    with FakeModel(turns, model="local-model", title=title, side_models=side_models) as model:
        env = {
            "ACP_AGENT_PROVIDER": "openai",
            "ACP_AGENT_BASE_URL": model.url + "/v1",
            "ACP_AGENT_MODEL": "local-model",
            "ACP_AGENT_API_KEY": KEY,
            "ACP_AGENT_LOG_LEVEL": "debug",
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            **(environ or {}),
        }
        async with spawned_agent(home, project, env, on_request) as client:
            params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": dict(capabilities or {})}
            if client_info is not None:
                params["clientInfo"] = dict(client_info)
            answer = await client.call("initialize", params)
            validate("InitializeResponse", answer)
            yield Frontier(client, model, project, home, answer)
