"""The tool API: ToolSpec rules, ``@tool`` schemas from signatures, FunctionTool, Tools, ``call_tool``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import (
    Approval,
    Call,
    Decision,
    FunctionTool,
    HarnessUsageError,
    Hints,
    Result,
    Text,
    Tool,
    Tools,
    ToolSource,
    ToolSpec,
    tool,
)
from harness.testing import call_tool

pytestmark = pytest.mark.anyio


def test_a_tool_spec_schema_must_be_of_type_object() -> None:
    with pytest.raises(HarnessUsageError, match="object"):
        ToolSpec("t", "d", {"type": "array"})
    with pytest.raises(HarnessUsageError):
        ToolSpec("t", "d", {"properties": {}})


def test_a_tool_spec_defaults_to_an_empty_object_schema_and_no_hints() -> None:
    spec = ToolSpec("clock", "The current time")
    assert spec.schema == {"type": "object"}
    assert spec.hints == Hints()
    assert spec.to_dict()["hints"] == {
        "readOnly": False,
        "destructive": False,
        "idempotent": False,
        "openWorld": False,
    }


def test_a_tool_spec_needs_a_name() -> None:
    with pytest.raises(HarnessUsageError):
        ToolSpec("", "d")


def test_the_tool_decorator_builds_the_schema_from_the_signature() -> None:
    @tool
    def read_file(path: str, limit: int = 100, tags: list[str] | None = None) -> str:
        """Reads a file."""
        return path

    spec = read_file.spec()
    assert spec.name == "read_file"
    assert spec.description == "Reads a file."
    assert spec.schema["type"] == "object"
    props = spec.schema["properties"]
    assert props["path"]["type"] == "string"
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["default"] == 100
    assert "tags" in props
    assert spec.schema["required"] == ["path"]
    assert spec.hints == Hints()


def test_the_tool_decorator_takes_name_description_and_hints() -> None:
    @tool(name="ls", description="Lists a directory", read_only=True, idempotent=True)
    def list_dir(path: str) -> str:
        return path

    spec = list_dir.spec()
    assert spec.name == "ls"
    assert spec.description == "Lists a directory"
    assert spec.hints == Hints(read_only=True, idempotent=True)


def test_the_call_parameter_is_not_part_of_the_schema() -> None:
    @tool
    async def whoami(name: str, call: Call) -> str:
        return call.id

    assert set(whoami.spec().schema["properties"]) == {"name"}
    assert whoami.spec().schema.get("required") == ["name"]


def test_a_function_tool_is_a_tool() -> None:
    @tool
    def noop() -> None:
        return None

    assert isinstance(noop, FunctionTool)
    assert isinstance(noop, Tool)
    assert noop.spec().schema["type"] == "object"


def test_an_explicit_schema_replaces_the_signatures() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}

    @tool(schema=schema)
    def half(x: float) -> float:
        return x / 2

    assert half.spec().schema == schema


async def test_a_sync_function_tool_returns_its_string_as_text() -> None:
    @tool
    def greet(name: str) -> str:
        return f"Hello {name}"

    out = await call_tool(greet, {"name": "Ada"})
    assert out.result == Result((Text("Hello Ada"),))
    assert out.result.error is False


async def test_an_async_function_tool_is_awaited_and_gets_the_call() -> None:
    seen: list[str] = []

    @tool
    async def slow(n: int, call: Call) -> str:
        await anyio.lowlevel.checkpoint()
        seen.append(call.id)
        return str(n * 2)

    out = await call_tool(slow, {"n": 21}, call_id="call_7")
    assert out.result.as_text() == "42"
    assert seen == ["call_7"]


async def test_a_function_tool_returning_data_gives_json_text_and_the_value() -> None:
    @tool
    def stats() -> dict[str, int]:
        return {"files": 3}

    out = await call_tool(stats, {})
    assert out.result.as_text() == '{"files": 3}'
    assert out.result.value == {"files": 3}


async def test_a_function_tool_returning_none_gives_empty_text_and_a_result_passes_through() -> None:
    @tool
    def nothing() -> None:
        return None

    @tool
    def failing() -> Result:
        return Result.failure("nope", value=1)

    assert (await call_tool(nothing, {})).result.as_text() == ""
    out = await call_tool(failing, {})
    assert out.result.error is True
    assert out.result.as_text() == "nope"
    assert out.result.value == 1


async def test_call_tool_validates_input_and_does_not_call_the_tool_on_invalid_input() -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> str:
        calls.append(n)
        return "ok"

    out = await call_tool(count, {"n": "three"})
    assert out.result.error is True
    assert out.result.as_text().startswith("count: invalid input at n: ")
    assert "integer" in out.result.as_text()
    missing = await call_tool(count, {})
    assert missing.result.error is True
    assert "count: invalid input" in missing.result.as_text()
    assert calls == []
    assert (await call_tool(count, {"n": 3})).result.as_text() == "ok"
    assert calls == [3]


async def test_call_tool_records_progress_and_a_pause() -> None:
    @tool
    async def deploy(call: Call) -> Result:
        await call.progress({"step": 1})
        await call.progress({"step": 2})
        if call.decision() is None:
            return call.needs_input([Approval("Deploy to prod")], {"build": 42})
        return Result.text("deployed")

    out = await call_tool(deploy, {})
    assert out.progress == [{"step": 1}, {"step": 2}]
    assert out.pending is not None
    assert out.pending.needs == (Approval("Deploy to prod"),)
    assert out.pending.state == {"build": 42}

    again = await call_tool(deploy, {}, answers={"approval": Decision.allow()}, state={"build": 42})
    assert again.result.as_text() == "deployed"
    assert again.pending is None


async def test_call_tool_passes_context_state_and_cancellation() -> None:
    @tool
    def inspect_call(call: Call) -> dict[str, Any]:
        return {"context": call.context, "state": call.state(), "cancelled": call.is_cancelled()}

    out = await call_tool(inspect_call, {}, context="ctx", state=[1], cancelled=True)
    assert out.result.value == {"context": "ctx", "state": [1], "cancelled": True}


async def test_needs_input_rejects_no_needs_and_duplicate_need_ids() -> None:
    @tool
    def empty(call: Call) -> Result:
        return call.needs_input([])

    @tool
    def twice(call: Call) -> Result:
        return call.needs_input([Approval("a"), Approval("b")])

    with pytest.raises(HarnessUsageError):
        await call_tool(empty, {})
    with pytest.raises(HarnessUsageError):
        await call_tool(twice, {})


async def test_tools_flattens_its_sources_at_every_read() -> None:
    @tool
    def a() -> str:
        return "a"

    @tool
    def b() -> str:
        return "b"

    class Growing:
        def __init__(self) -> None:
            self.items: list[Tool] = []

        async def tools(self) -> Sequence[Tool]:
            return list(self.items)

    growing = Growing()
    assert isinstance(growing, ToolSource)
    tools = Tools(a, growing)
    assert [t.spec().name for t in await tools.tools()] == ["a"]
    growing.items.append(b)
    assert [t.spec().name for t in await tools.tools()] == ["a", "b"]


def test_tools_rejects_what_is_not_a_tool() -> None:
    with pytest.raises(HarnessUsageError):
        Tools("not a tool")  # type: ignore[arg-type]


def test_result_helpers_mark_errors_and_keep_text() -> None:
    assert Result.text("ok").error is False
    assert Result.failure("bad").error is True
    assert Result.failure("bad").as_text() == "bad"
    assert Result.text("ok", meta={"ms": 1}).meta == {"ms": 1}
