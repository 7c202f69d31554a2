"""Tools: what a tool is (``Tool``), where the run finds tools (``ToolSource``), and tools made of functions;
what a tool declares (spec, hints) and returns (Result) are ``_tool_values``'."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, overload, runtime_checkable

import anyio.to_thread
from pydantic import create_model

from ._errors import HarnessUsageError
from ._tool_values import Hints, Result, ToolSpec, jsonable
from .conforms import conforms

if TYPE_CHECKING:
    from ._call import Call

__all__ = [
    "FunctionTool",
    "Hints",
    "Result",
    "Tool",
    "ToolSource",
    "ToolSpec",
    "Tools",
    "tool",
]


@runtime_checkable
class Tool(Protocol):
    """A tool: its spec, and an async call taking the validated input and the ``Call`` context."""

    def spec(self) -> ToolSpec: ...

    async def call(self, input: dict[str, Any], call: Call) -> Result: ...


@runtime_checkable
class ToolSource(Protocol):
    """Where a run finds its tools; read at every step, so the tools may change between steps."""

    async def tools(self) -> Sequence[Tool]: ...


class Tools:
    """A fixed list of tools (and other sources, flattened at every step)."""

    def __init__(self, *items: Tool | ToolSource) -> None:
        self._items: tuple[Tool | ToolSource, ...] = items
        for item in items:
            if not (conforms(item, Tool) or conforms(item, ToolSource)):
                raise HarnessUsageError(f"not a Tool or ToolSource: {item!r}")
        # Sorted once: an isinstance against a runtime protocol costs microseconds, and every step lists
        # the tools.
        self._sorted: tuple[tuple[Tool, None] | tuple[None, ToolSource], ...] = tuple(
            (item, None) if conforms(item, Tool) else (None, item) for item in items
        )

    async def tools(self) -> Sequence[Tool]:
        out: list[Tool] = []
        for tool, source in self._sorted:
            if tool is not None:
                out.append(tool)
            elif source is not None:
                out.extend(await source.tools())
        return out

    def __len__(self) -> int:
        return len(self._items)


ToolFn = Callable[..., Awaitable[Any]] | Callable[..., Any]


class FunctionTool:
    """A tool made from a Python function; the input schema comes from its signature (see ``tool``).

    A sync function runs in a worker thread (``anyio.to_thread``), never on the event loop, so a slow one
    holds up no other call or session; cancelling the call stops waiting for it (the thread finishes on
    its own). ``meta`` is the spec's ``meta`` (e.g. the ACP tool ``kind``)."""

    def __init__(
        self,
        fn: ToolFn,
        *,
        name: str | None = None,
        description: str | None = None,
        hints: Hints | None = None,
        schema: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self._fn = fn
        sig = inspect.signature(fn)
        self._call_param = next(
            (
                p.name
                for p in sig.parameters.values()
                if p.name == "call" or _is_call_annotation(p.annotation)
            ),
            None,
        )
        params = {k: p for k, p in sig.parameters.items() if k != self._call_param}
        self._spec = ToolSpec(
            name or fn.__name__,
            description if description is not None else inspect.cleandoc(fn.__doc__ or ""),
            dict(schema) if schema is not None else _schema_from_signature(fn, params),
            hints or Hints(),
            meta=dict(meta or {}),
        )
        self._is_async = inspect.iscoroutinefunction(fn)

    def spec(self) -> ToolSpec:
        return self._spec

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        kwargs = dict(input)
        if self._call_param is not None:
            kwargs[self._call_param] = call
        if self._is_async:
            out = await self._fn(**kwargs)
        else:
            out = await anyio.to_thread.run_sync(
                functools.partial(self._fn, **kwargs), abandon_on_cancel=True
            )
        if isinstance(out, Result):
            return out
        if isinstance(out, str):
            return Result.text(out)
        if out is None:
            return Result.text("")
        return Result.text(json.dumps(jsonable(out), ensure_ascii=False), value=out)

    def __repr__(self) -> str:
        return f"FunctionTool({self._spec.name!r})"


def _is_call_annotation(annotation: Any) -> bool:
    return annotation == "Call" or getattr(annotation, "__name__", None) == "Call"


def _schema_from_signature(fn: ToolFn, params: Mapping[str, inspect.Parameter]) -> dict[str, Any]:
    # pydantic builds the JSON schema from the annotations; imported here so `import harness` stays light.

    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(fn, eval_str=True)
    for pname, p in params.items():
        annotation = hints.get(pname, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (annotation, default)
    model = create_model(f"{fn.__name__}_input", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)  # pyright: ignore[reportUnknownMemberType]
    schema["type"] = "object"
    return schema


@overload
def tool(fn: ToolFn, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    schema: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[ToolFn], FunctionTool]: ...


def tool(
    fn: ToolFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    open_world: bool = False,
    schema: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> FunctionTool | Callable[[ToolFn], FunctionTool]:
    """Make a tool of a function: ``@tool`` or ``@tool(read_only=True)``.

    Parameters become the input schema; a parameter named ``call`` (or annotated ``Call``) receives the
    ``Call``. The function may be sync (it then runs in a worker thread) or async and return a ``Result``,
    a string, or anything JSON-able. ``meta`` becomes the spec's ``meta``.
    """
    hints = Hints(read_only, destructive, idempotent, open_world)

    def make(f: ToolFn) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, hints=hints, schema=schema, meta=meta)

    if fn is not None:
        return make(fn)
    return make


def specs_of(tools: Iterable[Tool]) -> list[ToolSpec]:
    return [t.spec() for t in tools]
