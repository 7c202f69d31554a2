from __future__ import annotations

import json
from typing import Any, cast

import anyio
import pytest

from acp_agent.protocol import Connection, ConnectionClosedError, RpcError
from acp_agent.protocol.models import AgentMessageChunk, SessionNotification, TextContent
from tests.acp.protocol._acp_protocol_support import WAIT, AcpClient, ScriptedHandler, agent_connection
from tests.acp_client import RecordedBytes, memory_pipe

pytestmark = pytest.mark.anyio


async def assert_next_is_echo(client: AcpClient, request_id: Any = "probe") -> dict[str, Any]:
    """Proves that nothing was written before: the next line is the answer to a fresh request."""
    await client.send_request("echo", {}, request_id=request_id)
    message = await client.message()
    assert message["id"] == request_id and "result" in message, message
    return message


@pytest.mark.parametrize("request_id", ["3f9c-uuid", 0, 7, 9007199254740993, "", None])
async def test_request_ids_are_echoed_with_their_type(request_id: Any) -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("echo", {"a": 1}, request_id=request_id)
        line = await client.line()
        message = json.loads(line)
        assert message == {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"params": {"a": 1}, "notificationsSeen": 0},
        }
        assert type(message["id"]) is type(request_id)


async def test_invalid_json_answers_parse_error_and_connection_continues() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(b'{"jsonrpc":\n')
        message = await client.message()
        assert message["id"] is None and message["error"]["code"] == -32700
        await assert_next_is_echo(client)


async def test_invalid_utf8_answers_parse_error() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"echo\xff\xfe"}\n')
        message = await client.message()
        assert message["id"] is None and message["error"]["code"] == -32700
        await assert_next_is_echo(client)


@pytest.mark.parametrize("line", [b"42", b'"x"', b"null", b"true"])
async def test_scalar_json_answers_invalid_request_with_null_id(line: bytes) -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(line + b"\n")
        message = await client.message()
        assert message["id"] is None and message["error"]["code"] == -32600
        await assert_next_is_echo(client)


async def test_empty_batch_answers_one_invalid_request_object() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(b"[]\n")
        message = await client.message()
        assert isinstance(message, dict)
        assert message["id"] is None and message["error"]["code"] == -32600


async def test_batch_is_answered_with_an_array_of_its_request_responses() -> None:
    async with agent_connection() as (client, _, handler):
        await client.write(
            [
                {"jsonrpc": "2.0", "id": "b1", "method": "_x/y"},
                {"jsonrpc": "2.0", "method": "_n"},
                {"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {}},
                1,
            ]
        )
        message = await client.message()
        assert isinstance(message, list)
        answers = cast(list[dict[str, Any]], message)
        by_id = {item["id"]: item for item in answers if item["id"] is not None}
        assert by_id["b1"]["error"]["code"] == -32601
        assert by_id[2]["result"]["params"] == {}
        assert [item["error"]["code"] for item in answers if item["id"] is None] == [-32600]
        assert len(answers) == 3
        assert handler.notifications == [("_n", None)]


async def test_notification_only_batch_gets_no_answer() -> None:
    async with agent_connection() as (client, _, handler):
        await client.write([{"jsonrpc": "2.0", "method": "_n"}])
        await assert_next_is_echo(client)
        assert handler.notifications == [("_n", None)]


async def test_wrong_jsonrpc_version_answers_invalid_request_with_id() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "1.0", "id": 5, "method": "echo", "params": {}})
        message = await client.message()
        assert message["id"] == 5 and message["error"]["code"] == -32600


async def test_missing_jsonrpc_member_answers_invalid_request() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"id": 6, "method": "echo"})
        message = await client.message()
        assert message["id"] == 6 and message["error"]["code"] == -32600


async def test_non_string_method_answers_invalid_request() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "2.0", "id": 16, "method": 5})
        message = await client.message()
        assert message["id"] == 16 and message["error"]["code"] == -32600


async def test_object_without_method_answers_invalid_request_with_id() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "2.0", "id": 9})
        message = await client.message()
        assert message["id"] == 9 and message["error"]["code"] == -32600


