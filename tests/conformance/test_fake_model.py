"""The kit's fake model speaks the providers' formats exactly enough that this project's own provider
parsers (written against real captures) read its streams: text, reasoning, tool calls, stop reasons,
usage, a stall that ends when the client goes away; side models and metadata routes."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

import anyio
import httpx2
import pytest

from acp_conformance.fake_model import FakeModel, ToolCall, Turn, render_json, render_stream, split_text
from harness import FinishReason, Message, Options
from harness.model import (
    Finish,
    Model,
    Prompt,
    ReasoningChunk,
    TextChunk,
    ToolInput,
    ToolReady,
    ToolStart,
    UsageChunk,
)
from harness.providers import ChatCompletions, Messages, Responses

pytestmark = pytest.mark.anyio

LIMIT_S = 10
CALL = ToolCall("read_file", {"path": "/p/notes.txt"}, "call_1")


def _model(api: str, url: str, name: str = "fake-model") -> Model:
    if api == "chat":
        return ChatCompletions(url + "/v1", name, "k")
    if api == "responses":
        return Responses(url + "/v1", name, "k")
    return Messages(url, name, "k")


def _prompt() -> Prompt:
    return Prompt("Be terse.", [Message.user("hi")], [], Options())


async def _deltas(model: Model) -> list[Any]:
    with anyio.fail_after(LIMIT_S):
        return [d async for d in model.stream(_prompt())]


def _text(deltas: list[Any], kind: type) -> str:
    return "".join(d.text for d in deltas if isinstance(d, kind))


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_text_reasoning_and_usage_parse_in_every_api(api: str) -> None:
    turn = Turn(text="Hello from the fake model.", reasoning="Thinking it over.", chunks=4)
    with FakeModel([turn]) as fake:
        deltas = await _deltas(_model(api, fake.url))
    assert _text(deltas, TextChunk) == "Hello from the fake model."
    assert len([d for d in deltas if isinstance(d, TextChunk)]) >= 4  # streamed, not one blob
    assert _text(deltas, ReasoningChunk) == "Thinking it over."  # Chat: llama.cpp's reasoning_content
    assert any(isinstance(d, UsageChunk) and d.input == 42 for d in deltas)
    assert deltas[-1] == Finish(FinishReason.STOP)
    assert len(fake.model_requests) == 1


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_a_tool_call_parses_with_its_id_name_and_input(api: str) -> None:
    with FakeModel([Turn(text="Reading.", tool_calls=(CALL,))]) as fake:
        deltas = await _deltas(_model(api, fake.url))
    starts = [d for d in deltas if isinstance(d, ToolStart)]
    assert [(s.id, s.name) for s in starts] == [("call_1", "read_file")]
    fragments = "".join(d.json for d in deltas if isinstance(d, ToolInput))
    ready = [d for d in deltas if isinstance(d, ToolReady)]
    assert ready and (ready[0].input or json.loads(fragments)) == {"path": "/p/notes.txt"}
    assert deltas[-1] == Finish(FinishReason.TOOL_CALLS)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_length_finish_maps_to_max_tokens(api: str) -> None:
    with FakeModel([Turn(text="cut", finish="length")]) as fake:
        deltas = await _deltas(_model(api, fake.url))
    assert deltas[-1] == Finish(FinishReason.LENGTH)


async def test_turns_are_taken_in_order_then_the_default_answer_repeats() -> None:
    with FakeModel([Turn(text="one"), Turn(text="two")]) as fake:
        model = _model("chat", fake.url)
        texts = [_text(await _deltas(model), TextChunk) for _ in range(3)]
    assert texts == ["one", "two", "Done."]


async def test_side_model_requests_take_no_turn() -> None:
    with FakeModel([Turn(text="main answer")], side_models=["fake-small"]) as fake:
        side = _text(await _deltas(_model("anthropic", fake.url, "fake-small")), TextChunk)
        main = _text(await _deltas(_model("anthropic", fake.url)), TextChunk)
    assert (side, main) == ("ok", "main answer")
    assert len(fake.side_requests) == 1 and len(fake.model_requests) == 1


async def test_a_stalled_turn_holds_the_stream_until_the_client_leaves() -> None:
    with FakeModel([Turn(text="Once upon a time", stall=True)]) as fake:
        model = _model("chat", fake.url)
        got: list[Any] = []
        all_text = anyio.Event()

        async def consume() -> None:
            async for delta in model.stream(_prompt()):
                got.append(delta)
                if _text(got, TextChunk) == "Once upon a time":
                    all_text.set()

        with anyio.fail_after(LIMIT_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await all_text.wait()
                # The server thread marks the stall after writing the text: the client may read it first.
                assert await anyio.to_thread.run_sync(fake.stall_reached.wait, LIMIT_S)
                assert not fake.stall_closed.is_set()
                tg.cancel_scope.cancel()
            assert await anyio.to_thread.run_sync(fake.stall_closed.wait, LIMIT_S)
    assert not any(isinstance(d, Finish) for d in got)


async def test_a_stalled_turn_ends_when_the_client_resets_the_connection() -> None:
    # A client that closes with the server's bytes unread in its socket sends RST, not FIN (an agent
    # cancelled mid-stream): that is the client leaving too.
    with FakeModel([Turn(text="Once upon a time", stall=True)]) as fake:
        host, port = fake.url.removeprefix("http://").split(":")
        body = json.dumps(
            {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        )
        request = (
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n{body}"
        ).encode()

        def leave_with_a_reset() -> bool:
            with socket.create_connection((host, int(port)), timeout=LIMIT_S) as conn:
                conn.sendall(request)
                if not fake.stall_reached.wait(LIMIT_S):
                    return False
                # Nothing read: the reply's head and text are in the socket; linger 0 makes the RST certain.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return fake.stall_closed.wait(LIMIT_S)

        with anyio.fail_after(2 * LIMIT_S + 5):
            assert await anyio.to_thread.run_sync(leave_with_a_reset)


async def test_metadata_routes_answer_like_the_real_services() -> None:
    with FakeModel(model="fake-model", side_models=["fake-small"]) as fake:
        async with httpx2.AsyncClient(base_url=fake.url, timeout=LIMIT_S) as http:
            openai = (await http.get("/v1/models")).json()
            anthropic = (await http.get("/v1/models", headers={"anthropic-version": "2023-06-01"})).json()
            gemini = (await http.get("/v1beta/models")).json()
            count = (await http.post("/v1/messages/count_tokens", json={})).json()
            missing = await http.get("/v1/other")
    assert [m["id"] for m in openai["data"]] == ["fake-model", "fake-small"]
    assert anthropic["data"][0]["type"] == "model" and anthropic["has_more"] is False
    assert gemini["models"][0]["name"] == "models/fake-model"
    assert count == {"input_tokens": 42}
    assert missing.status_code == 404 and fake.unknown_requests[0].path == "/v1/other"


async def test_gemini_streams_candidates_with_text_thoughts_and_function_calls() -> None:
    turn = Turn(text="Hi there", reasoning="hmm", tool_calls=(CALL,))
    with FakeModel([turn]) as fake:
        async with httpx2.AsyncClient(base_url=fake.url, timeout=LIMIT_S) as http:
            body = (await http.post("/v1beta/models/fake-model:streamGenerateContent?alt=sse", json={})).text
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    assert "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) == "Hi there"
    assert any(p.get("thought") for p in parts)
    assert {"functionCall": {"name": "read_file", "args": {"path": "/p/notes.txt"}}} in parts
    assert events[-1]["candidates"][0]["finishReason"] == "STOP"
    assert fake.model_requests[0].query == "alt=sse"


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_non_streamed_bodies_carry_the_whole_turn(api: str) -> None:
    body = json.dumps(render_json(api, Turn(text="whole answer", tool_calls=(CALL,)), "m"))
    assert "whole answer" in body and "read_file" in body
    head, tail = render_stream(api, Turn(text="x"), "m")
    assert head and tail


def test_text_splits_into_the_asked_number_of_chunks() -> None:
    assert split_text("abcdefgh", 4) == ["ab", "cd", "ef", "gh"]
    assert split_text("ab", 5) == ["a", "b"]
    assert split_text("", 3) == []
