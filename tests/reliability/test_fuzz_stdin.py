"""Fuzz the real process's stdin with hypothesis.

Invariants, checked after every example: the process is alive and answers a sentinel request; every
well-formed request got exactly one answer, a result or an error with a spec code; every stdout line is a
JSON-RPC message; no answer names an id that was never sent.

One agent process serves every example (restarted only when it died, which fails that example): each
example's inputs are followed by a sentinel request, and the example is over once the sentinel and every
request of the example are answered. 2,000 examples in all by default, 100,000 with ``RELIABILITY_LONG=1``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability._reliability_support import (
    LONG,
    AgentProcess,
    agent_env,
    agent_process,
    initialized,
    write_script,
)

# One xdist worker takes the whole module (`pytest -n 2 --dist loadgroup`): its tests share one agent.
pytestmark = [
    pytest.mark.timeout(36_000 if LONG else 900),
    pytest.mark.process,
    pytest.mark.xdist_group("fuzz_stdin"),
]

TOTAL_EXAMPLES = int(os.environ.get("RELIABILITY_FUZZ_EXAMPLES") or (100_000 if LONG else 2_000))
# The share of the examples each test gets (sums to TOTAL_EXAMPLES).
FRAMING_EXAMPLES = TOTAL_EXAMPLES * 3 // 10
WRONG_TYPES_EXAMPLES = TOTAL_EXAMPLES * 45 // 100
INTERLEAVING_EXAMPLES = TOTAL_EXAMPLES - FRAMING_EXAMPLES - WRONG_TYPES_EXAMPLES
EXAMPLE_TIMEOUT = 30.0
POOL_SIZE = 3
ROTATE_EVERY = 100  # fresh pool sessions now and then, so replayed histories stay short

FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=not LONG,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)

# --- placeholders resolved when an example runs ---------------------------------------------------


@dataclass(frozen=True)
class SessionRef:
    """One of the pool's live sessions (by index)."""

    index: int


@dataclass(frozen=True)
class PromptRef:
    """The id of an earlier prompt of the same example (by index), for ``$/cancel_request``."""

    index: int


CWD_REF = "\x00cwd"  # replaced by the example's project directory

# --- strategies -----------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", "/", "..", "../../etc/passwd", "/nonexistent/dir", "sess_x", "\u0000"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
session_refs = st.integers(min_value=0, max_value=POOL_SIZE - 1).map(SessionRef)
session_ids = st.one_of(
    session_refs, session_refs, st.text(max_size=20), st.sampled_from(["..", "a/b", "sess_none"])
)


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _image(d: str) -> dict[str, Any]:
    return {"type": "image", "data": d, "mimeType": "image/png"}


def _audio(d: str) -> dict[str, Any]:
    return {"type": "audio", "data": d, "mimeType": "audio/wav"}


def _resource_link(u: str) -> dict[str, Any]:
    return {"type": "resource_link", "uri": u, "name": "f"}


def _resource(u: str, t: str) -> dict[str, Any]:
    return {"type": "resource", "resource": {"uri": u, "text": t, "mimeType": "text/plain"}}


text_block = st.builds(_text, st.text(max_size=60))
content_blocks = st.one_of(
    text_block,
    text_block,
    st.builds(_image, st.text(max_size=20)),
    st.builds(_audio, st.text(max_size=20)),
    st.builds(_resource_link, st.text(max_size=30)),
    st.builds(_resource, st.text(max_size=30), st.text(max_size=30)),
    st.dictionaries(st.sampled_from(["type", "text", "data", "uri"]), json_scalars, max_size=3),
)


