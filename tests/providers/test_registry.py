"""``harness.providers.registry``: one record per provider, what ``build_model`` builds from."""

from __future__ import annotations

import anyio
import pytest

from harness import HarnessUsageError
from harness.providers import ChatCompletions, HttpModel, Messages, Responses, registry
from harness.providers.factory import build_model
from harness.providers.registry import ProviderSpec


async def close(models: list[HttpModel]) -> None:
    for model in models:
        await model.aclose()


def test_the_built_in_providers_are_named_with_their_classes_urls_and_key_variables() -> None:
    assert registry.names() == ("openai", "openai-responses", "anthropic")
    assert registry.key_variables() == ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    built = {name: build_model(name, model="m", api_key="k") for name in registry.names()}
    assert isinstance(built["openai"], ChatCompletions) and isinstance(built["openai-responses"], Responses)
    assert isinstance(built["anthropic"], Messages)
    assert {n: m.base_url for n, m in built.items()} == {
        "openai": "https://api.openai.com/v1",
        "openai-responses": "https://api.openai.com/v1",
        "anthropic": "https://api.anthropic.com",
    }
    # The class reads its knobs under the provider's protocol.
    keys = {"openai": ChatCompletions.provider_key, "openai-responses": Responses.provider_key}
    assert {**keys, "anthropic": Messages.provider_key} == {s.name: s.protocol for s in registry.specs()}
    anyio.run(close, list(built.values()))


def test_an_unknown_provider_is_refused_with_the_registered_ones() -> None:
    with pytest.raises(HarnessUsageError, match=r"choose one of openai, openai-responses, anthropic$"):
        build_model("gemini", model="m")


def test_a_registered_provider_is_built_by_its_factory_and_a_second_of_the_name_is_refused() -> None:
    made: list[tuple[str, str, str | None]] = []

    def factory(base_url: str, model: str, api_key: str | None, **options: object) -> HttpModel:
        made.append((base_url, model, api_key))
        return ChatCompletions(base_url, model, api_key)

    spec = ProviderSpec("local", "A local server", factory, "http://127.0.0.1:8080/v1/", protocol="openai")
    registry.register(spec)
    try:
        with pytest.raises(ValueError, match="registered already"):
            registry.register(spec)
        assert registry.get("local") is spec and registry.names()[-1] == "local"
        assert registry.by_protocol("openai") is registry.get("openai")  # the first registered for it
        anyio.run(close, [build_model("local", model="qwen")])
        assert made == [("http://127.0.0.1:8080/v1", "qwen", None)]  # no key: a local server needs none
    finally:
        assert registry.unregister("local") is spec
    assert registry.get("local") is None and registry.unregister("local") is None
