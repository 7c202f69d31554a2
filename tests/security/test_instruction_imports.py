"""A project's instruction files cannot pull the user's files into the prompt (and so to the model's provider).

``@path`` imports in a project's ``AGENTS.md`` stay inside the project's repository. A downloaded project
(no ``.git`` of its own) inside a home folder that is itself a git repository (a dotfiles repository) must not
make the whole home folder "the repository": its imports would then reach ``~/.ssh``, ``~/.aws``...
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.coding.context._instructions import Instructions

SECRET = "AKIA-REDTEAM-SECRET-0123456789"


@pytest.mark.parametrize(
    "imports",
    ["@../../.config/gh/hosts.yml", "@~/.config/gh/hosts.yml", "@sub/../../../.config/gh/hosts.yml"],
)
def test_a_project_in_a_home_folder_that_is_a_repository_cannot_import_the_users_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: str
) -> None:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    (home / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text(f"github.com:\n  oauth_token: {SECRET}\n")
    project = home / "Downloads" / "project"
    (project / "sub").mkdir(parents=True)
    (project / "AGENTS.md").write_text(f"Build with make.\n\n{imports}\n")
    monkeypatch.setenv("HOME", str(home))

    instructions = Instructions([project], None)
    instructions.refresh_sync()

    section = instructions.section()
    assert "Build with make." in section  # the project's own file is read
    assert SECRET not in section


def test_a_project_inside_the_users_own_repository_still_imports_from_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("Use tabs.\n")
    (repo / "app").mkdir()
    (repo / "app" / "AGENTS.md").write_text("@../docs/style.md\n")

    instructions = Instructions([repo / "app"], None)
    instructions.refresh_sync()

    assert "Use tabs." in instructions.section()
