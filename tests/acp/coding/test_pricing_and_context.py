"""In memory: a model's price from each source, and the context sections told between turns."""

from __future__ import annotations

from acp_agent.coding.context._context_updates import (
    CONTEXT_META,
    changed_sections,
    context_text,
    known_sections,
    reattached,
    with_context,
)
from acp_agent.coding.models._pricing import builtin_price, price_for
from acp_agent.config._checks import At, Problems
from acp_agent.config._models import check_models
from acp_agent.session._content import title_from_prompt
from harness import Message, Role, Text, Usage
from harness.model_info import ModelInfo
from harness.providers.model_info import parse_model_list


def _declared(table: dict[str, object]) -> tuple[object, list[str]]:
    problems = Problems()
    models = check_models({"m": table}, At("config.toml", "models", problems))
    return (models or {}).get("m"), [p.message for p in problems.items]


def test_openrouters_per_token_prices_become_usd_per_million() -> None:
    listed = parse_model_list(
        {
            "data": [
                {
                    "id": "anthropic/claude-sonnet-4.5",
                    "context_length": 1000000,
                    "architecture": {"input_modalities": ["text"]},
                    "pricing": {
                        "prompt": "0.000003",
                        "completion": "0.000015",
                        "input_cache_read": "0.0000003",
                        "input_cache_write": "0.00000375",
                    },
                }
            ]
        }
    )
    assert listed[0].prices == (3.0, 15.0, 0.3, 3.75)
    price = price_for("anthropic/claude-sonnet-4.5", None, listed[0])
    assert price is not None and price.source == "the server's model list"


def test_the_configuration_wins_and_cache_prices_default_to_the_input_price() -> None:
    declared, problems = _declared({"input_price": 1.0, "output_price": 2.0})
    assert problems == []
    served = ModelInfo("m", prices=(9.0, 9.0, 9.0, 9.0))
    price = price_for("claude-sonnet-4-5", declared, served)  # pyright: ignore[reportArgumentType]
    assert price is not None and (price.input, price.output, price.cache_read, price.cache_write) == (
        1.0,
        2.0,
        1.0,
        1.0,
    )
    assert price.cost(Usage(1_000_000, 1_000_000, 0, 0)) == 3.0


def test_a_bad_price_is_a_problem_naming_the_key() -> None:
    _, problems = _declared({"input_price": -1, "output_price": "cheap"})
    assert len(problems) == 2 and all("USD per million tokens" in p for p in problems)


def test_an_unknown_model_has_no_price_and_the_built_in_table_is_dated() -> None:
    assert price_for("qwen3-coder", None, ModelInfo("qwen3-coder")) is None, "never a guess"
    sonnet = builtin_price("claude-sonnet-4-5-20250929")
    assert sonnet is not None and (sonnet.input, sonnet.cache_write) == (3.0, 3.75)
    assert "built-in table (20" in sonnet.source
    assert builtin_price("claude-sonnet-4-5", "1h").cache_write == 6.0  # pyright: ignore[reportOptionalMemberAccess]
    mini = builtin_price("gpt-5-mini")
    assert mini is not None and mini.input == 0.25, "the most specific prefix"


def test_the_first_turn_tells_the_environment_and_later_turns_only_what_changed() -> None:
    frozen = {"instructions": "# Instructions\n\nv1"}
    now = {"environment": "# Environment\n\nclean", "instructions": "# Instructions\n\nv1", "mode": ""}
    first = changed_sections(now, known_sections([], frozen))
    assert first == {"environment": "# Environment\n\nclean"}, "the instructions are in the system prompt"
    sent = with_context(Message(Role.USER, (Text("hi"),)), first)
    assert sent.meta[CONTEXT_META] == first and title_from_prompt(sent) == "hi"
    assert changed_sections(now, known_sections([sent], frozen)) == {}
    later = {**now, "environment": "# Environment\n\ndirty", "mode": "plan note"}
    assert changed_sections(later, known_sections([sent], frozen)) == {
        "environment": "# Environment\n\ndirty",
        "mode": "plan note",
    }
    gone = changed_sections({**now, "instructions": ""}, known_sections([sent], frozen))
    assert gone == {"instructions": ""}
    assert "no longer applies" in context_text(gone)


def test_a_summarised_context_is_told_again_after_the_summary() -> None:
    told = with_context(Message(Role.USER, (Text("hi"),)), {"environment": "# Environment\n\nclean"})
    assert reattached([Message(Role.USER, (Text("plain"),))]) is None
    again = reattached([told])
    assert again is not None and "# Environment\n\nclean" in again


def test_litellms_model_info_costs_are_read() -> None:
    from harness.providers.model_info import _litellm  # pyright: ignore[reportPrivateUsage]

    info = {
        "input_cost_per_token": 2.5e-06,
        "output_cost_per_token": 1e-05,
        "cache_read_input_token_cost": 1.25e-06,
        "max_input_tokens": 128000,
    }
    got = _litellm({"data": [{"model_name": "gpt-4o", "model_info": info}]}, [ModelInfo("gpt-4o")])
    assert got is not None and got[0].prices == (2.5, 10.0, 1.25, None)
    price = price_for("gpt-4o", None, got[0])
    assert price is not None and price.cache_write == 2.5, "no write price given: the input price"


def test_the_wire_usage_names_the_cached_parts_and_the_thought_tokens_where_said() -> None:
    from acp_agent.coding.models._usage_meter import wire_usage

    assert wire_usage(Usage(100, 50, 900, 10, reasoning=30)) == {
        "totalTokens": 1060,
        "inputTokens": 1010,
        "outputTokens": 50,
        "cachedReadTokens": 900,
        "cachedWriteTokens": 10,
        "thoughtTokens": 30,
    }
    assert "thoughtTokens" not in wire_usage(Usage(1, 1)), "not said: not sent"
    assert Usage.from_dict(Usage(1, 2, 3, 4, 5).to_dict()) == Usage(1, 2, 3, 4, 5)
    assert "reasoning" not in Usage(1, 2).to_dict(), "the stored shape is unchanged without it"
