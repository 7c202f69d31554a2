"""The ``acp-conformance`` command in process, where it starts no agent: ``--list`` and the usage errors (exit
status 2, one line naming what is wrong)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_conformance.cli import main


def _scenario(folder: Path, name: str, check_id: str, requires: list[str] | None = None) -> None:
    data: dict[str, Any] = {
        "id": check_id,
        "title": f"the title of {check_id}",
        "level": "SHOULD",
        "source": "docs/overview.mdx",
        "requires": requires or [],
        "steps": [{"initialize": {}}],
    }
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")


def test_list_prints_the_selected_checks_with_level_source_and_requirements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = tmp_path / "extra"
    _scenario(extra, "x01_one", "extra.one", ["loadSession"])
    _scenario(extra, "x02_two", "extra.two")
    assert main(["--list", "--scenarios", str(extra), "--only-extra", "-k", "extra."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].split() == ["SHOULD", "extra.one", "docs/overview.mdx", "[loadSession]"]
    assert lines[1].endswith("[baseline]")


def test_k_selects_the_whole_scenario_of_a_matching_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "-k", "jsonrpc.parse-error"]) == 0
    ids = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
    assert ids == ["robust.survives-invalid-json", "jsonrpc.parse-error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "no-such-profile"], "no profile 'no-such-profile'"),
        (["--scenarios", "/nonexistent/dir"], "no such scenario folder: /nonexistent/dir"),
        ([], "--agent is required (the profile names no command)"),
    ],
)
def test_a_usage_error_exits_2_naming_it(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("acp-conformance: ") and message in err


def test_a_broken_scenario_or_profile_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "b01.json").write_text(
        '{"id": "b", "title": "t", "level": "MUST", "source": "docs/x.mdx"', "utf-8"
    )
    assert main(["--list", "--scenarios", str(broken)]) == 2
    assert "acp-conformance: " in capsys.readouterr().err
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\ncolour = "blue"\n', encoding="utf-8")
    assert main(["--list", "--profile", str(profile)]) == 2
    assert "unknown key(s) colour" in capsys.readouterr().err
