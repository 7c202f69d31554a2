"""Through the real process: the context window from each source (the server's model list as vLLM,
llama.cpp, OpenRouter and Ollama answer it; the configuration) reaches ``usage_update.size``, the model
picker and compaction; an unknown window is told once how to declare; Ollama's small default warned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.fake_model import FakeServer, Reply
from tests.acp.models._support import Agent, chat_text, model_option, models_agent
from tests.providers.model_lists import (
    route_litellm,
    route_llamacpp,
    route_ollama,
    route_openrouter,
    route_vllm,
)

pytestmark = [pytest.mark.anyio, pytest.mark.process]

LIMIT_S = 60


def _sizes(agent: Agent) -> list[tuple[int, int]]:
    return [(u["used"], u["size"]) for u in agent.updates("usage_update")]


async def test_vllm_max_model_len_reaches_usage_update_and_the_picker(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("Hello.", 1200)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                [entry] = [v for v in model_option(agent)["options"] if v["value"] == "qwen3-coder"]
                assert entry["description"] == "41k tokens of context"
                answer = await agent.prompt("hi")
                assert answer["result"]["stopReason"] == "end_turn"
                assert _sizes(agent) == [(1205, 40960)]
                assert "not known" not in agent.text()


async def test_llamacpp_n_ctx_triggers_compaction_near_it(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_llamacpp(server, "local", n_ctx=8192, n_ctx_train=131072)
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("First answer.", 7000)),
            Reply.sse(chat_text("SUMMARY of the first exchange.", 300)),
            Reply.sse(chat_text("Second answer.", 900)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "local") as agent:
                await agent.prompt("first question")
                assert _sizes(agent) == [(7005, 8192)]
                await agent.prompt("second question")
                text = agent.text()
                assert "Near the context window: compacted the conversation" in text
                assert text.endswith("Second answer.")
                posts = [r.json for r in server.requests if r.method == "POST"]
                assert len(posts) == 3, "the summary call came between the two answers"
                assert "SUMMARY of the first exchange." in str(posts[2]["messages"])
                assert all(size == 8192 for _, size in _sizes(agent))


async def test_openrouter_context_length_reaches_usage_update(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_openrouter(server, "qwen/qwen3-coder", 262144, 65536)
        server.route("POST", "/api/v1/chat/completions", Reply.sse(chat_text("Hi.", 500)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen/qwen3-coder", base="/api/v1") as agent:
                await agent.prompt("hi")
                assert _sizes(agent) == [(505, 262144)]


async def test_the_configured_window_wins_over_the_servers(tmp_path: Path) -> None:
    config = '[models."qwen3-coder"]\ncontext_window = 16384\n'
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("Hello.", 100)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder", user_config=config) as agent:
                [entry] = [v for v in model_option(agent)["options"] if v["value"] == "qwen3-coder"]
                assert entry["description"] == "16k tokens of context"
                await agent.prompt("hi")
                assert _sizes(agent) == [(105, 16384)]


async def test_a_configured_window_needs_no_model_list(tmp_path: Path) -> None:
    config = '[models."my-gateway/gpt"]\ncontext_window = 32768\n'
    with FakeServer() as server:  # no /v1/models: every GET is a 404
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("Hello.", 100)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(
                tmp_path, server, "my-gateway/gpt", user_config=config, wait_for_list=False
            ) as agent:
                await agent.prompt("hi")
                assert _sizes(agent) == [(105, 32768)]


async def test_an_unknown_window_is_told_once_how_to_declare_when_it_matters(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.route(
            "GET", "/v1/models", Reply.json(200, {"data": [{"id": "mystery", "owned_by": "someone"}]})
        )
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("One.", 3000)),
            Reply.sse(chat_text("Two.", 9000)),
            Reply.sse(chat_text("Three.", 9500)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "mystery", wait_for_list=False) as agent:
                await agent.prompt("first")
                assert agent.text() == "One.", "a short chat is not interrupted"
                await agent.prompt("second")
                await agent.prompt("third")
                text = agent.text()
                assert text.count("The context window of mystery is not known") == 1
                assert "(9,005 tokens used so far)" in text
                assert '[models."mystery"]\ncontext_window = <tokens>' in text
                assert str(tmp_path / "user" / ".config" / "acp-agent" / "config.toml") in text
                assert agent.updates("usage_update") == []


async def test_ollamas_default_window_too_small_for_the_agent_is_said_once_and_not_compacted(
    tmp_path: Path,
) -> None:
    with FakeServer() as server:
        route_ollama(server, "qwen3-coder:30b")
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("One.", 3300)),
            Reply.sse(chat_text("Two.", 3900)),  # past the window: compacting would not help
            Reply.sse(chat_text("Three.", 3950)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder:30b") as agent:
                for word in ("first", "second", "third"):
                    await agent.prompt(word)
                text = agent.text()
                assert text.count("The agent's instructions and tools alone are about ") == 1
                assert "do not fit qwen3-coder:30b's context window of 4,096 tokens" in text
                assert "will not compact the conversation" in text
                assert "OLLAMA_CONTEXT_LENGTH=65536 ollama serve" in text
                assert "context_window = 65536" in text
                assert "runs on Ollama" not in text, "one notice, not two"
                assert "compacted" not in text
                posts = [r for r in server.requests if r.path == "/v1/chat/completions"]
                assert len(posts) == 3, "three answers and no summary call"
                assert [size for _, size in _sizes(agent)] == [4096, 4096, 4096]
                [entry] = [v for v in model_option(agent)["options"] if v["value"] == "qwen3-coder:30b"]
                assert "description" not in entry, "the picker lists no assumed window"


async def test_ollamas_window_reported_once_the_first_request_loaded_the_model_replaces_the_assumed_one(
    tmp_path: Path,
) -> None:
    with FakeServer() as server:
        route_ollama(server, "qwen3-coder:30b")
        loaded = {
            "models": [{"name": "qwen3-coder:30b", "model": "qwen3-coder:30b", "context_length": 32768}]
        }

        def ps(_: object) -> Reply:  # /api/ps lists a model once a request loaded it
            asked = any(r.path == "/v1/chat/completions" for r in server.requests)
            return Reply.json(200, loaded if asked else {"models": []})

        server.route("GET", "/api/ps", ps)
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("One.", 3300)),
            Reply.sse(chat_text("Two.", 3900)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder:30b") as agent:
                await agent.prompt("first")
                await agent.prompt("second")
                text = agent.text()
                assert "Ollama" not in text, "nothing to tell: the server runs it at 32k"
                assert [size for _, size in _sizes(agent)] == [4096, 32768]
                [entry] = [v for v in model_option(agent)["options"] if v["value"] == "qwen3-coder:30b"]
                assert entry["description"] == "33k tokens of context"  # the picker got the server's word


async def test_ollama_with_a_declared_window_is_not_warned(tmp_path: Path) -> None:
    config = '[models."qwen3-coder:30b"]\ncontext_window = 65536\n'
    with FakeServer() as server:
        route_ollama(server, "qwen3-coder:30b", running=65536)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("One.", 700)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder:30b", user_config=config) as agent:
                await agent.prompt("first")
                assert "Ollama" not in agent.text()
                assert _sizes(agent) == [(705, 65536)]


async def test_switching_the_model_switches_the_window(tmp_path: Path) -> None:
    with FakeServer() as server:
        server.route(
            "GET",
            "/v1/models",
            Reply.json(200, {"data": [{"id": n, "owned_by": "openai"} for n in ("small", "large")]}),
        )
        infos = [
            {"model_name": "small", "model_info": {"max_input_tokens": 8000, "max_output_tokens": 2000}},
            {"model_name": "large", "model_info": {"max_input_tokens": 128000, "max_output_tokens": 16000}},
        ]
        server.route("GET", "/v1/model/info", Reply.json(200, {"data": infos}))
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(chat_text("One.", 100)),
            Reply.sse(chat_text("Two.", 200)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "small") as agent:
                described = {v["value"]: v.get("description") for v in model_option(agent)["options"]}
                assert described == {"small": "8k tokens of context", "large": "128k tokens of context"}
                await agent.prompt("one")
                await agent.client.call(
                    "session/set_config_option",
                    {"sessionId": agent.session, "configId": "model", "value": "large"},
                )
                await agent.prompt("two")
                assert _sizes(agent) == [(105, 8000), (205, 128000)]
                posts = [r.json for r in server.requests if r.method == "POST"]
                assert [p["model"] for p in posts] == ["small", "large"]


async def test_a_new_process_describes_the_window_from_the_cached_list_before_asking_again(
    tmp_path: Path,
) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder"):
                pass
        server.route("GET", "/v1/models", Reply.json(503, {"error": {"message": "down"}}))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder", wait_for_list=False) as agent:
                opened: dict[str, Any] = next(
                    m["result"]
                    for m in map(as_object, agent.client.messages)
                    if m.get("result", {}).get("sessionId") == agent.session
                )
        options: list[dict[str, Any]] = opened["configOptions"]
        [model] = [o for o in options if o["id"] == "model"]
        assert model["options"] == [
            {"value": "qwen3-coder", "name": "qwen3-coder", "description": "41k tokens of context"}
        ]


async def test_the_model_command_names_the_window(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                answer = await agent.prompt("/model")
                assert answer["result"]["stopReason"] == "end_turn"
                assert agent.text() == "Model: qwen3-coder (41k tokens of context). Models: qwen3-coder."


async def test_a_model_that_takes_no_images_is_sent_none_and_the_user_told(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_llamacpp(server, "local", n_ctx=32768)  # /props: modalities.vision false
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("I see no image.", 300)))
        png = (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "local") as agent:
                params = {
                    "sessionId": agent.session,
                    "prompt": [
                        {"type": "text", "text": "What is in this picture?"},
                        {"type": "image", "mimeType": "image/png", "data": png},
                    ],
                }
                answer = await agent.client.response(
                    await agent.client.send_request("session/prompt", params)
                )
                assert answer["result"]["stopReason"] == "end_turn"
                text = agent.text()
        assert text.startswith("local takes no images (llama.cpp's model list), so the conversation's images")
        [post] = [r.json for r in server.requests if r.method == "POST"]
        sent = str(post["messages"])
        assert "image_url" not in sent and png not in sent
        assert "this model takes no images" in sent


WINDOW = 16384


def _litellm(server: FakeServer, model: str) -> None:
    route_litellm(server, model, WINDOW, 4096)


Route = Callable[[FakeServer, str], None]
"""Serves a model list that gives ``WINDOW`` (the server, the model's name)."""

SOURCES: dict[str, tuple[Route, str, str]] = {
    "vllm max_model_len": (lambda s, m: route_vllm(s, m, WINDOW), "/v1", ""),
    "llama.cpp /props n_ctx": (lambda s, m: route_llamacpp(s, m, n_ctx=WINDOW), "/v1", ""),
    "openrouter context_length": (lambda s, m: route_openrouter(s, m, WINDOW, 4096), "/api/v1", ""),
    "litellm model_info": (_litellm, "/v1", ""),
    "ollama num_ctx": (lambda s, m: route_ollama(s, m, num_ctx=WINDOW), "/v1", ""),
    "configuration": (lambda s, m: None, "/v1", f'[models."coder"]\ncontext_window = {WINDOW}\n'),
}


@pytest.mark.parametrize("source", list(SOURCES))
async def test_the_window_from_each_source_triggers_compaction_near_it(tmp_path: Path, source: str) -> None:
    route, base, config = SOURCES[source]
    with FakeServer() as server:
        route(server, "coder")
        server.route(
            "POST",
            f"{base}/chat/completions",
            Reply.sse(chat_text("First answer.", 14000)),
            Reply.sse(chat_text("SUMMARY of the first exchange.", 300)),
            Reply.sse(chat_text("Second answer.", 900)),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(
                tmp_path, server, "coder", base=base, user_config=config, wait_for_list=not config
            ) as agent:
                await agent.prompt("first question")
                await agent.prompt("second question")
                text = agent.text()
        assert _sizes(agent)[0] == (14005, WINDOW)
        assert "Near the context window: compacted the conversation" in text
        assert text.endswith("Second answer.")
