"""A ToolSource is read at every step, so its tools may change between steps (the design's Unlockable)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harness import Call, EndReason, FunctionTool, Hints, Message, Result, Run, Tool, Tools, ToolSpec
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, drive, ended

pytestmark = pytest.mark.anyio


class Unlockable:
    """``unlock`` opens the vault; from the next step on, ``vault_read`` is offered too."""

    def __init__(self) -> None:
        self.open = False
        self.reads = 0

    async def tools(self) -> Sequence[Tool]:
        self.reads += 1

        def unlock(call: Call) -> Result:
            self.open = True
            return Result.text("Unlocked; vault_read is available now")

        out: list[Tool] = [
            FunctionTool(unlock, name="unlock", description="Unlocks the vault", schema={"type": "object"})
        ]
        if self.open:

            def vault_read(call: Call) -> Result:
                return Result.text("42")

            out.append(
                FunctionTool(
                    vault_read,
                    name="vault_read",
                    description="Reads the vault",
                    schema={"type": "object"},
                    hints=Hints(read_only=True),
                )
            )
        return out


def offered(spec_list: Sequence[ToolSpec]) -> list[str]:
    return [s.name for s in spec_list]


async def test_a_tool_source_that_changes_between_steps_offers_the_new_tool_at_the_next_step() -> None:
    source = Unlockable()
    model = FakeModel(
        [
            Reply(tool_calls=[("unlock", {}, "c1")]),
            Reply(tool_calls=[("vault_read", {}, "c2")]),
            Reply(text="The vault holds 42."),
        ]
    )
    run = Run(model, source)
    await drive(run, Message.user("What is in the vault?"))
    assert ended(run).reason is EndReason.DONE
    assert offered(model.prompts[0].tools) == ["unlock"]
    assert offered(model.prompts[1].tools) == ["unlock", "vault_read"]
    results = all_results(run.messages())
    assert results["c1"].text == "Unlocked; vault_read is available now"
    assert (results["c2"].text, results["c2"].error) == ("42", False)
    assert source.reads >= 3


async def test_a_tool_not_yet_offered_is_an_unknown_tool() -> None:
    source = Unlockable()
    model = FakeModel([Reply(tool_calls=[("vault_read", {}, "c1")]), Reply(text="Locked.")])
    run = Run(model, source)
    await drive(run, Message.user("read it"))
    result = all_results(run.messages())["c1"]
    assert result.error is True
    assert result.text == "unknown tool 'vault_read'; the tools are: unlock"


async def test_tools_mixes_fixed_tools_and_sources() -> None:
    def clock() -> str:
        return "12:00"

    source = Unlockable()
    source.open = True
    model = FakeModel([Reply(text="hi")])
    run = Run(model, Tools(FunctionTool(clock, hints=Hints(read_only=True)), source))
    await drive(run, Message.user("x"))
    assert offered(model.prompts[0].tools) == ["clock", "unlock", "vault_read"]
    assert model.prompts[0].tools[2].hints.read_only is True


async def test_the_prompt_carries_each_tools_spec() -> None:
    def search(query: str, limit: int = 5) -> str:
        """Searches the web."""
        return query

    model = FakeModel([Reply(text="hi")])
    run = Run(model, Tools(FunctionTool(search)))
    await drive(run, Message.user("x"))
    spec = model.prompts[0].tools[0]
    assert spec.name == "search"
    assert spec.description == "Searches the web."
    assert spec.schema["required"] == ["query"]
