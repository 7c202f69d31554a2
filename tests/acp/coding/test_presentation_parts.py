"""The parts behind what editors show, one at a time: terminal output stitched from what the client keeps,
replay records kept small, slash command providers, the model list's values, the switches, and the
configuration ``acp-agent setup`` writes."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_agent.coding._commands import SlashCommand, SlashCommands, StaticCommands
from acp_agent.coding._terminal import OutputTracker
from acp_agent.coding._toggles import AutoCompactSwitch, Toggle
from acp_agent.coding.models._catalog import model_values
from acp_agent.commands.setup_cmd import Choice, save_choice
from acp_agent.session._replay import DIFF_KEEP_CHARS, SessionRecords, compact_record, turn_record
from acp_agent.session._setup import CommandOutcome

pytestmark = pytest.mark.anyio


# --- terminal output ------------------------------------------------------------------------------------


def test_output_that_grows_is_passed_on_once() -> None:
    t = OutputTracker()
    assert t.new("a\n", False) == "a\n"
    assert t.new("a\nb\n", False) == "b\n"
    assert t.new("a\nb\n", False) == "" and not t.cut


def test_a_client_that_keeps_the_end_is_followed_through_the_overlap() -> None:
    t = OutputTracker()
    lines = [f"line {i}\n" for i in range(1, 400)]
    t.new("".join(lines[:100]), False)
    assert t.new("".join(lines[50:150]), True) == "".join(lines[100:150])  # slid by 50 lines
    assert not t.cut
    gap = t.new("".join(lines[300:399]), True)  # it slid further than one read saw
    assert "no longer held" in gap and gap.endswith("line 399\n")


def test_a_client_that_keeps_only_the_start_is_told_as_cut() -> None:
    t = OutputTracker()
    t.new("start\n", False)
    assert t.new("start\n", True) == "" and t.cut


# --- replay records ------------------------------------------------------------------------------------------


def test_a_big_diff_record_keeps_its_changed_region_with_context() -> None:
    old = "".join(f"row {i}\n" for i in range(40_000))
    new = old.replace("row 20000\n", "row twenty thousand\n")
    record = {"toolCallId": "c", "content": [{"type": "diff", "path": "/p", "oldText": old, "newText": new}]}
    (kept,) = compact_record(record)["call"]["content"]
    assert len(kept["oldText"]) + len(kept["newText"]) < DIFF_KEEP_CHARS
    assert kept["oldText"].splitlines() == [f"row {i}" for i in range(19997, 20004)]
    assert "row twenty thousand" in kept["newText"]
    small = {"toolCallId": "s", "content": [{"type": "diff", "path": "/p", "oldText": "a", "newText": "b"}]}
    assert compact_record(small) == {"call": small}


def test_records_are_read_back_with_the_last_plan_and_the_turn_ends() -> None:
    lines: list[dict[str, Any]] = [
        {"call": {"toolCallId": "a", "title": "x"}},
        {"call": {"toolCallId": "a/b", "_meta": {"parentToolCallId": "a"}}},
        {"plan": [{"content": "one"}]},
        turn_record(3, "failed", "half a", ["a"], "the model failed"),
        {"plan": [{"content": "two"}]},
        {"garbage": True},
    ]
    records = SessionRecords.read(lines)
    assert set(records.calls) == {"a", "a/b"} and records.nested["a"][0]["toolCallId"] == "a/b"
    assert records.plan == [{"content": "two"}]
    assert records.turns[3][0]["error"] == "the model failed"


# --- slash commands ---------------------------------------------------------------------------------------


class _Link:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send(self, update: Any) -> None:
        self.sent.append(update)


class _Growing:
    """A provider whose commands change (custom commands or skills found later)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def commands(self) -> list[SlashCommand]:
        async def run(args: str) -> CommandOutcome:
            return CommandOutcome(reply=f"ran with {args}")

        return [SlashCommand(n, f"the {n} command", run) for n in self.names]