def _templates(session: Any, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Valid params of each method (``None``: the method takes no params we model)."""
    return {
        "initialize": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
        "authenticate": {"methodId": "configure-model"},
        "session/new": {"cwd": CWD_REF, "mcpServers": [], "additionalDirectories": []},
        "session/load": {"sessionId": session, "cwd": CWD_REF, "mcpServers": []},
        "session/resume": {"sessionId": session, "cwd": CWD_REF, "mcpServers": []},
        "session/list": {"cwd": CWD_REF},
        "session/close": {"sessionId": session},
        "session/delete": {"sessionId": session},
        "session/prompt": {"sessionId": session, "prompt": blocks},
        "session/cancel": {"sessionId": session},
        "session/set_mode": {"sessionId": session, "modeId": "default"},
        "session/set_config_option": {"sessionId": session, "configId": "mode", "value": "default"},
    }


METHODS = sorted(_templates(None, []))
NOTIFICATION_METHODS = {"session/cancel"}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a params tree (the root included)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in cast(dict[Any, Any], value).items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(cast(list[Any], value)):
            out += _paths(v, (*prefix, i))
    return out


def _replace(tree: Any, path: tuple[Any, ...], new: Any, *, delete: bool = False) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        copy = dict(cast(dict[Any, Any], tree))
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = _replace(copy[head], rest, new, delete=delete)
        return copy
    items: list[Any] = list(tree)
    if delete and not rest:
        items.pop(head)
    else:
        items[head] = _replace(items[head], rest, new, delete=delete)
    return items


@st.composite
def params_for(draw: st.DrawFn, method: str, mutate: bool = True) -> Any:
    """Valid params of ``method``, or the same with one field given a wrong type, removed or added."""
    blocks = draw(st.lists(content_blocks, min_size=1, max_size=3))
    params = _templates(draw(session_ids), blocks)[method]
    if not mutate:
        return params
    how = draw(st.sampled_from(["keep", "retype", "retype", "retype", "delete", "add", "replace"]))
    if how == "keep":
        return params
    if how == "replace":  # params that are not an object at all (or absent)
        return draw(st.one_of(st.just(_ABSENT), json_values))
    paths = _paths(params)
    if how == "add":
        return {**params, draw(st.text(max_size=12)): draw(json_values)}
    path = draw(st.sampled_from(paths[1:] or paths))
    if how == "delete" and path:
        return _replace(params, path, None, delete=True)
    return _replace(params, path, draw(json_values))


_ABSENT = "\x00absent"


@st.composite
def request_actions(
    draw: st.DrawFn, methods: list[str] | None = None, mutate: bool = True
) -> tuple[Any, ...]:
    method = draw(st.sampled_from(methods or METHODS))
    params = draw(params_for(method, mutate))
    as_notification = method in NOTIFICATION_METHODS and draw(st.booleans())
    return ("notify" if as_notification else "request", method, params, draw(st.booleans()))


framing_actions = st.one_of(
    st.tuples(st.just("raw"), st.binary(max_size=300)),
    st.tuples(st.just("raw"), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))),
    st.tuples(
        st.just("raw"),
        st.sampled_from(
            [
                b"",
                b"\r",
                b"   ",
                b"[]",
                b"{}",
                b"null",
                b"42",
                b'"x"',
                b"[1,2]",
                b"[{}]",
                b'{"jsonrpc":"2.0"}',
                b'{"jsonrpc":"2.0","id":1,"result":{}}',
                b'{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}',
                b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"x"}',
                b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"\xff"}}',
            ]
        ),
    ),
    st.tuples(st.just("truncated"), request_actions(mutate=False), st.floats(0, 0.999)),
    st.tuples(
        st.just("split"),
        request_actions(mutate=False),
        st.floats(0.01, 0.99),
        st.sampled_from([b"\n", b"\r\n"]),
    ),
    st.tuples(
        st.just("envelope"),
        st.sampled_from(METHODS),
        st.sampled_from(["jsonrpc", "method", "id", "extra", "params-array", "no-jsonrpc"]),
        json_values,
    ),
    st.tuples(st.just("batch"), st.lists(request_actions(), max_size=4)),
    st.tuples(
        st.just("big"),
        st.sampled_from(["prompt", "garbage", "field"]),
        st.sampled_from([70_000, 300_000, 1_500_000]),
    ),
)

interleaving_ops = st.one_of(
    st.tuples(st.just("prompt"), session_refs, st.text(max_size=30)),
    st.tuples(st.just("prompt"), session_refs, st.text(max_size=30)),
    st.tuples(st.just("cancel"), session_refs),
    st.tuples(st.just("cancel"), session_refs),
    st.tuples(st.just("cancel_request"), st.integers(0, 5)),
    st.tuples(st.just("close"), session_refs),
    st.tuples(st.just("load"), session_refs),
    st.tuples(st.just("resume"), session_refs),
    st.tuples(st.just("delete"), session_refs),
    st.tuples(st.just("new")),
    st.tuples(st.just("list")),
    request_actions(["session/prompt", "session/load", "session/close", "session/cancel"]),
)

# --- running examples against one process ---------------------------------------------------------


class Fuzzer:
    """Owns the one agent process and the session pool; runs examples in the portal's event loop."""

    def __init__(self, portal: BlockingPortal, root: Path) -> None:
        self.portal = portal
        self.root = root
        self.home = root / "home"
        self.cwd = root / "project"
        self.home.mkdir()
        self.cwd.mkdir()
        replies = [
            {"text": f"reply {i}", "chunks": 2, "delay_ms": 1} for i in range(200_000 if LONG else 20_000)
        ]
        self.script = write_script(root / "script.json", replies)
        self._cm: AbstractContextManager[AgentProcess] | None = None
        self.agent: AgentProcess | None = None
        self.pool: list[str] = []
        self.examples = 0
        self.deaths = 0

    def start(self) -> None:
        self._cm = self.portal.wrap_async_context_manager(
            agent_process(self.home, agent_env(self.home, self.script))
        )
        self.agent = self._cm.__enter__()
        self.portal.call(self._set_up)

    def stop(self) -> None:
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            self._cm = None

    async def _set_up(self) -> None:
        assert self.agent is not None
        with anyio.fail_after(60):
            await initialized(self.agent)
            self.pool = [await self._new_session() for _ in range(POOL_SIZE)]

    async def _new_session(self) -> str:
        assert self.agent is not None
        return str(
            (await self.agent.call("session/new", {"cwd": str(self.cwd), "mcpServers": []}))["sessionId"]
        )

    def run(self, actions: list[tuple[Any, ...]]) -> None:
        if self.agent is None or not self.agent.alive:
            # It died in an earlier example (which failed): start afresh so the others still run.
            self.deaths += 1
            self.stop()
            self.start()
        self.examples += 1
        self.portal.call(self._run, actions)

    async def _run(self, actions: list[tuple[Any, ...]]) -> None:
        agent = self.agent
        assert agent is not None
        prompts: list[Any] = []
        try:
            with anyio.fail_after(EXAMPLE_TIMEOUT):
                for action in actions:
                    await self._act(agent, action, prompts)
                sentinel = await agent.request("fuzz/sentinel", {})
                answer = await agent.response(sentinel)
                assert answer.get("error", {}).get("code") == -32601, f"the sentinel got {answer}"
                await agent.all_answered()
                await self._heal(agent)
        except TimeoutError:
            raise AssertionError(
                f"the agent hung: no answer within {EXAMPLE_TIMEOUT} s to {agent.unanswered()[:10]}; "
                f"alive={agent.alive}; stderr tail: {agent.stderr_text()[-2000:]}"
            ) from None
        del agent.notifications[:]
        if agent.violations:
            found, agent.violations[:] = list(agent.violations), []
            raise AssertionError("protocol violations:\n" + "\n".join(found[:10]))
        assert agent.alive, f"the agent exited (rc={agent.process.returncode}): {agent.stderr_text()[-2000:]}"

    async def _heal(self, agent: AgentProcess) -> None:
        """Put the pool back: reopen closed sessions, replace deleted ones, rotate now and then."""
        rotate = self.examples % ROTATE_EVERY == 0
        for i, session_id in enumerate(self.pool):
            if rotate:
                answer = await agent.response(await agent.request("session/close", {"sessionId": session_id}))
                # -32002: this example deleted the session, which is fine; anything else is not.
                error = answer.get("error")
                assert error is None or error["code"] == -32002, answer
                self.pool[i] = await self._new_session()
                continue
            answer = await agent.response(
                await agent.request("session/resume", {"sessionId": session_id, "cwd": str(self.cwd)})
            )
            if "error" in answer:
                self.pool[i] = await self._new_session()

    def _resolve(self, value: Any, prompts: list[Any]) -> Any:
        if isinstance(value, SessionRef):
            return self.pool[value.index % len(self.pool)]
        if isinstance(value, PromptRef):
            return prompts[value.index % len(prompts)] if prompts else 123_456_789
        if value == CWD_REF:
            return str(self.cwd)
        if isinstance(value, dict):
            out = {k: self._resolve(v, prompts) for k, v in cast(dict[Any, Any], value).items()}
            if "command" in out:
                out["command"] = "/nonexistent/fuzz-mcp-server"  # never run whatever the fuzzer typed
            return out
        if isinstance(value, list):
            return [self._resolve(v, prompts) for v in cast(list[Any], value)]
        return value

    def _message(
        self, agent: AgentProcess, method: str, params: Any, string_id: bool, prompts: list[Any]
    ) -> dict[str, Any]:
        request_id = agent.new_id(string_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params != _ABSENT:
            message["params"] = self._resolve(params, prompts)
        if method == "session/prompt":
            prompts.append(request_id)
        return message

    async def _act(self, agent: AgentProcess, action: tuple[Any, ...], prompts: list[Any]) -> None:
        kind = action[0]
        if kind == "raw":
            await agent.send_raw(action[1] + b"\n")
        elif kind == "request":
            _, method, params, string_id = action
            message = self._message(agent, method, params, string_id, prompts)
            agent.expect(message["id"])
            await agent.send(message)
        elif kind == "notify":
            _, method, params, _ = action
            message = {"jsonrpc": "2.0", "method": method}
            if params != _ABSENT:
                message["params"] = self._resolve(params, prompts)
            await agent.send(message)
        elif kind in ("truncated", "split"):
            _, (_, method, params, string_id), fraction = action[:3]
            message = self._message(agent, method, params, string_id, prompts)
            data = json.dumps(message).encode()
            cut = max(1, int(len(data) * fraction))
            if kind == "truncated":
                agent.tolerate(message["id"])
                await agent.send_raw(data[:cut] + b"\n")
            else:
                agent.expect(message["id"])
                await agent.send_raw(data[:cut])
                await anyio.lowlevel.checkpoint()  # let the first part go out on its own write
                await agent.send_raw(data[cut:] + action[3])
        elif kind == "envelope":
            await self._envelope(agent, action[1], action[2], action[3], prompts)
        elif kind == "batch":
            messages: list[Any] = []
            for _, method, params, string_id in action[1]:
                message = self._message(agent, method, params, string_id, prompts)
                agent.expect(message["id"])
                messages.append(message)
            await agent.send(messages)
        elif kind == "big":
            await self._big(agent, action[1], action[2])
        else:
            await self._interleave(agent, action, prompts)

    async def _envelope(
        self, agent: AgentProcess, method: str, field: str, value: Any, prompts: list[Any]
    ) -> None:
        """A request whose JSON-RPC envelope (not params) is wrong: an error may come back, or nothing."""
        message = self._message(
            agent, method, _templates(SessionRef(0), [{"type": "text", "text": "x"}])[method], False, prompts
        )
        request_id = message["id"]
        if field == "jsonrpc":
            message["jsonrpc"] = value if value != "2.0" else "1.0"
        elif field == "no-jsonrpc":
            del message["jsonrpc"]
        elif field == "method":
            message["method"] = value if isinstance(value, str) else [value]
        elif field == "id":
            # Ids of a type JSON-RPC does not allow; numbers are made fractional so they cannot collide
            # with ours, and null (allowed, if discouraged) is left out.
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                message["id"] = value if value is not None else [None]
            elif isinstance(value, str):
                message["id"] = {"id": value}
            else:
                message["id"] = int(value) + 0.5
            request_id = message["id"]
        elif field == "extra":
            message["extra"] = value
        else:
            message["params"] = [message.get("params")]
        if field in ("extra", "params-array") or (field == "method" and isinstance(message["method"], str)):
            agent.expect(request_id)  # still a request with a good id: it must be answered
        else:
            agent.tolerate(request_id)
        await agent.send(message)

    async def _big(self, agent: AgentProcess, what: str, size: int) -> None:
        if what == "garbage":
            await agent.send_raw(b"{" + b"x" * size + b"\n")
            return
        request_id = agent.new_id()
        agent.expect(request_id)
        if what == "prompt":
            params: dict[str, Any] = {
                "sessionId": self.pool[0],
                "prompt": [{"type": "text", "text": "y" * size}],
            }
            method = "session/prompt"
        else:
            params = {"cwd": "/" + "z" * size, "mcpServers": [{"bad": "q" * size}]}
            method = "session/new"
        await agent.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})

    async def _interleave(self, agent: AgentProcess, op: tuple[Any, ...], prompts: list[Any]) -> None:
        kind = op[0]
        cwd = str(self.cwd)
        if kind == "cancel":
            await agent.notify("session/cancel", {"sessionId": self._resolve(op[1], prompts)})
            return
        if kind == "cancel_request":
            target = self._resolve(PromptRef(op[1]), prompts)
            await agent.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": target}}
            )
            return
        requests: dict[str, Callable[[], tuple[str, dict[str, Any]]]] = {
            "prompt": lambda: (
                "session/prompt",
                {"sessionId": op[1], "prompt": [{"type": "text", "text": op[-1]}]},
            ),
            "close": lambda: ("session/close", {"sessionId": op[1]}),
            "load": lambda: ("session/load", {"sessionId": op[1], "cwd": cwd, "mcpServers": []}),
            "resume": lambda: ("session/resume", {"sessionId": op[1], "cwd": cwd}),
            "delete": lambda: ("session/delete", {"sessionId": op[1]}),
            "new": lambda: ("session/new", {"cwd": cwd, "mcpServers": []}),
            "list": lambda: ("session/list", {}),
        }
        method, params = requests[kind]()
        message = self._message(agent, method, params, False, prompts)
        agent.expect(message["id"])
        await agent.send(message)


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzer]:
    with start_blocking_portal("asyncio") as portal:
        f = Fuzzer(portal, tmp_path_factory.mktemp("fuzz"))
        f.start()
        try:
            yield f
        finally:
            f.stop()
    assert f.deaths == 0, f"the agent died {f.deaths} time(s) during fuzzing"
    if f.agent is not None:
        codes: dict[str, int] = {}
        for answers in f.agent.responses.values():
            for a in answers:
                code = str(a["error"]["code"]) if "error" in a else "result"
                codes[code] = codes.get(code, 0) + 1
        print(f"fuzz: {f.examples} examples, {len(f.agent.sent_ids)} requests answered: {codes}")
        internal = [
            a
            for answers in f.agent.responses.values()
            for a in answers
            if "error" in a and a["error"]["code"] == -32603
        ]
        for a in internal[:10]:
            print(f"fuzz: internal error answered: {a}")


@settings(FUZZ_SETTINGS, max_examples=FRAMING_EXAMPLES)
@given(actions=st.lists(framing_actions, min_size=1, max_size=5))
def test_garbage_truncated_split_and_oversized_lines_get_spec_answers_and_never_kill_the_agent(
    fuzzer: Fuzzer, actions: list[tuple[Any, ...]]
) -> None:
    fuzzer.run(actions)


@settings(FUZZ_SETTINGS, max_examples=WRONG_TYPES_EXAMPLES)
@given(actions=st.lists(request_actions(), min_size=1, max_size=6))
def test_every_method_with_wrong_typed_missing_or_extra_fields_is_answered_once_with_a_spec_code(
    fuzzer: Fuzzer, actions: list[tuple[Any, ...]]
) -> None:
    fuzzer.run(actions)


@settings(FUZZ_SETTINGS, max_examples=INTERLEAVING_EXAMPLES)
@given(actions=st.lists(interleaving_ops, min_size=2, max_size=12))
def test_interleaved_prompt_cancel_close_and_load_answer_every_request_once(
    fuzzer: Fuzzer, actions: list[tuple[Any, ...]]
) -> None:
    fuzzer.run(actions)
