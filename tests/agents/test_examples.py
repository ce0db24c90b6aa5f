"""Which model `make run`'s samples use (agents.examples.sample_model): the one the
configured provider serves, or DEFAULT_MODEL."""

from __future__ import annotations

from typing import Any

import pytest

from agents.examples import AWS_VARIABLES, CALCULATOR, sample_model, with_model

OPENAI = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture
def nothing_set(monkeypatch: pytest.MonkeyPatch, settings: Any) -> pytest.MonkeyPatch:
    for name in (*AWS_VARIABLES, *OPENAI):
        monkeypatch.delenv(name, raising=False)
    settings.LLM_OFFLINE = False
    settings.DEFAULT_MODEL = ""
    settings.OPENAI_MODELS = []
    return monkeypatch


@pytest.mark.parametrize(
    ("variables", "models", "expected"),
    [
        ({"OPENAI_API_KEY": "k"}, [], "openai/gpt-4o-mini"),
        (
            {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
            ["llama3.2", "qwen2.5"],
            "openai/llama3.2",
        ),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, ["openai/qwen2.5"], "openai/qwen2.5"),
        ({"AWS_REGION": "us-east-1"}, [], None),
        ({"AWS_PROFILE": "dev", "OPENAI_API_KEY": "k"}, [], None),
        ({}, [], None),
    ],
    ids=["openai", "ollama-models", "prefixed", "aws", "both-aws-wins", "none"],
)
def test_the_samples_model_is_the_one_the_configured_provider_serves(
    nothing_set: pytest.MonkeyPatch,
    settings: Any,
    variables: dict[str, str],
    models: list[str],
    expected: str | None,
) -> None:
    for name, value in variables.items():
        nothing_set.setenv(name, value)
    settings.OPENAI_MODELS = models

    assert sample_model() == expected


def test_offline_the_samples_keep_their_own_ids(nothing_set: Any, settings: Any) -> None:
    nothing_set.setenv("OPENAI_API_KEY", "k")
    settings.LLM_OFFLINE = True

    assert sample_model() is None


def test_default_model_wins_over_every_guess(nothing_set: Any, settings: Any) -> None:
    nothing_set.setenv("AWS_REGION", "us-east-1")
    settings.LLM_OFFLINE = True
    settings.DEFAULT_MODEL = "openai/llama3.2"

    assert sample_model() == "openai/llama3.2"


def test_with_model_changes_only_the_model() -> None:
    moved = with_model(CALCULATOR, "openai/gpt-4o-mini")

    assert moved["config"] == {**CALCULATOR["config"], "llmModelId": "openai/gpt-4o-mini"}
    assert CALCULATOR["config"]["llmModelId"].startswith("anthropic.")
    assert with_model(CALCULATOR, None) is CALCULATOR
