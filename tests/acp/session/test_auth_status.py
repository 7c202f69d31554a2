"""``auth/status`` (whether a session can start without setting up a model) and ``logout`` (forgets the key
``acp-agent setup`` stored, and the one this process read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.commands.setup_cmd import Choice, forget_stored_key, save_choice
from acp_agent.model_setup import ModelSettings
from acp_agent.session._auth import status_of
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio

SECRET = "sk-auth-status-test-0123456789"


def test_the_status_follows_the_configuration_and_never_shows_the_key() -> None:
    keyed = status_of(ModelSettings("openai", "m", None, SECRET), model_given=False)
    assert keyed == {"state": "authenticated", "accounts": [{"label": "openai API key", "active": True}]}
    assert SECRET not in str(keyed)
    assert status_of(ModelSettings("openai", "m", "http://127.0.0.1:8080/v1"), False) == {
        "state": "not_required"
    }
    assert status_of(ModelSettings(None), False) == {"state": "unauthenticated"}
    assert status_of(ModelSettings(None), True) == {"state": "not_required"}


def test_forgetting_the_stored_key_removes_the_setup_files_key_and_leaves_other_lines(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    directory = tmp_path / "acp-agent"
    save_choice(directory, Choice("openai", "gpt-x", None, SECRET))
    assert (directory / "api-key").read_text().strip() == SECRET
    assert forget_stored_key(env) is True
    assert not (directory / "api-key").exists()
    config = (directory / "config.toml").read_text()
    assert "api_key_file" not in config and 'model = "gpt-x"' in config
    assert forget_stored_key(env) is False  # nothing left: nothing done


def test_a_key_file_the_user_named_elsewhere_is_left_alone(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    directory = tmp_path / "acp-agent"
    directory.mkdir()
    own = tmp_path / "my-key"
    own.write_text(SECRET)
    (directory / "config.toml").write_text(f'provider = "openai"\napi_key_file = "{own}"\n')
    assert forget_stored_key(env) is False
    assert own.read_text() == SECRET and "api_key_file" in (directory / "config.toml").read_text()


async def test_logout_forgets_the_key_and_new_sessions_need_a_model_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = ModelSettings("openai", "gpt-x", None, SECRET)
    directory = tmp_path / "config" / "acp-agent"
    save_choice(directory, Choice("openai", "gpt-x", None, SECRET))
    async with running_agent(tmp_path, settings=settings) as (client, agent, _tg):
        agent.forget_key = lambda: forget_stored_key({"XDG_CONFIG_HOME": str(tmp_path / "config")})
        caps = (await client.initialize())["agentCapabilities"]
        assert caps["auth"] == {"logout": {}, "status": {}}
        status = await client.call("auth/status", {})
        assert status["state"] == "authenticated" and SECRET not in str(client.messages)
        assert await client.call("logout", {}) == {}
        assert not (directory / "api-key").exists()  # the stored key is gone
        assert await client.call("auth/status", {}) == {"state": "unauthenticated"}
        sid = await client.new_session(str(tmp_path))
        answer = await client.response(
            await client.send_request("session/prompt", client.prompt_params(sid, "hi"))
        )
        assert answer["error"]["code"] == -32000  # auth_required: set a model up again
        assert client.schema_problems(unstable=True) == []


@pytest.mark.parametrize(
    ("flags", "environ"),
    [
        ({}, {"ACP_AGENT_API_KEY": SECRET}),
        ({}, {"OPENAI_API_KEY": SECRET}),
        ({}, {"ACP_AGENT_API_KEY_FILE": "key-file"}),
        ({"api_key_file": "key-file"}, {"ACP_AGENT_API_KEY": SECRET}),
    ],
)
def test_after_logout_the_coding_factory_makes_sessions_that_read_no_key(
    tmp_path: Path, flags: dict[str, str], environ: dict[str, str]
) -> None:
    """The coding layer loads each session's configuration itself (its own model per session): ``logout``
    must reach it, or the key the agent forgot would still be sent by every new session."""
    from acp_agent.coding import LazyCodingFactory
    from acp_agent.config import load_config

    (tmp_path / "key-file").write_text(SECRET)
    base = {"ACP_AGENT_PROVIDER": "openai", "ACP_AGENT_MODEL": "m", "HOME": str(tmp_path), "PATH": "/bin"}
    factory = LazyCodingFactory(
        {k: str(tmp_path / v) if k == "api_key_file" else v for k, v in flags.items()},
        {**base, **{k: str(tmp_path / v) if k.endswith("_FILE") else v for k, v in environ.items()}},
    )
    assert load_config(tmp_path, factory.flags, factory.environ).api_key == SECRET
    factory.forget_key()
    config = load_config(tmp_path, factory.flags, factory.environ)
    assert config.api_key is None and config.provider == "openai"
    assert factory.environ == base  # nothing else forgotten
