"""Provider faults and MCP faults through the real ``python -m acp_agent`` process, not the library.

Provider faults: the agent runs ``--provider openai --base-url <fake>/v1 --model m`` against a local fake
OpenAI-compatible server. Each fault answers the prompt with JSON-RPC -32603 whose ``data.errorKind``
names the fault and whose message says what to do; the session then answers a good prompt normally.

MCP faults: a stdio MCP server (``tests/mcp/fault_server.py``) that dies mid-call, or cannot start. The
tool call ends ``failed`` naming the server and the cause; the turn goes on with the model's next reply;
a failed start is told to the user in a turn's first ``agent_message_chunk``.

Throughout, stdout carries nothing but JSON-RPC (``AgentProcess.violations``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import Drop, FakeServer, Reply
from tests._ports import RefusedPort
from tests.reliability._reliability_support import agent_env, initialized, write_script
from tests.reliability._tool_agent_support import ToolAgent, is_update, tool_agent

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180), pytest.mark.process]

LIMIT_S = 20  # generous: a prompt here is a few local round trips, but CI machines are slow and shared
FAULT_SERVER = Path(__file__).parents[1] / "mcp" / "fault_server.py"
INTERNAL_ERROR = -32603
CHAT = "/v1/chat/completions"
GOOD_TEXT = "all is well again"


# --- helpers ------------------------------------------------------------------------------------


def _sse_text(text: str) -> bytes:
    """A complete Chat Completions event stream answering ``text`` in two deltas."""

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    half = len(text) // 2
    return (
        chunk({"role": "assistant", "content": text[:half]}, None)
        + chunk({"content": text[half:]}, None)
        + chunk({}, "stop")
        + b"data: [DONE]\n\n"
    )


def _good() -> Reply:
    return Reply.sse(_sse_text(GOOD_TEXT))


class _ServerOn(FakeServer):
    """A ``FakeServer`` on the port the agent was pointed at while nothing listened there (held all along,
    so that no other test's server could take it meanwhile)."""

    def __init__(self, held: RefusedPort) -> None:
        super().__init__()
        self._sock.close()
        self._sock = held.listen()
        self.port = held.port
        self.url = held.url


async def _new_session(agent: ToolAgent, cwd: Path, servers: list[dict[str, Any]] | None = None) -> str:
    with anyio.fail_after(LIMIT_S):
        await initialized(agent)
        result = await agent.call("session/new", {"cwd": str(cwd), "mcpServers": servers or []})
    return str(result["sessionId"])


async def _prompt(agent: ToolAgent, session_id: str, text: str = "go") -> tuple[dict[str, Any], int]:
    """Send a prompt; returns its answer and the index of the first notification that belongs to it."""
    start = len(agent.notifications)
    with anyio.fail_after(LIMIT_S):
        answer = await agent.response(
            await agent.request(
                "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
            )
        )
    return answer, start


def _chunks(agent: ToolAgent, session_id: str, start: int) -> list[str]:
    return [
        u["content"]["text"]
        for u in agent.updates(session_id, start)
        if u.get("sessionUpdate") == "agent_message_chunk" and u["content"].get("type") == "text"
    ]


def _assert_clean(agent: ToolAgent) -> None:
    assert agent.alive, f"the agent exited (rc={agent.process.returncode}):\n{agent.stderr_text()[-2000:]}"
    assert not agent.violations, f"stdout broke JSON-RPC: {agent.violations[:5]}"


# --- provider faults ----------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s


CONTEXT_BODY = {
    "error": {
        "code": 400,
        "message": "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 13392,
        "n_ctx": 8192,
    }
}
RATE_BODY = {
    "error": {
        "message": "Rate limit reached for requests per min. Please try again in 1s.",
        "type": "requests",
        "code": "rate_limit_exceeded",
    }
}
SERVER_ERROR_BODY = {"error": {"message": "the GPU caught fire", "type": "server_error"}}

# (fault, its reply, errorKind, words the message must hold: what happened and what to do about it)
PROVIDER_FAULTS: list[tuple[str, Reply, str, tuple[str, ...]]] = [
    (
        "429 with retry-after",
        # 1 s, not a real provider's 7 s: the agent honours it (two waits before it gives up).
        Reply.json(429, RATE_BODY, {"retry-after": "1"}),
        "rate_limited",
        ("rate", "Rate limit reached", "retry"),
    ),
    (
        "500 with a body",
        Reply.json(500, SERVER_ERROR_BODY),
        "transport_error",
        ("the GPU caught fire", "try again"),
    ),
    (
        "stream dropped mid-way",
        Reply.sse(_sse_text("this answer never ends")[:120], then=[Drop()]),
        "transport_error",
        ("closed the connection mid-response", "try again"),
    ),
    (
        "context too long (llama.cpp)",
        Reply.json(400, CONTEXT_BODY),
        "context_too_long",
        ("context", "13392 tokens", "8192 tokens", "new session"),
    ),
]


def _provider_args(base_url: str) -> list[str]:
    return ["--provider", "openai", "--base-url", f"{base_url}/v1", "--model", "m"]


async def _expect_fault_then_recovery(
    agent: ToolAgent, session_id: str, kind: str, words: tuple[str, ...], recover: Any
) -> None:
    answer, _ = await _prompt(agent, session_id)
    assert "error" in answer, f"the fault did not fail the prompt: {answer}"
    error = answer["error"]
    assert error["code"] == INTERNAL_ERROR, error
    data: dict[str, Any] = error.get("data") or {}
    assert data.get("errorKind") == kind, error
    message: str = error["message"]
    print(f"{kind}: {message}")  # shown with -s: the messages a person reads
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} missing from the message {message!r}"
    recover()
    answer, start = await _prompt(agent, session_id, "and now?")
    assert answer.get("result", {}).get("stopReason") == "end_turn", answer
    assert "".join(_chunks(agent, session_id, start)) == GOOD_TEXT
    _assert_clean(agent)


