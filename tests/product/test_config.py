"""Configuration: precedence, discovery and every kind of bad input, each reported with file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.config import ConfigError, find_project_config, load_config, missing_key_problem


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    xdg = tmp_path / "xdg"
    repo = tmp_path / "repo"
    sub = repo / "src" / "pkg"
    for d in (home, xdg / "acp-agent", repo / ".git", sub):
        d.mkdir(parents=True)
    return {"home": home, "xdg": xdg, "user": xdg / "acp-agent", "repo": repo, "sub": sub}


def env_for(tree: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"HOME": str(tree["home"]), "XDG_CONFIG_HOME": str(tree["xdg"]), **extra}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(exc: pytest.ExceptionInfo[ConfigError]) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_defaults_apply_without_any_configuration(tree: dict[str, Path]) -> None:
    cfg = load_config(tree["sub"], {}, env_for(tree))
    assert cfg.provider is None
    assert cfg.default_mode == "default"
    assert cfg.log_level == "warning"
    assert cfg.shell_timeout_s == 120.0
    assert cfg.mcp_servers == ()
    assert cfg.files == ()


def test_flags_beat_env_beat_project_beat_user(tree: dict[str, Path]) -> None:
    write(
        tree["user"] / "config.toml",
        'provider = "anthropic"\nmodel = "user-model"\nbase_url = "http://u/v1"\n'
        'default_mode = "plan"\nlog_level = "error"\n',
    )
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        'model = "project-model"\nbase_url = "http://p/v1"\ndefault_mode = "accept-edits"\n',
    )
    env = env_for(tree, ACP_AGENT_BASE_URL="http://env/v1", ACP_AGENT_DEFAULT_MODE="read-only")
    cfg = load_config(tree["sub"], {"default_mode": "full-access"}, env)
    assert cfg.provider == "anthropic"  # only the user file sets it
    assert cfg.model == "project-model"  # project beats user
    assert cfg.base_url == "http://env/v1"  # env beats project
    assert cfg.default_mode == "full-access"  # flag beats env
    assert cfg.log_level == "error"
    assert cfg.origins["model"].endswith(".acp-agent/config.toml")
    assert cfg.origins["default_mode"] == "flag --default-mode"


def test_project_config_is_found_from_a_subdirectory_up_to_the_repository_root(tree: dict[str, Path]) -> None:
    write(tree["repo"] / ".acp-agent" / "config.toml", 'model = "m"\n')
    assert find_project_config(tree["sub"]) == (tree["repo"] / ".acp-agent").resolve()
    cfg = load_config(tree["sub"], {}, env_for(tree))
    assert cfg.project_root == tree["repo"].resolve()


def test_search_stops_at_the_repository_root(tree: dict[str, Path]) -> None:
    # A config above the repository root belongs to another project.
    write(tree["repo"].parent / ".acp-agent" / "config.toml", 'model = "outside"\n')
    assert find_project_config(tree["sub"]) is None
    assert load_config(tree["sub"], {}, env_for(tree)).model is None


def test_user_config_respects_xdg_config_home(tree: dict[str, Path]) -> None:
    write(tree["user"] / "config.toml", 'model = "xdg"\n')
    assert load_config(tree["sub"], {}, env_for(tree)).model == "xdg"
    plain = {"HOME": str(tree["home"])}
    write(tree["home"] / ".config" / "acp-agent" / "config.toml", 'model = "dotconfig"\n')
    assert load_config(tree["sub"], {}, plain).model == "dotconfig"


def test_mcp_servers_from_toml_and_mcp_json_merge_with_project_winning(tree: dict[str, Path]) -> None:
    write(
        tree["user"] / "config.toml",
        '[mcp_servers.files]\ncommand = "user-files"\n'
        '[mcp_servers.web]\ntype = "http"\nurl = "https://mcp.example/x"\nheaders = { Authorization = "t" }\n',
    )
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        '[mcp_servers.files]\ncommand = "proj-files"\nargs = ["--root", "."]\nenv = { A = "1" }\n',
    )
    write(
        tree["repo"] / ".acp-agent" / "mcp.json",
        '{"mcpServers": {"time": {"command": "mcp-server-time", "args": []}, "off": {"command": "x", "disabled": true}}}',
    )
    cfg = load_config(tree["sub"], {}, env_for(tree))
    by_name = {s.name: s for s in cfg.mcp_servers}
    assert sorted(by_name) == ["files", "time", "web"]
    assert by_name["files"].command == "proj-files"
    assert by_name["files"].args == ("--root", ".")
    assert by_name["files"].to_acp() == {
        "name": "files",
        "command": "proj-files",
        "args": ["--root", "."],
        "env": [{"name": "A", "value": "1"}],
    }
    assert by_name["web"].type == "http"
    assert by_name["web"].to_acp()["headers"] == [{"name": "Authorization", "value": "t"}]


def test_tools_and_permissions_sections_are_read(tree: dict[str, Path]) -> None:
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        "[tools]\nshell_timeout_s = 30\n"
        'searxng_url = "http://127.0.0.1:8888"\n[permissions]\nproject_file = "perm.json"\n'
        'user_file = "~/perms.json"\n',
    )
    cfg = load_config(tree["sub"], {}, env_for(tree))
    assert cfg.shell_timeout_s == 30.0
    assert cfg.searxng_url == "http://127.0.0.1:8888"
    assert cfg.permissions_project_file == tree["repo"].resolve() / "perm.json"
    assert cfg.permissions_user_file == tree["home"] / "perms.json"


def test_api_key_comes_from_env_before_the_key_file(tree: dict[str, Path]) -> None:
    write(tree["user"] / "key.txt", "file-key\n")
    write(tree["user"] / "config.toml", 'provider = "openai"\napi_key_file = "key.txt"\n')
    cfg = load_config(tree["sub"], {}, env_for(tree))
    assert cfg.api_key == "file-key"
    assert "file-key" not in repr(cfg)
    cfg = load_config(tree["sub"], {}, env_for(tree, OPENAI_API_KEY="env-key"))
    assert cfg.api_key == "env-key"
    assert cfg.api_key_source == "environment OPENAI_API_KEY"


def test_an_api_key_in_a_config_file_is_refused_with_the_fix(tree: dict[str, Path]) -> None:
    path = write(tree["repo"] / ".acp-agent" / "config.toml", 'api_key = "sk-secret"\n')
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    (problem,) = problems_of(exc)
    assert str(path.resolve()) in problem or str(path) in problem
    assert "ACP_AGENT_API_KEY" in problem and "api_key_file" in problem
    assert "sk-secret" not in str(exc.value)


def test_every_problem_is_reported_with_file_key_and_allowed_values(tree: dict[str, Path]) -> None:
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        'modle = "x"\nprovider = "gpt"\ndefault_mode = "yolo"\nlog_level = "loud"\nbase_url = "localhost:8080"\n'
        '[tools]\nshell_timeout_s = -1\nbrowser = true\n[mcp_servers.bad]\nargs = ["a"]\n'
        '[mcp_servers.web]\ntype = "websocket"\nurl = "ws://x"\n',
    )
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    problems = problems_of(exc)
    text = "\n".join(problems)
    assert all("config.toml" in p for p in problems)
    assert "modle: unknown key; allowed keys: provider, model" in text
    assert "provider: 'gpt' is not allowed; use one of: openai, openai-responses, anthropic, script." in text
    assert (
        "default_mode: 'yolo' is not allowed; use one of: read-only, default, accept-edits, plan, full-access."
        in text
    )
    assert "log_level: 'loud'" in text
    assert "base_url: 'localhost:8080' is not a URL" in text
    assert "tools.shell_timeout_s: -1 is not allowed" in text
    assert "tools.browser: unknown key" in text
    assert "mcp_servers.bad.command: a stdio server needs a command" in text
    assert "mcp_servers.web.type: 'websocket' is not allowed; use one of: stdio, http, sse." in text
    assert len(problems) == 9


def test_broken_toml_names_the_file_and_asks_to_fix_the_syntax(tree: dict[str, Path]) -> None:
    path = write(tree["user"] / "config.toml", 'provider = "openai\n')
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    (problem,) = problems_of(exc)
    assert problem.startswith(str(path)) and "is not valid TOML" in problem and "fix the syntax" in problem


def test_broken_mcp_json_is_reported(tree: dict[str, Path]) -> None:
    write(tree["user"] / "mcp.json", "{not json")
    write(tree["repo"] / ".acp-agent" / "mcp.json", '{"servers": {}}')
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    text = str(exc.value)
    assert "mcp.json: (file): is not valid JSON" in text
    assert "mcpServers: must be an object of servers by name" in text


def test_bad_flag_and_env_values_are_reported_with_their_source(tree: dict[str, Path]) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {"provider": "nope"}, env_for(tree, ACP_AGENT_SHELL_TIMEOUT="soon"))
    text = str(exc.value)
    assert "command line: --provider: 'nope' is not allowed" in text
    assert "environment: ACP_AGENT_SHELL_TIMEOUT: 'soon' is not allowed" in text


def test_a_missing_key_file_says_to_create_it(tree: dict[str, Path]) -> None:
    write(tree["user"] / "config.toml", 'provider = "anthropic"\napi_key_file = "~/secret/key"\n')
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    assert f"api_key_file: {tree['home'] / 'secret' / 'key'} does not exist; create it" in str(exc.value)


def test_a_hosted_provider_without_a_key_is_named_with_the_fix(tree: dict[str, Path]) -> None:
    cfg = load_config(tree["sub"], {"provider": "anthropic", "model": "m"}, env_for(tree))
    problem = missing_key_problem(cfg)
    assert problem is not None and "ANTHROPIC_API_KEY" in problem and "api_key_file" in problem
    local = load_config(
        tree["sub"], {"provider": "openai", "base_url": "http://127.0.0.1:1/v1"}, env_for(tree)
    )
    assert missing_key_problem(local) is None


def test_an_mcp_servers_timeout_is_read_and_passed_on_in_meta(tree: dict[str, Path]) -> None:
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        '[mcp_servers.slow]\ncommand = "slow-server"\ntimeout_s = 5\n',
    )
    (server,) = load_config(tree["sub"], {}, env_for(tree)).mcp_servers
    assert server.timeout_s == 5.0
    assert server.to_acp()["_meta"] == {"acpAgent/timeoutS": 5.0}


def test_a_bad_mcp_timeout_is_reported_with_the_allowed_range(tree: dict[str, Path]) -> None:
    write(
        tree["repo"] / ".acp-agent" / "config.toml",
        '[mcp_servers.slow]\ncommand = "slow-server"\ntimeout_s = -1\n',
    )
    with pytest.raises(ConfigError) as exc:
        load_config(tree["sub"], {}, env_for(tree))
    assert any("mcp_servers.slow.timeout_s" in p and "0 < s <= 86400" in p for p in problems_of(exc))