async def test_providers_add_commands_the_first_name_wins_and_refresh_sends_only_changes() -> None:
    link = _Link()
    slash = SlashCommands(link)  # pyright: ignore[reportArgumentType]

    async def builtin(args: str) -> CommandOutcome:
        return CommandOutcome(reply="builtin")

    slash.add(StaticCommands([SlashCommand("review", "built in", builtin, "what")]))
    growing = _Growing()
    slash.add(growing)
    await slash.refresh()
    growing.names = ["review", "deploy"]
    await slash.refresh()
    await slash.refresh()  # unchanged: nothing sent
    assert len(link.sent) == 2
    names = [c.name for c in link.sent[-1].available_commands]
    assert names == ["review", "deploy"]
    assert (await slash.run("/review x")) == CommandOutcome(reply="builtin")
    assert (await slash.run("/deploy prod")) == CommandOutcome(reply="ran with prod")
    assert await slash.run("/unknown") is None


async def test_the_list_is_sent_again_after_each_follow_up_until_the_first_prompt() -> None:
    link = _Link()
    slash = SlashCommands(link)  # pyright: ignore[reportArgumentType]
    await slash.refresh(force=True)
    await slash.client_followed_up()
    await slash.client_followed_up(prompt=True)
    await slash.client_followed_up()  # after the first prompt: only changes are sent
    assert len(link.sent) == 3


# --- model values and switches -----------------------------------------------------------------------------


def test_a_short_model_list_stays_flat_and_known_families_say_their_window() -> None:
    values = model_values(["claude-sonnet-4-5", "local-model"])
    assert values == [
        {"value": "claude-sonnet-4-5", "name": "claude-sonnet-4-5", "description": "200k tokens of context"},
        {"value": "local-model", "name": "local-model"},
    ]


def test_a_long_list_of_one_family_each_is_not_grouped_into_singletons() -> None:
    names = [f"model{i}-x" for i in range(20)]
    assert all("value" in v for v in model_values(names))


async def test_with_auto_compact_off_the_prompt_reaches_compaction_without_a_window() -> None:
    from harness import Message, Options, Prompt

    seen: list[Prompt] = []

    async def inner(prompt: Prompt) -> AsyncIterator[Any]:
        seen.append(prompt)
        return
        yield

    toggle = Toggle("auto_compact", "Auto-compact", "…")
    prompt = Prompt(None, [Message.user("hi")], (), Options(context_window=1000))
    switch = AutoCompactSwitch(toggle)
    async for _ in switch.stream(prompt, inner):
        pass
    toggle.on = False
    async for _ in switch.stream(prompt, inner):
        pass
    assert [p.options.context_window for p in seen] == [1000, None]


# --- acp-agent setup -------------------------------------------------------------------------------------------


def test_setup_writes_its_keys_and_keeps_every_other_line_of_config_toml(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# my settings\nprovider = "anthropic"  # the old one\ndefault_mode = "plan"\n\n[tools]\n'
        "# longer for the big build\nshell_timeout_s = 30\n"
    )
    save_choice(tmp_path, Choice("openai", "qwen3", "http://127.0.0.1:8080/v1", key='sk-"x"'))
    text = config.read_text()
    data = tomllib.loads(text)
    assert text.startswith("# my settings\n") and "# longer for the big build\nshell_timeout_s = 30\n" in text
    assert data["provider"] == "openai" and data["model"] == "qwen3" and data["default_mode"] == "plan"
    assert data["tools"] == {"shell_timeout_s": 30} and "sk-" not in text  # the key is not in the file
    key_file = Path(data["api_key_file"])
    assert key_file.read_text() == 'sk-"x"\n' and stat.S_IMODE(os.stat(key_file).st_mode) == 0o600


def test_setup_without_a_url_removes_the_old_one_and_quotes_odd_values(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('base_url = "http://old"\napi_key_file = "/k"\nmodel = "a"\n')
    save_choice(tmp_path, Choice("openai", 'we"ird\n', None))  # no key typed: the key file stays
    data = tomllib.loads((tmp_path / "config.toml").read_text())
    assert data == {"provider": "openai", "model": 'we"ird\n', "api_key_file": "/k"}
