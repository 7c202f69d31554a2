"""Model set-up (the script provider) and logging; the resolver is tested in tests/product/test_config.py."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from acp_agent.logs import configure_logging, log_file_path
from acp_agent.model_setup import (
    ModelConfigError,
    ModelSettings,
    ScriptModel,
    build_model,
    load_script,
)
from harness import ErrorKind, FinishReason, ModelError, Run, Tools
from harness.model import Finish, TextChunk, ToolStart

pytestmark = pytest.mark.anyio


def test_unknown_provider_and_missing_model_are_explained() -> None:
    with pytest.raises(ModelConfigError, match="unknown provider"):
        build_model(ModelSettings("nope"))
    with pytest.raises(ModelConfigError, match="ACP_AGENT_MODEL"):
        build_model(ModelSettings("openai", api_key="k"))
    with pytest.raises(ModelConfigError, match="ACP_AGENT_SCRIPT"):
        build_model(ModelSettings("script"))


def test_script_replies_carry_text_tool_calls_finish_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            [
                {"text": "hi", "chunks": 2, "delay_ms": 5, "finish": "length"},
                {"tool_calls": [{"name": "t", "input": {"a": 1}}]},
                {"error": {"kind": "context_too_long", "message": "too long"}},
            ]
        )
    )
    replies = load_script(path)
    assert replies[0].chunks == 2 and replies[0].delay_s == 0.005 and replies[0].finish is FinishReason.LENGTH
    name, tool_input, call_id = replies[1].tool_calls[0]  # type: ignore[misc]
    assert (name, tool_input) == ("t", {"a": 1}) and str(call_id).startswith("call_")
    assert isinstance(replies[2].error, ModelError) and replies[2].error.kind is ErrorKind.CONTEXT_TOO_LONG
    path.write_text("{not json")
    with pytest.raises(ModelConfigError, match="not valid JSON"):
        load_script(path)


async def test_script_model_streams_replies_in_order_then_fails_when_exhausted(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"text": "one"}, {"tool_calls": [{"name": "x"}]}]))
    model = build_model(ModelSettings("script", script=path))
    assert isinstance(model, ScriptModel)
    run = Run(model, Tools())
    from harness import Message

    async with run.turn(Message.user("q")) as events:
        async for _ in events:
            pass
    assert run.messages()[-1].text == "one"
    from harness.model import Prompt

    deltas = [d async for d in model.stream(Prompt(None, [], []))]
    assert isinstance(deltas[0], ToolStart) and isinstance(deltas[-1], Finish)
    assert not any(isinstance(d, TextChunk) for d in deltas)
    with pytest.raises(ModelError, match="no reply left"):
        async for _ in model.stream(Prompt(None, [], [])):
            pass


def test_log_file_goes_under_the_home_unless_overridden(tmp_path: Path) -> None:
    assert log_file_path(tmp_path, {}) == tmp_path / "logs" / "acp-agent.log"
    assert log_file_path(tmp_path, {"ACP_AGENT_LOG": "-"}) is None
    assert log_file_path(tmp_path, {"ACP_AGENT_LOG": str(tmp_path / "x.log")}) == tmp_path / "x.log"


def test_configure_logging_writes_the_file_and_filters_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setenv("ACP_AGENT_LOG", str(tmp_path / "agent.log"))
    stream = io.StringIO()
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        path = configure_logging("warning", tmp_path, stream=stream)
        logging.getLogger("acp_agent.test").info("only in the file")
        logging.getLogger("acp_agent.test").warning("in both")
        for handler in root.handlers:
            handler.flush()
        assert path == tmp_path / "agent.log"
        text = (tmp_path / "agent.log").read_text()
        assert "only in the file" in text and "in both" in text
        assert "in both" in stream.getvalue() and "only in the file" not in stream.getvalue()
    finally:
        for handler in list(root.handlers):
            if handler not in before:
                root.removeHandler(handler)
                handler.close()
