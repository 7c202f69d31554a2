"""Retry counting: Retry, unknown tool names and invalid input count together against Options.tool_retries."""

from __future__ import annotations

import pytest

from harness import EndReason, ErrorKind, Message, Options, Retry, Run, Tools, tool
from harness.model import Finish, FinishReason, ToolInput, ToolReady, ToolStart
from harness.testing import FakeModel, Reply
from tests.harness.run_support import ScriptModel, all_results, assert_paired, drive, ended

pytestmark = pytest.mark.anyio


@tool
def alpha(text: str) -> str:
    return f"alpha {text}"


@tool
def beta() -> str:
    raise Retry("beta needs a path first")


@tool
def gamma() -> str:
    raise RuntimeError("gamma crashed")


def text_reply(text: str = "done") -> Reply:
    return Reply(text=text)


async def test_an_unknown_tool_name_gives_an_error_result_listing_the_tools() -> None:
    model = FakeModel([Reply(tool_calls=[("nope", {}, "c1")]), text_reply()])
    run = Run(model, Tools(alpha, beta))
    await drive(run, Message.user("go"))
    result = all_results(run.messages())["c1"]
    assert result.error is True
    assert result.text == "unknown tool 'nope'; the tools are: alpha, beta"
    assert ended(run).reason is EndReason.DONE


async def test_input_failing_the_schema_gives_an_error_result_naming_where_and_why() -> None:
    model = FakeModel([Reply(tool_calls=[("alpha", {"text": 5}, "c1")]), text_reply()])
    run = Run(model, Tools(alpha))
    await drive(run, Message.user("go"))
    result = all_results(run.messages())["c1"]
    assert result.error is True
    assert result.text.startswith("alpha: invalid input at text: ")
    assert "is not of type 'string'" in result.text


async def test_missing_required_input_is_an_invalid_input_result() -> None:
    model = FakeModel([Reply(tool_calls=[("alpha", {}, "c1")]), text_reply()])
    run = Run(model, Tools(alpha))
    await drive(run, Message.user("go"))
    result = all_results(run.messages())["c1"]
    assert result.error is True
    assert result.text.startswith("alpha: invalid input at ")
    assert "'text' is a required property" in result.text


async def test_unparseable_input_json_is_an_invalid_input_result() -> None:
    broken = [
        ToolStart("c1", "alpha"),
        ToolInput("c1", '{"text": '),
        ToolReady("c1"),
        Finish(FinishReason.TOOL_CALLS),
    ]
    model = ScriptModel([broken, [Finish(FinishReason.STOP)]])
    run = Run(model, Tools(alpha))
    await drive(run, Message.user("go"))
    result = all_results(run.messages())["c1"]
    assert result.error is True
    assert result.text.startswith("alpha: invalid input")
    assert ended(run).reason is EndReason.DONE


async def test_retry_gives_the_model_its_message_as_an_error_result() -> None:
    model = FakeModel([Reply(tool_calls=[("beta", {}, "c1")]), text_reply()])
    run = Run(model, Tools(beta))
    await drive(run, Message.user("go"))
    result = all_results(run.messages())["c1"]
    assert (result.text, result.error) == ("beta needs a path first", True)
    assert model.prompts[1].messages[-1].tool_results[0].text == "beta needs a path first"


async def test_retries_up_to_the_limit_do_not_fail_the_turn() -> None:
    model = FakeModel([Reply(tool_calls=[("beta", {})]) for _ in range(3)] + [text_reply()])
    run = Run(model, Tools(beta))  # default tool_retries is 3
    await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.DONE
    assert model.calls == 4


async def test_one_retry_past_the_limit_fails_the_turn_tool_retries_exceeded() -> None:
    model = FakeModel([Reply(tool_calls=[("beta", {}, f"c{i}")]) for i in range(4)] + [text_reply()])
    run = Run(model, Tools(beta))
    await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    assert model.calls == 4
    # The failing step is discarded; the three complete steps stay, paired.
    assert set(all_results(run.messages())) == {"c0", "c1", "c2"}
    assert_paired(run.messages())


async def test_unknown_names_invalid_input_and_retry_count_together() -> None:
    def model() -> FakeModel:
        return FakeModel(
            [
                Reply(tool_calls=[("nope", {}, "c1")]),
                Reply(tool_calls=[("alpha", {"text": 1}, "c2")]),
                Reply(tool_calls=[("beta", {}, "c3")]),
                text_reply(),
            ]
        )

    within = Run(model(), Tools(alpha, beta), options=Options(tool_retries=3))
    await drive(within, Message.user("go"))
    assert ended(within).reason is EndReason.DONE

    past = Run(model(), Tools(alpha, beta), options=Options(tool_retries=2))
    await drive(past, Message.user("go"))
    e = ended(past)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    assert set(all_results(past.messages())) == {"c1", "c2"}


async def test_several_bad_calls_in_one_step_each_count() -> None:
    model = FakeModel([Reply(tool_calls=[("nope", {}), ("beta", {})]), text_reply()])
    run = Run(model, Tools(beta), options=Options(tool_retries=1))
    await drive(run, Message.user("go"))
    assert ended(run).error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED


async def test_zero_retries_fail_on_the_first_unknown_name() -> None:
    model = FakeModel([Reply(tool_calls=[("nope", {})]), text_reply()])
    run = Run(model, Tools(alpha), options=Options(tool_retries=0))
    await drive(run, Message.user("go"))
    assert ended(run).error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    assert run.messages() == [Message.user("go")]


async def test_other_tool_exceptions_do_not_count() -> None:
    model = FakeModel([Reply(tool_calls=[("gamma", {}, f"c{i}")]) for i in range(3)] + [text_reply()])
    run = Run(model, Tools(gamma), options=Options(tool_retries=0))
    await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.DONE
    results = all_results(run.messages())
    assert [results[f"c{i}"].text for i in range(3)] == ["RuntimeError: gamma crashed"] * 3


async def test_the_count_starts_again_with_every_turn() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("beta", {})]),
            text_reply("one"),
            Reply(tool_calls=[("beta", {})]),
            text_reply("two"),
        ]
    )
    run = Run(model, Tools(beta), options=Options(tool_retries=1))
    await drive(run, Message.user("first"))
    assert ended(run).reason is EndReason.DONE
    await drive(run, Message.user("second"))
    assert ended(run).reason is EndReason.DONE
    assert run.messages()[-1].text == "two"


async def test_a_valid_call_after_a_correction_runs() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("alpha", {"text": 1}, "bad")]),
            Reply(tool_calls=[("alpha", {"text": "ok"}, "good")]),
            text_reply(),
        ]
    )
    run = Run(model, Tools(alpha))
    await drive(run, Message.user("go"))
    results = all_results(run.messages())
    assert results["bad"].error is True
    assert (results["good"].text, results["good"].error) == ("alpha ok", False)
