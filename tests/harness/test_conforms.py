"""``conforms``: the answer of ``isinstance`` against a runtime protocol, for classes and plain objects."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness._tools import Tool, Tools, ToolSource
from harness.compact import Compact
from harness.conforms import conforms
from harness.middleware import ModelMiddleware, ToolMiddleware
from harness.tools import Root, file_tools


class _ClassTool:
    def spec(self) -> Any: ...

    async def call(self, input: dict[str, Any], call: Any) -> Any: ...


def test_a_class_carrying_every_member_conforms_and_one_lacking_one_does_not() -> None:
    assert conforms(_ClassTool(), Tool)
    assert conforms(_ClassTool(), Tool)
    assert not conforms(_ClassTool(), ToolSource)


def test_members_given_per_instance_are_checked_for_each_instance() -> None:
    with_members = SimpleNamespace(spec=lambda: None, call=lambda *a: None)  # pyright: ignore[reportUnknownLambdaType]
    assert conforms(with_members, Tool)
    assert not conforms(SimpleNamespace(), Tool)
    assert conforms(with_members, Tool)


def test_it_answers_as_isinstance_does_for_tools_sources_and_middleware(tmp_path: Path) -> None:
    objects: list[object] = [
        *file_tools(Root([tmp_path])),
        Tools(),
        Compact(),
        object(),
        SimpleNamespace(call=None, spec=len),
    ]
    for obj in objects:
        for proto in (Tool, ToolSource, ModelMiddleware, ToolMiddleware):
            assert conforms(obj, proto) == isinstance(obj, proto), (obj, proto)
