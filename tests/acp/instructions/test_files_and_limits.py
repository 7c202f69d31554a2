"""The files that shape the agent, read safely and within limits: instructions, commands, skills, the
base prompt, the hooks' configuration. Unit tests on the modules (no session)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acp_agent.coding.context._context import DEFAULT_PLACEHOLDER, PromptFileError, base_prompt
from acp_agent.coding.context._custom_commands import Commands, expand_arguments
from acp_agent.coding.context._hooks import interpret
from acp_agent.coding.context._instructions import FILE_LIMIT, TOTAL_LIMIT, Instructions
from acp_agent.coding.context._process import Completed
from acp_agent.coding.context._skills import LISTING_LIMIT, Skills
from acp_agent.coding.context._textfiles import read_bounded, split_front_matter
from acp_agent.config import ConfigError, load_config
from acp_agent.config._checks import At, Problems
from acp_agent.config._hooks import HookEntry, check_hooks

# --- reading ------------------------------------------------------------------------------------------


def test_a_project_file_that_links_outside_its_repository_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("private key")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").symlink_to(secret)
    (repo / "CLAUDE.md").symlink_to(repo / "inside.md")
    (repo / "inside.md").write_text("inside rules")
    assert read_bounded(repo / "AGENTS.md", 100, inside=repo) is None
    inside = read_bounded(repo / "CLAUDE.md", 100, inside=repo)
    assert inside is not None and inside.text == "inside rules"


def test_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    assert read_bounded(tmp_path / "AGENTS.md", 100, inside=tmp_path) is None


def test_a_long_file_is_cut_at_a_line_within_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_text("".join(f"line {i}\n" for i in range(1000)))
    read = read_bounded(path, 100)
    assert read is not None and read.cut and read.size == path.stat().st_size
    assert len(read.text.encode()) <= 100 and read.text.endswith("\n")


def test_front_matter_is_yaml_and_a_broken_header_is_read_line_by_line() -> None:
    meta, body = split_front_matter("---\nname: x\ndescription: >\n  folded\n  text\n---\nBody\n")
    assert meta == {"name": "x", "description": "folded text"} and body == "Body\n"
    meta, body = split_front_matter("---\ndescription: use it: when asked\nargument-hint: [a] [b]\n---\nB")
    assert meta == {"description": "use it: when asked", "argument-hint": "[a] [b]"} and body == "B"
    assert split_front_matter("no header\n---\n") == ({}, "no header\n---\n")


# --- instructions -------------------------------------------------------------------------------------


def test_a_file_over_the_limit_is_cut_with_a_note_and_the_total_limit_names_what_was_left_out(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    deep = repo / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("x" * 10 + "\n" + "y" * (FILE_LIMIT + 5000) + "\n")
    for folder in (repo / "a", repo / "a" / "b", deep):
        (folder / "AGENTS.md").write_text(("z" * 100 + "\n") * (FILE_LIMIT // 101))
    instructions = Instructions([deep], None)
    assert instructions.refresh_sync()
    section = instructions.section()
    assert f"[Cut: {repo / 'AGENTS.md'} holds" in section
    assert f"Not included, over the {TOTAL_LIMIT // 1024} KiB total for instructions: " in section
    assert str(deep / "AGENTS.md") in section.rsplit("Not included", 1)[1]
    assert not instructions.refresh_sync(), "nothing changed: nothing re-read"


def test_additional_directories_bring_their_own_instructions_once(tmp_path: Path) -> None:
    main, extra = tmp_path / "main", tmp_path / "lib"
    for d in (main, extra):
        (d / ".git").mkdir(parents=True)
        (d / "AGENTS.md").write_text(f"rules of {d.name}\n")
    nested = main / "sub"
    nested.mkdir()
    instructions = Instructions([main, extra, nested], None)
    instructions.refresh_sync()
    assert instructions.paths == [main / "AGENTS.md", extra / "AGENTS.md"]


# --- commands -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        ("Fix $1 then $2; all: $ARGUMENTS", 'a "b c"', 'Fix a then b c; all: a "b c"'),
        ("Only $3 and $10", "x y", "Only  and $10"),
        ("No placeholder.", "extra words", "No placeholder.\n\nARGUMENTS: extra words"),
        ("No placeholder.", "", "No placeholder."),
        ("Unclosed $1", '"oops', 'Unclosed "oops'),
    ],
)
def test_command_arguments_are_substituted(body: str, args: str, expected: str) -> None:
    assert expand_arguments(body, args) == expected


@pytest.mark.anyio
async def test_project_commands_win_over_user_ones_and_built_in_names_are_kept(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".acp-agent" / "commands" / "ops").mkdir(parents=True)
    (repo / ".acp-agent" / "commands" / "ops" / "deploy.md").write_text("deploy from project")
    (repo / ".acp-agent" / "commands" / "mode.md").write_text("shadowing a built-in")
    (repo / ".acp-agent" / "commands" / ".hidden.md").write_text("hidden")
    user = tmp_path / "user-commands"
    (user / "ops").mkdir(parents=True)
    (user / "ops" / "deploy.md").write_text("deploy from user")
    (user / "notes.md").write_text("---\ndescription: Take notes\n---\nNote $ARGUMENTS")
    outside = tmp_path / "outside.md"
    outside.write_text("outside the repository")
    (repo / ".acp-agent" / "commands" / "leak.md").symlink_to(outside)
    codex = tmp_path / "codex-prompts"
    codex.mkdir()
    (codex / "explain.md").write_text("Explain $1")
    commands = Commands([(repo, repo)], [user], codex_prompts=codex, reserved=["mode"])
    assert commands.scan_sync()
    assert commands.names() == ["notes", "ops:deploy", "prompts:explain"]
    by_name = {c.name: c for c in await commands.commands()}
    deploy = await by_name["ops:deploy"].run("")
    assert deploy is not None and deploy.prompt == "deploy from project"
    assert "mode" not in by_name
    listed = {name: c.to_acp() for name, c in by_name.items()}
    assert listed["notes"] == {
        "name": "notes",
        "description": "Take notes (user)",
        "input": {"hint": "arguments"},
    }
    assert not commands.scan_sync()
    (user / "notes.md").write_text("changed")
    assert commands.scan_sync()


def test_a_command_file_that_is_no_regular_file_is_skipped_and_logged_once_per_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = tmp_path / "repo"
    folder = repo / ".acp-agent" / "commands"
    (folder / "sub").mkdir(parents=True)
    (folder / "ok.md").write_text("fine")
    os.mkfifo(folder / "fifo.md")  # opening it would block the scan
    os.mkfifo(folder / "sub" / "deep.md")
    (folder / "dangling.md").symlink_to(tmp_path / "nothing.md")
    (folder / "loop.md").symlink_to("loop.md")
    (folder / "null.md").symlink_to("/dev/null")  # a device
    commands = Commands([(repo, repo)], [])
    with caplog.at_level("WARNING"):
        assert commands.scan_sync()
    assert commands.names() == ["ok"]
    said = {r.getMessage() for r in caplog.records}
    assert (
        f"command file {folder / 'fifo.md'} is skipped: it is a FIFO (named pipe), not a regular file" in said
    )
    assert (
        f"command file {folder / 'sub' / 'deep.md'} is skipped: it is a FIFO (named pipe), not a regular file"
        in said
    )
    assert (
        f"command file {folder / 'null.md'} is skipped: it is a character device, not a regular file" in said
    )
    for name in ("dangling.md", "loop.md"):
        assert (
            f"command file {folder / name} is skipped: it is a symbolic link that leads nowhere (or loops)"
            in said
        )
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert not commands.scan_sync()  # nothing changed: not said again
    assert caplog.records == []
    (folder / "fifo.md").unlink()
    with caplog.at_level("WARNING"):
        assert commands.scan_sync()  # a change: the rest is said again
    assert not any("fifo.md" in r.getMessage() for r in caplog.records)
    assert any("deep.md" in r.getMessage() for r in caplog.records)


# --- skills -------------------------------------------------------------------------------------------


def _skill(root: Path, name: str, description: str, body: str = "Body.") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return folder


@pytest.mark.anyio
async def test_the_skill_tool_reads_only_inside_the_skill_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    folder = _skill(repo / ".agents" / "skills", "demo", "A demo.")
    (folder / "ref.md").write_text("reference text")
    (tmp_path / "secret").write_text("secret")
    skills = Skills([(repo, repo)], [])
    skills.scan_sync()
    [tool] = await skills.tools()
    ok = await tool.call({"name": "demo", "file": "ref.md"}, _no_call())
    assert ok.as_text() == "reference text" and not ok.error
    for bad in ("../../secret", str(tmp_path / "secret")):
        refused = await tool.call({"name": "demo", "file": bad}, _no_call())
        assert refused.error and "secret" not in refused.as_text().replace(bad, "")
    unknown = await tool.call({"name": "nope"}, _no_call())
    assert unknown.error and "the skills are: demo" in unknown.as_text()


def test_skills_are_listed_within_the_limit_project_first(tmp_path: Path) -> None:
    repo, user = tmp_path / "repo", tmp_path / "user"
    _skill(repo / ".claude" / "skills", "shared", "The project's.")
    _skill(user, "shared", "The user's.")
    for i in range(30):
        _skill(user, f"s{i:02d}", "d" * 400)
    _skill(user, "nodesc", "")
    skills = Skills([(repo, repo)], [user])
    skills.scan_sync()
    section = skills.section()
    assert "- shared: The project's." in section and "The user's." not in section
    assert "nodesc" not in section
    assert len(section) < LISTING_LIMIT + 1000 and "more skills not listed" not in section
    assert "- s00: " + "d" * 199 + "…\n" in section, "descriptions shortened first"
    for i in range(30, 70):
        _skill(user, f"s{i:02d}", "d" * 400)
    assert skills.scan_sync()
    section = skills.section()
    assert len(section) < LISTING_LIMIT + 1000 and "- … and 33 more skills not listed here" in section


@pytest.mark.anyio
async def test_no_skill_no_skill_tool(tmp_path: Path) -> None:
    skills = Skills([(tmp_path, tmp_path)], [])
    skills.scan_sync()
    assert await skills.tools() == [] and skills.section() == ""


def _no_call() -> Any:
    return None


# --- the base prompt ----------------------------------------------------------------------------------


def test_the_users_prompt_file_replaces_or_extends_the_default(tmp_path: Path) -> None:
    default = base_prompt(None)
    assert default.startswith("You are acp-agent") and "# Planning" in default
    replace = tmp_path / "replace.md"
    replace.write_text("You are terse.\n")
    assert base_prompt(replace) == "You are terse."
    extend = tmp_path / "extend.md"
    extend.write_text(f"{DEFAULT_PLACEHOLDER}\n\nAlways answer in French.\n")
    assert base_prompt(extend) == default + "\n\nAlways answer in French."
    with pytest.raises(PromptFileError, match="cannot be read"):
        base_prompt(tmp_path / "missing.md")


def test_system_prompt_file_comes_from_the_user_configuration_only(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "acp-agent"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('system_prompt_file = "prompts/mine.md"\n')
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text('system_prompt_file = "/etc/passwd"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    assert load_config(project, {}, env).system_prompt_file == user / "prompts" / "mine.md"
    (user / "config.toml").write_text("")
    assert load_config(project, {}, env).system_prompt_file is None


# --- hooks: configuration and outcomes ------------------------------------------------------------------


def test_hook_entries_are_checked_and_each_problem_named(tmp_path: Path) -> None:
    table = {
        "pre_tool_use": [
            {"matcher": "shell|write_.*", "command": "./check.sh", "timeout_s": 5},
            {"matcher": "(", "command": "x"},
            {"command": "x", "timeout_s": 0},
            {"command": ""},
            {"command": "x", "when": "always"},
        ],
        "on_save": [{"command": "x"}],
        "stop": {"command": "x"},
    }
    out = Problems()
    found = check_hooks(table, At("cfg", "hooks", out))
    assert found == (HookEntry("pre_tool_use", "./check.sh", "shell|write_.*", 5.0, "cfg"),)
    keys = [p.key for p in out.items]
    assert keys == [
        "hooks.pre_tool_use.1.matcher",
        "hooks.pre_tool_use.2.timeout_s",
        "hooks.pre_tool_use.3.command",
        "hooks.pre_tool_use.4.when",
        "hooks.on_save",
        "hooks.stop",
    ]
    assert found is not None
    assert found[0].matches("shell") and found[0].matches("write_file") and not found[0].matches("read_file")


def test_a_bad_hook_in_config_toml_fails_the_configuration_with_the_file_and_key(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "acp-agent"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('[[hooks.pre_tool_use]]\nmatcher = "["\ncommand = "x"\n')
    with pytest.raises(
        ConfigError, match=r"hooks\.pre_tool_use\.0\.matcher: is not a valid regular expression"
    ):
        load_config(tmp_path, {}, {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("done", "expected"),
    [
        (Completed(0, '{"decision": "deny", "reason": "no"}'), {"blocked": "no"}),
        (Completed(0, '{"decision": "ask", "reason": "sure?"}'), {"ask": "sure?"}),
        (Completed(0, '{"decision": "allow", "context": "fyi"}'), {"context": "fyi"}),
        (
            Completed(
                0, '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "r"}}'
            ),
            {"blocked": "r"},
        ),
        (Completed(0, "plain text is not context for a tool hook"), {}),
        (Completed(2, "", "the reason\n"), {"blocked": "the reason"}),
        (Completed(2, "from stdout", ""), {"blocked": "from stdout"}),
        (Completed(1, "", "boom"), {"failure": "exited with status 1: boom"}),
        (Completed(None, timed_out=True), {"failure": "timed out after 30 s and was killed"}),
        (Completed(None, error="cannot start bash: nope"), {"failure": "cannot start bash: nope"}),
    ],
)
def test_a_pre_tool_hook_outcome_is_read_from_its_exit_code_and_json(
    done: Completed, expected: dict[str, str]
) -> None:
    outcome = interpret(HookEntry("pre_tool_use", "h"), done)
    got = {k: v for k in ("blocked", "ask", "context", "failure") if (v := getattr(outcome, k)) is not None}
    assert got == expected


def test_plain_stdout_of_a_prompt_hook_is_context() -> None:
    outcome = interpret(HookEntry("user_prompt_submit", "h"), Completed(0, "today is a holiday\n"))
    assert outcome.context == "today is a holiday"


def test_the_readmes_hooks_example_is_a_valid_configuration(tmp_path: Path) -> None:
    import re
    import tomllib

    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```toml\n(.*?)```", readme, flags=re.S) if "[[hooks." in b]
    out = Problems()
    found = check_hooks(tomllib.loads(block)["hooks"], At("README", "hooks", out)) or ()
    assert out.items == [] and [h.event for h in found] == [
        "pre_tool_use",
        "post_tool_use",
        "user_prompt_submit",
    ]


def test_a_claude_md_that_imports_agents_md_and_more_brings_them_inside_the_repository_only(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "CLAUDE.md").write_text(
        "See @docs/style.md and @../outside.md; mention @alice; not `@docs/code.md`.\n"
        "```\n@docs/fenced.md\n```\n"
    )
    (repo / "docs" / "style.md").write_text("Style: short functions. More in @deeper.md\n")
    (repo / "docs" / "deeper.md").write_text("Deeper import.\n")
    for name in ("code.md", "fenced.md"):
        (repo / "docs" / name).write_text(f"NOT-IMPORTED {name}\n")
    (tmp_path / "outside.md").write_text("OUTSIDE\n")
    instructions = Instructions([repo], None)
    instructions.refresh_sync()
    section = instructions.section()
    assert f"### Imported from {repo / 'docs' / 'style.md'}\n\nStyle: short functions." in section
    assert "Deeper import." in section
    assert "OUTSIDE" not in section and "NOT-IMPORTED" not in section
    instructions.refresh_sync()  # the first read's imports join what is watched
    assert not instructions.refresh_sync()
    (repo / "docs" / "deeper.md").write_text("Deeper, changed at last.\n")
    assert instructions.refresh_sync() and "Deeper, changed at last." in instructions.section()
