"""Every editor snippet under editors/ parses, and its command line, launched exactly as written (only the
path of the installed `acp-harness-agent` script substituted), answers `initialize` over stdio."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
ACP_AGENT = Path(sys.executable).parent / "acp-harness-agent"


@dataclass(frozen=True)
class Launch:
    snippet: str
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict[str, str])


def _servers(path: Path) -> list[Launch]:
    data = json.loads(path.read_text(encoding="utf-8"))
    launches: list[Launch] = []
    for name, entry in data["agent_servers"].items():
        assert isinstance(entry["command"], str) and entry["command"], f"{path}: {name}: no command"
        launches.append(
            Launch(
                f"{path.relative_to(REPO)}:{name}",
                entry["command"],
                list(entry.get("args", [])),
                dict(entry.get("env", {})),
            )
        )
    return launches


def _lua(path: Path) -> list[Launch]:
    text = path.read_text(encoding="utf-8")
    match = re.search(r"commands\s*=\s*\{\s*default\s*=\s*\{([^}]*)\}", text)
    assert match, f"{path}: no commands.default"
    words = re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(1))
    env_match = re.search(r"\benv\s*=\s*\{([^}]*)\}", text)
    env = dict(re.findall(r'([A-Z_][A-Z0-9_]*)\s*=\s*"([^"]*)"', env_match.group(1))) if env_match else {}
    return [Launch(str(path.relative_to(REPO)), words[0], words[1:], env)]


def _elisp(path: Path) -> list[Launch]:
    text = path.read_text(encoding="utf-8")
    command = re.search(r':command\s+"([^"]+)"', text)
    params = re.search(r":command-params\s+'\(([^)]*)\)", text)
    env_list = re.search(r":environment-variables\s+'\(([^)]*)\)", text)
    assert command and params, f"{path}: no :command / :command-params"
    env = dict(item.split("=", 1) for item in re.findall(r'"([^"]*)"', env_list.group(1))) if env_list else {}
    return [
        Launch(str(path.relative_to(REPO)), command.group(1), re.findall(r'"([^"]*)"', params.group(1)), env)
    ]


def _registry(path: Path) -> list[Launch]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("id", "name", "version", "description", "distribution"):
        assert data.get(key), f"{path}: {key} missing"
    assert path.parent.name == data["id"], "the registry wants the directory named by the id"
    uvx = data["distribution"]["uvx"]
    _package, _, version = uvx["package"].partition("==")
    assert version == data["version"]
    # `uvx --from PACKAGE==V CMD ARGS` runs the package's console script CMD with ARGS.
    return [
        Launch(str(path.relative_to(REPO)), uvx["cmd"], list(uvx.get("args", [])), dict(uvx.get("env", {})))
    ]


def snippets() -> list[Launch]:
    if not EDITORS.is_dir():
        return []
    found: list[Launch] = []
    for path in sorted(EDITORS.rglob("*")):
        if path.suffix == ".json" and path.parent.parent.name == "registry":
            found += _registry(path)
        elif path.suffix == ".json":
            found += _servers(path)
        elif path.suffix == ".lua":
            found += _lua(path)
        elif path.suffix == ".el":
            found += _elisp(path)
    return found


def test_every_editor_directory_has_a_three_step_readme_and_a_snippet() -> None:
    for name in ("zed", "jetbrains", "neovim", "emacs", "registry"):
        readme = (EDITORS / name / "README.md").read_text(encoding="utf-8")
        assert re.search(r"^1\. .*^2\. .*^3\. ", readme, re.S | re.M), f"{name}/README.md: three steps"
    kinds = {Path(launch.snippet.split(":")[0]).parts[1] for launch in snippets()}
    assert kinds == {"zed", "jetbrains", "neovim", "emacs", "registry"}
    assert len([s for s in snippets() if s.snippet.startswith("editors/zed/")]) == 2


@pytest.mark.process
@pytest.mark.parametrize("launch", snippets(), ids=lambda launch: launch.snippet)
def test_snippet_command_answers_initialize(launch: Launch, tmp_path: Path) -> None:
    assert launch.command == "acp-harness-agent", "snippets run the installed console script"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env.update(launch.env)
    env.update(ACP_AGENT_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    request: dict[str, object] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }
    result = subprocess.run(
        [str(ACP_AGENT), *launch.args],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert lines, f"no answer on stdout; stderr: {result.stderr[-2000:]}"
    answer = lines[0]
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1, answer
    assert answer["result"]["agentInfo"]["name"] == "acp-harness-agent"


# --- the setups against the plugins' current versions (issue 14, item 12) ----------------------------------


def test_every_readme_says_the_snippets_environment_overrides_config_toml() -> None:
    for name in ("zed", "jetbrains", "neovim", "emacs", "registry"):
        readme = " ".join((EDITORS / name / "README.md").read_text(encoding="utf-8").split())
        assert re.search(r"ACP_AGENT_\*.{0,80}override the same settings in `config\.toml`", readme), name


def test_the_codecompanion_adapter_fits_codecompanion_18_and_carries_no_gemini_leftovers() -> None:
    text = (EDITORS / "neovim" / "codecompanion.lua").read_text(encoding="utf-8")
    lua = re.sub(r"--[^\n]*", "", text)  # the code, without its comments
    readme = (EDITORS / "neovim" / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^\s*interactions\s*=", lua, re.M) and "strategies" not in lua
    for leftover in ("gemini_cli", "yolo", "GEMINI_API_KEY", "oauth-personal", "auth_method"):
        assert leftover not in lua, leftover
    assert 'type = "acp"' in lua
    assert ">= 18" in text and "Neovim >= 0.11" in text
    assert "18 or later" in readme and "Neovim 0.11 or later" in readme


def test_the_emacs_setup_says_emacs_29_1() -> None:
    assert "Emacs 29.1 or later" in (EDITORS / "emacs" / "README.md").read_text(encoding="utf-8")
    assert "29.1" in (EDITORS / "emacs" / "agent-shell.el").read_text(encoding="utf-8")


def test_zeds_saved_config_options_name_options_and_values_the_agent_offers() -> None:
    from acp_agent.coding.models._thinking import thought_levels
    from acp_agent.coding.permissions._modes import MODE_INFO

    entry = json.loads((EDITORS / "zed" / "settings.json").read_text(encoding="utf-8"))["agent_servers"][
        "acp-harness-agent"
    ]
    offered = {
        "mode": set(MODE_INFO),
        "thought_level": set(thought_levels(entry["env"]["ACP_AGENT_PROVIDER"])),
    }
    defaults = entry["default_config_options"]
    assert defaults and all(value in offered[key] for key, value in defaults.items())
    assert set(entry["favorite_config_option_values"]) <= {"mode", "model", "thought_level"}
    assert "default_mode" not in entry and "default_model" not in entry
    readme = " ".join((EDITORS / "zed" / "README.md").read_text(encoding="utf-8").split())
    for words in ("default_config_options", "favorite_config_option_values", "`default_mode` has no effect"):
        assert words in readme