async def test_unusable_id_answers_invalid_request_with_null_id() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "2.0", "id": [1], "method": "echo"})
        message = await client.message()
        assert message["id"] is None and message["error"]["code"] == -32600


async def test_scalar_params_answer_invalid_request() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "2.0", "id": 3, "method": "echo", "params": 5})
        message = await client.message()
        assert message["id"] == 3 and message["error"]["code"] == -32600


async def test_unknown_method_answers_method_not_found() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("foo/bar", {}, request_id=7)
        message = await client.message()
        assert message["id"] == 7 and message["error"]["code"] == -32601


async def test_protocol_level_request_answers_method_not_found() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("$/something", {}, request_id=8)
        message = await client.message()
        assert message["id"] == 8 and message["error"]["code"] == -32601


async def test_unknown_and_protocol_notifications_get_no_answer() -> None:
    async with agent_connection() as (client, _, handler):
        await client.notify("foo/bar", {})
        await client.notify("$/progress", {"x": 1})
        await client.notify("$/cancel_request", {"requestId": 12345})
        await client.notify("$/cancel_request", None)
        await assert_next_is_echo(client)
        assert handler.notifications == [("foo/bar", {})]


async def test_unsolicited_response_is_ignored() -> None:
    async with agent_connection() as (client, _, _):
        await client.write({"jsonrpc": "2.0", "id": 999, "result": {}})
        await client.write({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}})
        await assert_next_is_echo(client)


async def test_blank_lines_crlf_and_split_chunks_are_tolerated() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(b"\n\r\n   \n")
        await client.send_raw(b'{"jsonrpc":"2.0","id":1,')
        await client.send_raw(b'"method":"echo","params":{}}\r\n{"jsonrpc":"2.0","id":2,"method":"echo"}\n')
        first, second = await client.message(), await client.message()
        assert {first["id"], second["id"]} == {1, 2}
        assert "result" in first and "result" in second


async def test_slow_request_does_not_block_a_fast_one() -> None:
    async with agent_connection() as (client, _, handler):
        await client.send_request("slow", {}, request_id="slow")
        with anyio.fail_after(WAIT):
            await handler.slow_started.wait()
        await client.send_request("echo", {}, request_id="fast")
        message = await client.message()
        assert message["id"] == "fast"  # answered while "slow" is still waiting
        handler.release.set()
        message = await client.message()
        assert message == {"jsonrpc": "2.0", "id": "slow", "result": {"slow": True}}


async def test_client_cancel_request_answers_request_cancelled_exactly_once() -> None:
    async with agent_connection() as (client, _, handler):
        await client.send_request("slow", {}, request_id=41)
        with anyio.fail_after(WAIT):
            await handler.slow_started.wait()
        await client.notify("$/cancel_request", {"requestId": 41})
        message = await client.message()
        assert message["id"] == 41 and message["error"]["code"] == -32800
        assert handler.cancelled_contexts == [41]
        await client.notify("$/cancel_request", {"requestId": 41})
        await assert_next_is_echo(client)


async def test_cancel_request_after_the_answer_changes_nothing() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("echo", {}, request_id="done")
        assert (await client.message())["id"] == "done"
        await client.notify("$/cancel_request", {"requestId": "done"})
        await assert_next_is_echo(client)


async def test_cancel_callback_lets_the_handler_answer_normally() -> None:
    async with agent_connection() as (client, _, handler):
        await client.send_request("graceful", {}, request_id="p")
        with anyio.fail_after(WAIT):
            await handler.graceful_started.wait()
        await client.notify("$/cancel_request", {"requestId": "p"})
        message = await client.message()
        assert message == {"jsonrpc": "2.0", "id": "p", "result": {"cancelled": True}}


async def test_notifications_are_handled_before_the_next_line_is_read() -> None:
    async with agent_connection() as (client, _, _):
        await client.notify("session/cancel", {"sessionId": "s"})
        message = await assert_next_is_echo(client)
        assert message["result"]["notificationsSeen"] == 1


async def test_handler_exception_answers_internal_error_without_details() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("fail", {}, request_id=1)
        message = await client.message()
        assert message["error"] == {"code": -32603, "message": "internal error"}


