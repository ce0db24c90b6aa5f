"""The invoke path's lookups read what the next step needs in the same statement: the
token's environment with its holder, the model's provider with the version."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.examples import CALCULATOR
from agents.models import LLMModel
from agents.runs.spec import agent_spec
from agents.selectors import version_to_run


def test_the_version_comes_with_its_models_provider_and_the_spec_needs_no_query(
    make_agent: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    version = version_to_run(agent=agent, ref="latest")
    expected = LLMModel.objects.get(pk=CALCULATOR["config"]["llmModelId"]).provider
    assert version.model_provider == expected

    with CaptureQueriesContext(connection) as queries:
        spec = agent_spec(agent=agent, version=version)
    assert queries.captured_queries == []
    assert spec.provider_name == expected


def test_a_version_read_elsewhere_still_gets_its_provider(make_agent: Any, settings: Any) -> None:
    settings.LLM_OFFLINE = False
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    version = agent.versions.get()  # the ORM's: no model_provider

    with CaptureQueriesContext(connection) as queries:
        spec = agent_spec(agent=agent, version=version)
    assert len(queries.captured_queries) == 1
    assert (
        spec.provider_name == LLMModel.objects.get(pk=CALCULATOR["config"]["llmModelId"]).provider
    )
