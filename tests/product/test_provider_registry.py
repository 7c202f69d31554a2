"""A provider is one record in ``harness.providers.registry`` and its own module: a made-up provider,
registered in memory, is a choice of the configuration (its own key and base-URL variables included), of
setup's menu, of doctor's model checks, of the model list and of the thought levels, with nothing else
touched; unregistered, it is refused again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest

from acp_agent.coding.models._catalog import ModelCatalog
from acp_agent.coding.models._thinking import ThoughtLevel
from acp_agent.coding.opening import opening_state
from acp_agent.commands import doctor, setup_cmd
from acp_agent.config import ConfigError, load_config, missing_key_problem
from acp_agent.model_setup import ModelConfigError, ModelSettings, build_model, how_to_configure
from harness import Message, Options
from harness.model import Delta, Prompt
from harness.model_info import ModelInfo
from harness.providers import HttpModel, registry
from harness.providers.registry import ProviderSpec
from harness.secrets import Secrets
from harness.testing import FakeModel, Reply

KEY = "acme-secret-0123456789"


class AcmeModel(HttpModel):
    """What the made-up provider's own module would define: its model over its endpoint (answered here
    without a request)."""

    built: ClassVar[list[AcmeModel]] = []

    def __init__(self, base_url: str, model: str, api_key: str | None, **options: Any) -> None:
        super().__init__(base_url, model, api_key, **options)
        self.api_key = api_key
        self.closed = False
        self.prompts: list[Prompt] = []
        self._fake = FakeModel([Reply(text="OK")])
        AcmeModel.built.append(self)

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        self.prompts.append(prompt)
        return self._fake.stream(prompt)

    async def aclose(self) -> None:
        self.closed = True
        await super().aclose()

    async def list_models(self) -> list[str]:
        return ["acme-large", "acme-small"]

    async def describe_models(self) -> list[ModelInfo]:
        return [ModelInfo("acme-large", context_window=200_000), ModelInfo("acme-small")]


ACME = ProviderSpec(
    "acme",
    "Acme Cloud",
    AcmeModel,
    "https://api.acme.test/v1",
    key_env="ACME_API_KEY",
    url_env="ACME_BASE_URL",
    thinking={"off": {}, "deep": {"think": True}},
    setup_rank=1,  # after Anthropic (0), before OpenAI's two (1, 2: ties keep the registry's order)
)


@pytest.fixture
def acme() -> Iterator[ProviderSpec]:
    AcmeModel.built.clear()
    registry.register(ACME)
    try:
        yield ACME
    finally:
        registry.unregister(ACME.name)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("home", "xdg", "project", "agent")}
    for path in paths.values():
        path.mkdir()
    return paths


def env_for(tree: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"HOME": str(tree["home"]), "XDG_CONFIG_HOME": str(tree["xdg"]), **extra}


def flags_for(tree: dict[str, Path], **extra: Any) -> dict[str, Any]:
    return {"provider": "acme", "home": str(tree["agent"]), **extra}


def test_the_configuration_takes_a_registered_provider_with_its_own_variables(
    acme: ProviderSpec, tree: dict[str, Path]
) -> None:
    env = env_for(
        tree, ACME_API_KEY=KEY, ACME_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk-other-000000"
    )
    config = load_config(tree["project"], flags_for(tree), env)
    assert config.provider == "acme"
    assert config.api_key == KEY and config.api_key_source == "environment ACME_API_KEY"
    assert config.base_url == "http://127.0.0.1:9/v1"
    assert {"ACME_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"} <= set(config.secret_names())
    # Another provider's variables are not this one's.
    openai = load_config(tree["project"], {**flags_for(tree), "provider": "openai"}, env)
    assert openai.api_key == "sk-other-000000" and openai.base_url is None
    # Without a key, the sentence names the provider's own variable.
    keyless = load_config(tree["project"], flags_for(tree), env_for(tree))
    assert "ACME_API_KEY" in str(missing_key_problem(keyless))


def test_a_provider_not_registered_is_refused_with_the_registered_ones_listed(
    acme: ProviderSpec, tree: dict[str, Path]
) -> None:
    with pytest.raises(ConfigError) as bad:
        load_config(tree["project"], flags_for(tree, provider="acne"), env_for(tree))
    assert "use one of: openai, openai-responses, anthropic, acme, script." in str(bad.value)
    registry.unregister("acme")
    with pytest.raises(ConfigError) as gone:
        load_config(tree["project"], flags_for(tree), env_for(tree))
    assert "'acme' is not allowed" in str(gone.value)


def test_the_model_setup_builds_it_and_says_how_to_configure_it(acme: ProviderSpec) -> None:
    settings = ModelSettings("acme", "acme-large", api_key=KEY)
    assert settings.configured and settings.http
    model = build_model(settings)
    assert isinstance(model, AcmeModel)
    assert (model.base_url, model.model, model.api_key) == ("https://api.acme.test/v1", "acme-large", KEY)
    assert "anthropic, acme or script" in how_to_configure() and "ACME_API_KEY" in how_to_configure()
    with pytest.raises(ModelConfigError, match="needs a model name"):
        build_model(ModelSettings("acme", api_key=KEY))
    assert "ACME_API_KEY" in Secrets().names  # the providers' own key variables: secrets everywhere


def test_setup_offers_it_by_its_rank_and_lists_its_models(acme: ProviderSpec, tree: dict[str, Path]) -> None:
    labels = [p.label for p in setup_cmd._providers()]  # pyright: ignore[reportPrivateUsage]
    assert labels[:4] == [
        "Anthropic (Claude)",
        "OpenAI (Chat Completions)",
        "Acme Cloud",
        "OpenAI (Responses API)",
    ]
    assert labels[-1].startswith("A local or other OpenAI-compatible server")
    answers = iter(["3", "", "2"])  # Acme Cloud; its own URL; the second model it lists
    secrets = iter([""])  # Enter: the key in $ACME_API_KEY
    choice = setup_cmd._ask(  # pyright: ignore[reportPrivateUsage]
        lambda _q: next(answers), lambda _q: next(secrets), env_for(tree, ACME_API_KEY=KEY)
    )
    assert choice == setup_cmd.Choice("acme", "acme-small", None, None)
    assert [m.api_key for m in AcmeModel.built] == [KEY] and all(m.closed for m in AcmeModel.built)


def test_doctor_checks_its_endpoint_and_a_completion(acme: ProviderSpec, tree: dict[str, Path]) -> None:
    env = env_for(tree, ACME_API_KEY=KEY)
    config = load_config(tree["project"], flags_for(tree, model="acme-large"), env)

    async def main() -> list[doctor.Check]:
        with anyio.fail_after(10):
            return await doctor._check_model(config, env)  # pyright: ignore[reportPrivateUsage]

    checks = anyio.run(main)
    assert [(c.name, c.ok) for c in checks] == [
        ("model endpoint", True),
        ("model facts", True),
        ("model completion", True),
    ]
    (model,) = AcmeModel.built
    assert model.closed and model.prompts[0].tools


def test_the_model_list_and_the_thought_levels_come_from_it(
    acme: ProviderSpec, tree: dict[str, Path]
) -> None:
    env = env_for(tree, ACME_API_KEY=KEY)
    config = load_config(tree["project"], flags_for(tree, model="acme-large"), env)

    async def refresh() -> list[str] | None:
        with anyio.fail_after(10):
            return await ModelCatalog(config.home).refresh("acme", None, KEY)

    assert anyio.run(refresh) == ["acme-large", "acme-small"]
    options = {o["id"]: o for o in opening_state(config, {})["configOptions"]}
    models = options["model"]["options"]
    assert [m["value"] for m in models] == ["acme-large", "acme-small"]
    assert models[0]["description"] == "200k tokens of context"  # what the provider's list said
    assert [o["value"] for o in options["thought_level"]["options"]] == ["off", "deep"]

    level = ThoughtLevel("acme")
    level.level = "deep"
    seen: list[Prompt] = []

    async def next_model(prompt: Prompt) -> AsyncIterator[Delta]:
        seen.append(prompt)
        return
        yield

    async def run() -> None:
        async for _ in level.stream(
            Prompt(system="", messages=[Message.user("hi")], tools=[], options=Options()), next_model
        ):
            pass

    anyio.run(run)
    assert seen[0].options.provider == {"openai": {"think": True}}  # under its protocol's key