@pytest.mark.parametrize(
    ("reply", "kind", "words"), [p[1:] for p in PROVIDER_FAULTS], ids=[p[0] for p in PROVIDER_FAULTS]
)
async def test_a_provider_fault_fails_the_prompt_with_its_kind_and_the_session_goes_on(
    home: Path, tmp_path: Path, server: FakeServer, reply: Reply, kind: str, words: tuple[str, ...]
) -> None:
    server.route("POST", CHAT, reply)
    async with tool_agent(home, agent_env(home), _provider_args(server.url)) as agent:
        session_id = await _new_session(agent, tmp_path)
        await _expect_fault_then_recovery(
            agent, session_id, kind, words, lambda: server.route("POST", CHAT, _good())
        )
    chats = [r for r in server.requests if r.path == CHAT]
    assert len(chats) >= 2, "the fake server never saw the recovery prompt"
    if kind == "rate_limited":
        assert len(chats) >= 4, "a rate-limited call is tried three times before the prompt fails"


async def test_a_refused_connection_fails_the_prompt_as_a_transport_error_and_the_session_goes_on(
    home: Path, tmp_path: Path
) -> None:
    revived: list[FakeServer] = []
    with RefusedPort() as held:

        def recover() -> None:
            server = _ServerOn(held).start()
            server.route("POST", CHAT, _good())
            revived.append(server)

        try:
            async with tool_agent(home, agent_env(home), _provider_args(held.url)) as agent:
                session_id = await _new_session(agent, tmp_path)
                await _expect_fault_then_recovery(
                    agent,
                    session_id,
                    "transport_error",
                    ("refused the connection", f"127.0.0.1:{held.port}", "--base-url"),
                    recover,
                )
        finally:
            for server in revived:
                server.close()


# --- MCP faults ---------------------------------------------------------------------------------


def _fault_server(name: str, **env: str) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(FAULT_SERVER)],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }


def _server_state(name: str, state: str) -> Any:
    def check(update: dict[str, Any]) -> bool:
        meta: dict[str, Any] = update.get("_meta") or {}
        servers: dict[str, Any] = meta.get("mcpServers") or {}
        server: dict[str, Any] = servers.get(name) or {}
        return server.get("state") == state

    return check


def _text_of(update: dict[str, Any]) -> str:
    contents: list[dict[str, Any]] = update.get("content") or []
    return "\n".join(
        c["content"]["text"]
        for c in contents
        if c.get("type") == "content" and c["content"].get("type") == "text"
    )


@pytest.fixture
def fault_server_path() -> Path:
    if not FAULT_SERVER.exists():
        pytest.skip(f"{FAULT_SERVER} is absent")
    return FAULT_SERVER


