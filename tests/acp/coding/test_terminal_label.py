"""What goes on the wire for a sandboxed command in the editor's terminal, for a Zed-like and a Toad-like
client: ``terminal/create`` carries ``/bin/sh <runner> "<command>"`` (Toad labels the terminal with that line,
and has nothing else to label it with: no ``_meta``, no title, its own terminal ids), and the tool call's
title, sent after the terminal is embedded, is the command itself (Zed relabels the terminal with it)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from harness.testing import Reply
from tests.acp.coding._support import calls, editor_agent, fake, final, prompt, tool_updates
from tests.sandbox.conftest import require_landlock

pytestmark = [pytest.mark.anyio, pytest.mark.process]

COMMAND = "echo hi there && ls src"


@pytest.mark.parametrize(
    "client_info",
    [{"name": "zed", "version": "0.200"}, {"name": "toad", "version": "0.5"}],
    ids=["zed", "toad"],
)
async def test_the_editor_terminal_line_reads_as_the_command_and_the_title_is_the_command(
    tmp_path: Path, client_info: dict[str, Any]
) -> None:
    require_landlock()
    (tmp_path / "project" / "src").mkdir(parents=True)
    model = fake(calls(("shell", {"command": COMMAND})), Reply(text="ok"))
    caps = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    async with editor_agent(
        tmp_path, model, capabilities=caps, mode="accept-edits", client_info=client_info
    ) as (
        editor,
        sid,
        _,
    ):
        await prompt(editor, sid, "run")
        (created,) = editor.requests_of("terminal/create")
        line = created["command"]
        match = re.fullmatch(r'/bin/sh (/\S+/run-[0-9a-f]{12}) "echo hi there && ls src"', line)
        assert match, line  # the golden: a short runner, the command last and whole
        assert "args" not in created and "python" not in line and "_start.py" not in line
        assert shlex.join([line]).strip("'") == line  # Toad's label: the line as it is
        titles = [u["title"] for u in tool_updates(editor, "call_0_shell") if "title" in u]
        assert titles[-1] == COMMAND  # after the terminal: Zed relabels it with the command
        end = final(editor, "call_0_shell")
        assert "hi there" in end["rawOutput"]["output"], end  # it ran, in the sandbox's runner
