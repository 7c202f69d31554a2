"""The ``sandbox`` and ``network`` settings: user file, environment and flags set them; a project file may
only narrow them. The doctor line says what is enforced."""

from __future__ import annotations

from pathlib import Path

from acp_agent.coding._sandboxing import sandbox_status
from acp_agent.config import load_config


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"), **extra}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults_are_workspace_write_without_network(tmp_path: Path) -> None:
    config = load_config(tmp_path, {}, _env(tmp_path))
    assert (config.sandbox, config.network) == ("workspace-write", "off")


def test_a_project_may_narrow_the_sandbox_but_never_widen_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    _write(
        project / ".acp-agent" / "config.toml", 'sandbox = "off"\nnetwork = "on"\nsandbox_writable = ["/"]\n'
    )
    config = load_config(project, {}, _env(tmp_path))
    assert (config.sandbox, config.network, config.sandbox_writable) == ("workspace-write", "off", ())
    _write(project / ".acp-agent" / "config.toml", 'sandbox = "read-only"\n')
    assert load_config(project, {}, _env(tmp_path)).sandbox == "read-only"


def test_the_user_file_environment_and_flags_set_them(tmp_path: Path) -> None:
    _write(
        tmp_path / "config" / "acp-agent" / "config.toml", 'network = "on"\nsandbox_writable = ["~/.cache"]\n'
    )
    config = load_config(tmp_path, {}, _env(tmp_path))
    assert config.network == "on" and config.sandbox_writable == (tmp_path / "home" / ".cache",)
    assert load_config(tmp_path, {}, _env(tmp_path, ACP_AGENT_NETWORK="off")).network == "off"
    assert load_config(tmp_path, {"sandbox": "off"}, _env(tmp_path)).sandbox == "off"


def test_doctor_reports_the_sandbox_and_the_fallback(tmp_path: Path) -> None:
    config = load_config(tmp_path, {}, _env(tmp_path))
    ok, message = sandbox_status(config, _env(tmp_path, ACP_AGENT_SANDBOX_UNAVAILABLE="1"))
    assert ok is None and "commands ask" in message
    ok, message = sandbox_status(config, _env(tmp_path))
    assert ok is not False and message