async def test_an_mcp_server_dying_mid_call_fails_the_call_naming_it_and_the_turn_goes_on(
    home: Path, tmp_path: Path, fault_server_path: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        [
            {"tool_calls": [{"name": "mcp__fault__crash", "input": {}}]},
            {"text": "carried on"},
            {"text": "later"},
        ],
    )
    async with tool_agent(home, agent_env(home, script)) as agent:
        session_id = await _new_session(agent, tmp_path, [_fault_server("fault")])
        answer, start = await _prompt(agent, session_id)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        updates = agent.updates(session_id, start)
        calls = [
            u for u in updates if u.get("sessionUpdate") == "tool_call" and u["title"] == "mcp__fault__crash"
        ]
        assert len(calls) == 1, updates
        call_id = calls[0]["toolCallId"]
        ends = [
            u
            for u in updates
            if u.get("sessionUpdate") == "tool_call_update"
            and u["toolCallId"] == call_id
            and u.get("status") in ("completed", "failed")
        ]
        assert [u["status"] for u in ends] == ["failed"], ends
        text = _text_of(ends[0])
        assert "`fault`" in text and "exited with code 7" in text and "crashing now" in text, text
        assert "carried on" in _chunks(agent, session_id, start)
        # The server comes back on next use: the session keeps working.
        answer, start = await _prompt(agent, session_id)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        assert "later" in "".join(_chunks(agent, session_id, start))
        _assert_clean(agent)


async def test_an_mcp_server_that_fails_to_start_is_told_in_the_next_turns_first_chunk(
    home: Path, tmp_path: Path, fault_server_path: Path
) -> None:
    script = write_script(tmp_path / "script.json", [{"text": "first answer"}, {"text": "second answer"}])
    async with tool_agent(home, agent_env(home, script)) as agent:
        session_id = await _new_session(agent, tmp_path, [_fault_server("broken", FAULT_FAIL_START="1")])
        with anyio.fail_after(LIMIT_S):
            await agent.notification(is_update(session_id, _server_state("broken", "failed")))
        answer, start = await _prompt(agent, session_id)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        chunks = _chunks(agent, session_id, start)
        assert chunks, "the turn sent no message"
        first = chunks[0]
        assert "MCP server `broken` failed to start" in first, chunks
        assert "exited with code 3" in first and "the config is missing" in first, first
        assert "first answer" in "".join(chunks[1:])
        # Told once: the next turn is the model's alone.
        answer, start = await _prompt(agent, session_id)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        assert "".join(_chunks(agent, session_id, start)) == "second answer"
        _assert_clean(agent)


# A stdio "server" that fails to start when the test says so: it waits for its gate file, then exits 3.
_GATED_FAILURE = """
import sys, time
from pathlib import Path
gate = Path(sys.argv[1])
while not gate.exists():  # polled: the test opens the gate once the agent's turn has begun
    time.sleep(0.02)
print("gated server: cannot start, no licence", file=sys.stderr, flush=True)
sys.exit(3)
"""


async def test_an_mcp_server_failing_while_the_turn_waits_for_it_is_told_in_that_turn(
    home: Path, tmp_path: Path
) -> None:
    server = tmp_path / "gated_failure.py"
    server.write_text(_GATED_FAILURE, encoding="utf-8")
    gate = tmp_path / "gate"
    entry = {"name": "late", "command": sys.executable, "args": [str(server), str(gate)], "env": []}
    script = write_script(tmp_path / "script.json", [{"text": "first answer"}])
    async with tool_agent(home, agent_env(home, script)) as agent:
        session_id = await _new_session(agent, tmp_path, [entry])
        start = len(agent.notifications)
        prompt = await agent.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
        )
        with anyio.fail_after(LIMIT_S):
            # Answered after the prompt was read and its turn began waiting for the starting server.
            await agent.response(await agent.request("session/list", {}))
            assert not agent.responses.get(json.dumps(prompt)), "the turn did not wait for the server"
            gate.touch()
            answer = await agent.response(prompt)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        chunks = _chunks(agent, session_id, start)
        _assert_clean(agent)
        assert chunks and "MCP server `late` failed to start" in chunks[0], chunks


async def test_an_mcp_call_hanging_past_the_servers_timeout_fails_naming_it_and_the_turn_goes_on(
    home: Path, tmp_path: Path, fault_server_path: Path
) -> None:
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "mcp__slow__hang", "input": {}}]}, {"text": "carried on"}],
    )
    # The per-server timeout rides in the entry's _meta (the config file's `timeout_s` becomes that too).
    entry = {**_fault_server("slow"), "_meta": {"acpAgent/timeoutS": 1}}
    async with tool_agent(home, agent_env(home, script)) as agent:
        session_id = await _new_session(agent, tmp_path, [entry])
        answer, start = await _prompt(agent, session_id)
        assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        updates = agent.updates(session_id, start)
        ends = [
            u
            for u in updates
            if u.get("sessionUpdate") == "tool_call_update" and u.get("status") in ("completed", "failed")
        ]
        assert [u["status"] for u in ends] == ["failed"], ends
        text = _text_of(ends[0])
        assert "`slow`" in text and "did not answer" in text and "within 1 s" in text, text
        assert "carried on" in _chunks(agent, session_id, start)
        _assert_clean(agent)
