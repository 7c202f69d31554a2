"""A session works only in absolute, existing directories: through the real ``acp-agent`` process,
``session/new``, ``session/load`` and ``session/resume`` refuse any other ``cwd`` or
``additionalDirectories`` entry with -32602 naming the field, and the process goes on answering."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.acp_client import AcpClient, spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"]), pytest.mark.process]


def _places(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    project.mkdir()
    file = tmp_path / "notes.txt"
    file.write_text("a file, not a folder")
    return {"project": project, "file": file, "missing": tmp_path / "gone", "under_file": file / "sub"}


BAD = [
    ("file", "not a directory"),
    ("missing", "no such directory"),
    ("under_file", "no such directory"),
]


async def _error(client: AcpClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answer = await client.response(await client.send_request(method, params))
    assert "error" in answer, answer
    return answer["error"]


@pytest.mark.parametrize(("place", "why"), BAD)
async def test_session_new_refuses_a_cwd_that_is_not_an_existing_directory(
    anyio_backend: str, tmp_path: Path, place: str, why: str
) -> None:
    places = _places(tmp_path)
    async with spawned_agent(tmp_path / "home", places["project"]) as client:
        await client.initialize()
        error = await _error(client, "session/new", {"cwd": str(places[place]), "mcpServers": []})
        assert error["code"] == -32602
        assert error["message"] == f"invalid params: cwd: {why}: {places[place]}"
        assert await client.new_session(str(places["project"]))  # the process goes on


async def test_session_new_names_the_additional_directory_that_is_not_one(
    anyio_backend: str, tmp_path: Path
) -> None:
    places = _places(tmp_path)
    async with spawned_agent(tmp_path / "home", places["project"]) as client:
        await client.initialize()
        params = {
            "cwd": str(places["project"]),
            "mcpServers": [],
            "additionalDirectories": [str(tmp_path), str(places["file"])],
        }
        error = await _error(client, "session/new", params)
        assert error == {
            "code": -32602,
            "message": f"invalid params: additionalDirectories.1: not a directory: {places['file']}",
        }
        relative = await _error(client, "session/new", {**params, "additionalDirectories": ["lib"]})
        assert relative["message"] == "invalid params: additionalDirectories.0: must be an absolute path"
        assert (await client.call("session/list", {}))["sessions"] == []  # nothing was created


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_load_and_resume_refuse_a_cwd_or_directory_that_is_gone(
    anyio_backend: str, tmp_path: Path, method: str
) -> None:
    places = _places(tmp_path)
    async with spawned_agent(tmp_path / "home", places["project"]) as client:
        await client.initialize()
        sid = await client.new_session(str(places["project"]))
        base: dict[str, Any] = {"sessionId": sid, "cwd": str(places["project"]), "mcpServers": []}
        error = await _error(client, method, {**base, "cwd": str(places["missing"])})
        assert error == {
            "code": -32602,
            "message": f"invalid params: cwd: no such directory: {places['missing']}",
        }
        error = await _error(client, method, {**base, "additionalDirectories": [str(places["file"])]})
        assert error["code"] == -32602 and error["message"].startswith(
            "invalid params: additionalDirectories.0:"
        )
        assert await client.call(method, base) is not None  # a valid place still opens it