async def test_rpc_error_from_handler_is_sent_as_is() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("rpc_fail", {}, request_id=1)
        message = await client.message()
        assert message["error"] == {"code": -32002, "message": "no such session", "data": {"uri": "sess_x"}}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"prompt": []}, "invalid params: sessionId: field required"),
        ([1, 2], "invalid params: expected an object"),
        (None, "invalid params: expected an object"),
    ],
)
async def test_validation_error_answers_short_invalid_params(params: Any, expected: str) -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("prompt", params, request_id=1)
        message = await client.message()
        assert message["error"] == {"code": -32602, "message": expected}


async def test_none_result_is_sent_as_empty_object() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("none", {}, request_id=1)
        assert (await client.message())["result"] == {}


async def test_duplicate_in_flight_id_is_rejected() -> None:
    async with agent_connection() as (client, _, handler):
        await client.send_request("slow", {}, request_id=1)
        with anyio.fail_after(WAIT):
            await handler.slow_started.wait()
        await client.send_request("echo", {}, request_id=1)
        message = await client.message()
        assert message["id"] == 1 and message["error"]["code"] == -32600
        handler.release.set()
        assert (await client.message())["result"] == {"slow": True}


async def test_agent_request_returns_the_client_result() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_request("ask", {}, request_id="a")
        outgoing = await client.message()
        assert outgoing["method"] == "client/ask" and outgoing["params"] == {"q": 1}
        await client.write({"jsonrpc": "2.0", "id": outgoing["id"], "result": {"ok": 1}})
        assert (await client.message()) == {"jsonrpc": "2.0", "id": "a", "result": {"answer": {"ok": 1}}}


async def test_agent_request_raises_rpc_error_when_the_client_answers_an_error() -> None:
    async with agent_connection() as (client, conn, _):
        errors: list[RpcError] = []
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                try:
                    await conn.request("fs/read_text_file", {"path": "/x"})
                except RpcError as exc:
                    errors.append(exc)

            tg.start_soon(ask)
            outgoing = await client.message()
            await client.write(
                {"jsonrpc": "2.0", "id": outgoing["id"], "error": {"code": -32002, "message": "nope"}}
            )
        assert [(e.code, e.message) for e in errors] == [(-32002, "nope")]


async def test_agent_request_ids_are_unique() -> None:
    async with agent_connection() as (client, conn, _), anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(conn.request, "client/x", None)
        ids = [(await client.message())["id"] for _ in range(3)]
        assert len(set(ids)) == 3
        for request_id in ids:
            await client.write({"jsonrpc": "2.0", "id": request_id, "result": None})


async def test_cancelled_agent_request_sends_cancel_request_to_the_client() -> None:
    async with agent_connection() as (client, conn, _):
        outgoing: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "session/request_permission", None)
            outgoing = await client.message()
            tg.cancel_scope.cancel()
        cancel = await client.message()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": outgoing["id"]},
        }
        # A late answer from the client is ignored.
        await client.write(
            {"jsonrpc": "2.0", "id": outgoing["id"], "error": {"code": -32800, "message": "c"}}
        )
        await assert_next_is_echo(client)


async def test_agent_request_timeout_raises_and_sends_cancel_request() -> None:
    async with agent_connection() as (client, conn, _):
        with pytest.raises(TimeoutError):
            await conn.request("terminal/wait_for_exit", {}, timeout=0.01)
        outgoing = await client.message()
        cancel = await client.message()
        assert cancel["method"] == "$/cancel_request" and cancel["params"] == {"requestId": outgoing["id"]}


async def test_notify_dumps_models_by_alias_without_nones() -> None:
    async with agent_connection() as (client, conn, _):
        update = AgentMessageChunk(content=TextContent(text="héllo"))
        await conn.notify("session/update", SessionNotification(session_id="s", update=update))
        line = await client.line()
        assert "héllo".encode() in line  # ensure_ascii=False
        assert json.loads(line) == {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "héllo"},
                },
            },
        }


