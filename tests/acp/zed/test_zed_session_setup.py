"""What Zed does around a new thread, against the real ``acp-agent``: its saved model applied (the list
is in the ``session/new`` answer, from a per-endpoint cache, never a network wait), any served model
accepted, long lists grouped; the first run without a model, through the ``terminal`` auth method and
``acp-agent setup``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply, Stall
from tests.acp.zed.zed_client import Thread, zed
from tests.providers.sse_fixtures import fixture

pytestmark = [pytest.mark.anyio, pytest.mark.process]

pexpect = pytest.importorskip("pexpect", reason="pexpect (dev extra) drives acp-agent setup through a pty")

ACP_AGENT = Path(sys.executable).parent / "acp-harness-agent"


def _models(*names: str) -> Reply:
    return Reply.json(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})


def _env(server: FakeServer) -> dict[str, str]:
    return {
        "ACP_AGENT_PROVIDER": "openai",
        "ACP_AGENT_BASE_URL": server.url + "/v1",
        "ACP_AGENT_MODEL": "m-a",
        "ACP_AGENT_API_KEY": "sk-test",
    }


def _model_option(thread: Thread) -> dict[str, Any]:
    return next(o for o in thread.config_options if o["id"] == "model")


def _flat(option: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for item in option["options"]:
        out.extend([item["value"]] if "value" in item else [v["value"] for v in item["options"]])
    return out


async def test_zeds_saved_model_is_listed_and_applied_from_the_cache_without_waiting(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    with FakeServer() as server:
        server.route("GET", "/v1/models", _models("m-a", "m-b", "gpt-4.1"))
        async with zed(project, home, _env(server)) as client:
            await client.initialize()
            client.default_config_options = {"model": "m-b"}
            first, _ = await client.new_thread()
            # Never listed before: only the configured model, so Zed cannot apply its default yet ...
            assert _model_option(first)["currentValue"] == "m-a"
            # ... the list comes right after the answer, with each known model's context window.
            await client.until(lambda: "m-b" in _flat(_model_option(first)))
            gpt = next(v for v in _model_option(first)["options"] if v["value"] == "gpt-4.1")
            assert gpt["description"] == "1M tokens of context"
            second, _ = await client.new_thread()
            assert _model_option(second)["currentValue"] == "m-b"  # now the saved pick holds
        assert json.loads((home / "cache" / "models.json").read_text())  # kept for the next process

        stall = Stall()
        server.route("GET", "/v1/models", Reply(200, {"content-type": "application/json"}, [stall]))
        async with zed(project, home, _env(server)) as client:
            await client.initialize()
            client.default_config_options = {"model": "m-b"}
            with anyio.fail_after(10):  # the endpoint hangs: session/new does not wait for it
                fresh, _ = await client.new_thread()
            assert _model_option(fresh)["currentValue"] == "m-b"  # from the cache file, first thread
            stall.release.set()
            assert client.errors == []


async def test_any_model_the_server_serves_is_accepted_and_others_are_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer() as server:
        server.route("GET", "/v1/models", _models("m-a"))
        async with zed(project, tmp_path / "home", _env(server)) as client:
            await client.initialize()
            thread, _ = await client.new_thread()
            server.route("GET", "/v1/models", _models("m-a", "m-new"))  # the server gained a model
            sid = thread.session_id
            ok = await client.call(
                "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "m-new"}
            )
            assert next(o for o in ok["configOptions"] if o["id"] == "model")["currentValue"] == "m-new"
            refused = await client.request(
                "session/set_config_option", {"sessionId": sid, "configId": "model", "value": "nope"}
            )
            assert refused["error"]["code"] == -32602 and "m-new" in refused["error"]["message"]


async def test_a_long_model_list_is_grouped_by_vendor(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    names = [f"{vendor}/model-{i}" for vendor in ("anthropic", "openai", "qwen") for i in range(6)]
    with FakeServer() as server:
        server.route("GET", "/v1/models", _models(*names))
        async with zed(project, tmp_path / "home", _env(server)) as client:
            await client.initialize()
            thread, _ = await client.new_thread()
            await client.until(lambda: len(_flat(_model_option(thread))) > 10)
            groups = [g.get("group") for g in _model_option(thread)["options"] if "group" in g]
            assert {"anthropic", "openai", "qwen"} <= set(groups)


async def test_the_first_run_without_a_model_runs_setup_in_zeds_terminal_then_opens_the_thread(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    with FakeServer() as server:
        server.route("GET", "/v1/models", _models("qwen3-8b", "gemma"))
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(fixture("chat_openai_text.sse")),
        )
        async with zed(project, home, {}) as client:
            init = await client.initialize()
            (method,) = init["authMethods"]
            assert method["type"] == "terminal" and method["args"] == ["setup"]
            answer = await client.request("session/new", {"cwd": str(project), "mcpServers": []})
            assert answer["error"]["code"] == -32000  # auth_required: Zed shows the set-up button

            # Zed runs the agent's command with the method's args in its terminal.
            env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(home / "xdg"), "PATH": "/usr/bin:/bin"}
            setup = pexpect.spawn(str(ACP_AGENT), method["args"], env=env, encoding="utf-8", timeout=30)
            try:
                setup.expect_exact("Provider [1]: ")
                setup.sendline("4")  # a local OpenAI-compatible server
                setup.expect_exact("Base URL")
                setup.sendline(server.url + "/v1")
                setup.expect_exact("API key")
                setup.sendline("")
                setup.expect_exact("2) qwen3-8b")
                setup.sendline("2")
                setup.expect_exact("Wrote")
                setup.expect(pexpect.EOF)
            finally:
                setup.close(force=True)
            assert setup.exitstatus == 0, setup.before
            written = (home / "xdg" / "acp-agent" / "config.toml").read_text()
            assert 'provider = "openai"' in written and 'model = "qwen3-8b"' in written
            assert f'base_url = "{server.url}/v1"' in written

            thread, _ = await client.new_thread()  # Zed retries: the same process is now configured
            assert _model_option(thread)["currentValue"] == "qwen3-8b"
            assert client.errors == []


async def test_debug_logging_records_zeds_initialize_with_its_capabilities(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (tmp_path / "s.json").write_text("[]")
    env = {
        "ACP_AGENT_LOG_LEVEL": "debug",
        "ACP_AGENT_PROVIDER": "script",
        "ACP_AGENT_SCRIPT": str(tmp_path / "s.json"),
    }
    async with zed(project, home, env) as client:
        await client.initialize()  # answered before logging starts (the early start), logged after
    log = (tmp_path / "home-stderr.txt").read_text()
    assert "initialize: client zed 0.230.0, protocol 1" in log
    logged = next(line for line in log.splitlines() if "initialize: {" in line)
    assert '"terminal-auth": true' in logged and '"configOptions"' in logged
