"""``harness.secrets.Secrets``: the one child environment and the one redaction seam, and where the agent uses
them (the editor's terminal, the logs)."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Result, ToolCall
from harness.secrets import REDACTED, Secrets
from harness.testing import Reply
from tests.acp.coding._support import calls, editor_agent, fake

pytestmark = pytest.mark.anyio

KEY = "sk-unit-test-key-0123456789"


def test_the_child_environment_has_no_secret_variable_and_no_copied_secret_value() -> None:
    secrets = Secrets.from_env({"ACP_AGENT_API_KEY": KEY}, ["ACP_AGENT_API_KEY", "GITHUB_TOKEN"])
    base = {
        "PATH": "/bin",
        "ACP_AGENT_API_KEY": KEY,
        "OPENAI_API_KEY": "sk-other-0123456789",  # a provider's variable: always a secret
        "GITHUB_TOKEN": "ghp_x",
        "COPY": f"Bearer {KEY}",  # the key under another name
        "SHORT": "1",
    }
    assert secrets.child_env(base) == {"PATH": "/bin", "SHORT": "1"}
    assert secrets.child_env(base, keep=["PATH", "COPY"]) == {"PATH": "/bin"}
    masked = {"ACP_AGENT_API_KEY": "", "COPY": "", "GITHUB_TOKEN": "", "OPENAI_API_KEY": ""}
    assert secrets.masked_env(base) == masked
    assert secrets.hidden_names(base) == {*masked, "ANTHROPIC_API_KEY"}  # every secret name, set or not


def test_short_values_are_not_treated_as_secrets() -> None:
    secrets = Secrets(values=["1234567", None, ""])
    assert secrets.values == frozenset()
    assert secrets.redact("1234567") == "1234567"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 64])
def test_streamed_output_is_redacted_whatever_the_chunk_boundaries(size: int) -> None:
    secrets = Secrets(values=[KEY, "another-secret-value"])
    stream = f"before {KEY} middle {KEY[:-1]}! another-secret-value end sk-unit"
    redactor = secrets.redactor()
    out = "".join(redactor.feed(stream[i : i + size]) for i in range(0, len(stream), size))
    out += redactor.flush()
    assert out == f"before {REDACTED} middle {KEY[:-1]}! {REDACTED} end sk-unit"


@dataclass(frozen=True)
class _Event:
    text: str
    nested: dict[str, Any]


async def test_the_middleware_redacts_each_result_its_content_and_its_value() -> None:
    secrets = Secrets(values=[KEY])

    async def tool(call: ToolCall, context: Any) -> Result:
        return Result.text(f"key={KEY}", value={"output": [f"x {KEY}"], "code": 0})

    result = await secrets.call(ToolCall("c", "t", {}), None, tool)  # type: ignore[arg-type]
    assert result.as_text() == f"key={REDACTED}"
    assert result.value == {"output": [f"x {REDACTED}"], "code": 0}
    event = secrets.redact_value(_Event(f"a {KEY}", {"k": (KEY,)}))
    assert event == _Event(f"a {REDACTED}", {"k": (REDACTED,)})


def test_a_log_record_holding_a_key_is_redacted_in_the_file_and_on_stderr(tmp_path: Path) -> None:
    from acp_agent.logs import configure_logging

    secrets = Secrets(values=[KEY])
    stream = io.StringIO()
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        path = configure_logging("info", tmp_path, stream=stream, redact=secrets.redact)
        log = logging.getLogger("acp_agent.test")
        log.warning("sent %s to the server", KEY)
        try:
            raise ValueError(f"the server echoed {KEY}")
        except ValueError:
            log.exception("failed")
        for handler in root.handlers:
            handler.flush()
        assert path is not None
        written = path.read_text() + stream.getvalue()
        assert KEY not in written and f"sent {REDACTED} to the server" in written
        assert f"the server echoed {REDACTED}" in written
    finally:
        for handler in list(root.handlers):
            if handler not in before:
                root.removeHandler(handler)
                handler.close()


@pytest.mark.process
async def test_the_editors_terminal_is_told_to_blank_the_keys_the_agent_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_user-marked-secret-0123")
    model = fake(calls(("shell", {"command": "echo hi"})), Reply(text="ok"))
    caps = {"terminal": True}
    environ = {"ACP_AGENT_SECRET_ENV": "GITHUB_TOKEN"}
    async with editor_agent(tmp_path, model, capabilities=caps, environ=environ) as (editor, sid, _):
        with anyio.fail_after(30):
            answer = await editor.call(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
            )
        assert answer["stopReason"] == "end_turn"
        (created,) = editor.requests_of("terminal/create")
        sent = {item["name"]: item["value"] for item in created["env"]}
        assert sent["OPENAI_API_KEY"] == "" and sent["GITHUB_TOKEN"] == ""
        assert KEY not in str(created)
