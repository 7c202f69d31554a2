"""New files at the top of the project inside the sandbox (item 13): ordinary ones are made, protected
names never stay (existing ones are read-only mounts; a new one is moved aside once the command ended)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.sandbox import SandboxPolicy
from harness.testing import call_tool
from harness.tools import Root, Shell

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("landlock")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "a.py").write_text("print('a')\n")
    (project / "README.md").write_text("old\n")
    (project / ".config").mkdir()
    return project.resolve()


def _there(path: Path) -> bool:
    return os.path.lexists(path)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def run(project: Path, command: str, **inp: Any) -> Any:
    temp = project.parent / "tmp"
    temp.mkdir(exist_ok=True)
    policy = SandboxPolicy(roots=(project,), temp=temp)
    shell = Shell(Root([project]), sandbox=lambda _input: policy)
    return (await call_tool(shell, {"command": command, **inp})).result


@pytest.mark.process
async def test_ordinary_files_are_made_changed_and_removed_at_the_top_of_the_project(project: Path) -> None:
    result = await run(
        project,
        "touch notes.txt && echo out > out.txt && printf 'module x\\n' > go.mod && echo '{}' > package.json "
        "&& sed -i s/old/new/ README.md && cp out.txt copy.txt && mv copy.txt moved.txt && rm out.txt "
        "&& echo done",
    )
    assert "done" in result.as_text(), result.as_text()
    assert (project / "notes.txt").exists() and (project / "go.mod").read_text() == "module x\n"
    assert (project / "package.json").exists() and (project / "moved.txt").read_text() == "out\n"
    assert (project / "README.md").read_text() == "new\n" and not (project / "out.txt").exists()
    assert "sandbox_removed" not in result.value


_PROTECTED_FILES = [
    ("touch .envrc", ".envrc"),
    ("echo 'gitdir: /tmp/evil' > .git", ".git"),
    ("echo 'repos: []' > .pre-commit-config.yaml", ".pre-commit-config.yaml"),
    ("ln src/a.py .envrc", ".envrc"),
    ("touch n.txt && mv n.txt .bashrc", ".bashrc"),
    ("echo '{}' > evil.code-workspace", "evil.code-workspace"),
    ("echo '{}' > Evil.CODE-WORKSPACE", "Evil.CODE-WORKSPACE"),
    ("echo x > .config/mimeapps.list", ".config/mimeapps.list"),
    ('python3 -c \'open(".nvim.lua", "w").write("x")\'', ".nvim.lua"),
    ("(sleep 0.2; touch .exrc) & disown", ".exrc"),
]


@pytest.mark.process
@pytest.mark.parametrize(("command", "name"), _PROTECTED_FILES)
async def test_a_protected_name_made_by_a_command_does_not_stay(
    project: Path, command: str, name: str
) -> None:
    result = await run(project, command + "; sleep 0.5; echo ran")
    assert not _there(project / name), result.as_text()
    if _there(project / f"{name}.refused"):
        assert "moved aside" in result.as_text() and result.value["sandbox_removed"] == [str(project / name)]
    assert (project / "src" / "a.py").read_text() == "print('a')\n"


@pytest.mark.parametrize(
    "command",
    ["mkdir .vscode", "ln -s /etc .vscode", "mkfifo .envrc", "mkdir -p .config/autostart", "mkdir build"],
)
@pytest.mark.process
async def test_folders_links_and_special_files_are_not_made_at_the_top(project: Path, command: str) -> None:
    await run(project, command)
    assert _names(project) == [".config", "README.md", "src"]
    assert _names(project / ".config") == []


@pytest.mark.process
async def test_existing_protected_entries_cannot_be_removed_renamed_or_replaced(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / ".envrc").write_text("ok\n")
    await run(
        project,
        "rm -rf .git; mv .git g; mv .envrc e; rm -f .envrc; echo x > n; mv n .envrc; ln -f src/a.py .envrc",
    )
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / ".envrc").read_text() == "ok\n"


@pytest.mark.process
async def test_a_build_folder_still_comes_from_make_dirs(project: Path) -> None:
    result = await run(project, "touch build/out.o && echo built", make_dirs=["build"])
    assert "built" in result.as_text() and (project / "build" / "out.o").exists()
