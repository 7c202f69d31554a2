"""``[models."<name>"]`` in the configuration: checked strictly, the user's file always, a project's only
when trusted (each entry an item of the trust request), the project's entry replacing the user's by name;
and the order facts are taken in (configuration, server, built-in table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.coding.models._model_facts import resolve_facts
from acp_agent.config import ConfigError, load_config
from harness.providers.model_info import ModelInfo


def _tree(tmp: Path, user: str = "", project: str | None = None) -> tuple[Path, dict[str, str]]:
    (tmp / "xdg" / "acp-agent").mkdir(parents=True)
    (tmp / "xdg" / "acp-agent" / "config.toml").write_text(user)
    repo = tmp / "repo"
    (repo / ".git").mkdir(parents=True)
    if project is not None:
        (repo / ".acp-agent").mkdir()
        (repo / ".acp-agent" / "config.toml").write_text(project)
    return repo, {"HOME": str(tmp / "home"), "XDG_CONFIG_HOME": str(tmp / "xdg")}


def test_the_users_file_declares_a_models_facts(tmp_path: Path) -> None:
    repo, env = _tree(tmp_path, '[models."qwen3-coder"]\ncontext_window = 32768\nreasoning = true\n')
    decl = load_config(repo, {}, env).models["qwen3-coder"]
    assert (decl.context_window, decl.max_output_tokens, decl.reasoning, decl.images) == (
        32768,
        None,
        True,
        None,
    )
    assert decl.source.endswith("config.toml")


def test_bad_model_tables_are_reported_with_key_and_fix(tmp_path: Path) -> None:
    user = (
        '[models."a"]\ncontext_window = "big"\n[models."b"]\nwindow = 3\n'
        '[models."c"]\ncontext_window = 4096\nmax_output_tokens = 8192\n[models."d"]\nimages = "yes"\n'
    )
    repo, env = _tree(tmp_path, user)
    with pytest.raises(ConfigError) as exc:
        load_config(repo, {}, env)
    text = "\n".join(str(p) for p in exc.value.problems)
    assert "models.a.context_window: must be a whole number of tokens" in text
    assert "models.b.window: unknown key for a model; allowed keys: context_window" in text
    assert "models.c.max_output_tokens: must be less than context_window (4096)" in text
    assert "models.d.images: must be true or false" in text


def test_an_untrusted_projects_models_are_ignored_and_asked_about(tmp_path: Path) -> None:
    repo, env = _tree(
        tmp_path,
        '[models."m"]\ncontext_window = 32768\n',
        '[models."m"]\ncontext_window = 1000000\n',
    )
    cfg = load_config(repo, {}, env)
    assert cfg.models["m"].context_window == 32768
    assert cfg.project is not None and [i.key for i in cfg.project.ignored] == ["models.m"]
    assert "declares model m: context_window = 1000000" in cfg.project.summary()
    trusted = load_config(repo, {}, env, trust=True)
    assert trusted.models["m"].context_window == 1_000_000


def test_facts_come_from_configuration_then_server_then_table() -> None:
    from acp_agent.config._models import ModelDecl

    served = ModelInfo("claude-sonnet-4-5", 150_000, None, None, False, "max_input_tokens", "anthropic")
    facts = resolve_facts("claude-sonnet-4-5", ModelDecl("claude-sonnet-4-5", max_output_tokens=4000), served)
    assert (facts.context_window, facts.max_output_tokens, facts.images, facts.reasoning) == (
        150_000,
        4000,
        False,
        True,
    )
    assert facts.sources == {
        "context_window": "Anthropic: max_input_tokens",
        "max_output_tokens": "configuration",
        "images": "Anthropic's model list",
        "reasoning": "built-in table",
    }
    assert resolve_facts("unheard-of", None, None).context_window is None