async def test_eof_cancels_running_turns_lets_other_requests_finish_and_flushes_every_answer() -> None:
    handler = ScriptedHandler()
    async with agent_connection(handler) as (client, conn, _):
        await client.send_request("slow", {}, request_id="slow")
        await client.send_request("graceful", {}, request_id="graceful")
        with anyio.fail_after(WAIT):
            await handler.slow_started.wait()
            await handler.graceful_started.wait()
        await client.close_output()
        handler.release.set()  # the request already being served finishes after EOF
        lines = await client.remaining_lines()
        answers = {m["id"]: m for m in map(json.loads, lines)}
        assert answers["slow"]["result"] == {"slow": True}
        assert answers["graceful"]["result"] == {"cancelled": True}
        assert len(lines) == 2
        assert conn.closed


async def test_eof_fails_pending_agent_requests_with_connection_closed() -> None:
    async with agent_connection() as (client, conn, _):
        failures: list[BaseException] = []

        async def ask() -> None:
            try:
                await conn.request("client/x", {})
            except ConnectionClosedError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await client.message()
            await client.close_output()
        assert len(failures) == 1
        with pytest.raises(ConnectionClosedError):
            await conn.request("client/y", {})


async def test_serve_returns_at_eof_and_handles_a_last_line_without_newline() -> None:
    async with agent_connection() as (client, _, _):
        await client.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"echo"}')
        await client.close_output()
        lines = await client.remaining_lines()
        assert [json.loads(line)["id"] for line in lines] == [1]


async def test_run_context_closes_the_connection_on_exit() -> None:
    async with agent_connection() as (client, conn, handler):
        await client.send_request("slow", {}, request_id="slow")
        with anyio.fail_after(WAIT):
            await handler.slow_started.wait()
        conn.close()
        lines = await client.remaining_lines()
        assert json.loads(lines[0])["error"]["code"] == -32800


async def test_run_block_serves_and_shuts_down_on_exit() -> None:
    to_agent, from_agent = memory_pipe(), memory_pipe()
    handler = ScriptedHandler()
    conn = Connection(to_agent.receive, from_agent.send, handler)
    client = AcpClient(to_agent.send, from_agent.receive)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.read_loop)
        async with conn.run():
            await client.send_request("slow", {}, request_id=1)
            with anyio.fail_after(WAIT):
                await handler.slow_started.wait()
        # Leaving the block closed the connection: the in-flight request was answered -32800.
        assert conn.closed
        message = await client.message()
        assert message["id"] == 1 and message["error"]["code"] == -32800
        await from_agent.send.aclose()
    to_agent.close()
    from_agent.close()


async def test_too_long_line_is_dropped_with_parse_error() -> None:
    async with agent_connection(max_line_bytes=1000) as (client, _, _):
        await client.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"' + b"a" * 5000)
        await client.send_raw(b"a" * 5000 + b'"}}\n')
        message = await client.message()
        assert message["id"] is None and message["error"]["code"] == -32700
        await assert_next_is_echo(client)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_fifty_megabyte_line_is_accepted(anyio_backend: str) -> None:
    text = "x" * (50 * 1024 * 1024)
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]},
        }
    ).encode()
    async with agent_connection() as (client, _, _):
        for start in range(0, len(line), 1 << 16):
            await client.send_raw(line[start : start + (1 << 16)])
        await client.send_raw(b"\n")
        message = await client.message()
        assert message == {"jsonrpc": "2.0", "id": 1, "result": {"blocks": 1}}


async def test_a_response_is_on_the_wire_before_work_its_handler_started_runs() -> None:
    out, to_agent = RecordedBytes(), memory_pipe()
    seen: list[bytes] = []

    class Opening(ScriptedHandler):
        async def handle_request(self, method: str, params: Any, ctx: Any) -> Any:
            async def after() -> None:  # what the handler started: it must find the answer written
                seen.append(bytes(out.data))

            tg.start_soon(after)
            return {"opened": True}

    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                conn = Connection(to_agent.receive, out, Opening())
                tg.start_soon(conn.serve)
                await to_agent.send.send(b'{"jsonrpc":"2.0","id":1,"method":"open"}\n')
                while not seen:
                    await anyio.wait_all_tasks_blocked()
                await to_agent.send.aclose()
    finally:
        to_agent.close()
    assert seen == [b'{"jsonrpc":"2.0","id":1,"result":{"opened":true}}\n']
