"""The invoke path's lookups read what the next step needs in the same statement: the
token's environment with its holder; the agent, the caller's grants, the version and its
model's provider together."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentbuilder.errors import Invalid, NotFound, PermissionDenied
from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import LLMModel
from agents.runs import event_log
from agents.runs.lookup import agent_and_version_to_invoke, version_to_run
from agents.runs.spec import agent_spec
from agents.selectors.agents import agent_get_to_invoke
from agents.services.aliases import alias_set
from agents.services.versions import version_add
from tests.conftest import client_for
from tests.factories import UserFactory


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


def test_a_versions_parsed_config_is_shared_and_never_another_versions(
    make_agent: Any, admin_user: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    first = version_to_run(agent=agent, ref="latest")
    again = version_to_run(agent=agent, ref="latest")  # another instance of the same row
    spec = agent_spec(agent=agent, version=first)
    assert agent_spec(agent=agent, version=again).config is spec.config

    changed = {**CALCULATOR["config"], "systemPrompt": "Answer in French."}
    version_add(user=admin_user, agent=agent, config=changed)
    newer = version_to_run(agent=agent, ref="latest")
    assert newer.pk != first.pk
    assert agent_spec(agent=agent, version=newer).config.system_prompt == "Answer in French."
    assert agent_spec(agent=agent, version=first).config.system_prompt != "Answer in French."


def _two_steps(user: Any, env: Any, agent_id: Any, ref: str) -> Any:
    try:
        agent = agent_get_to_invoke(user=user, environment=env, agent_id=agent_id)
        version = version_to_run(agent=agent, ref=ref)
    except (NotFound, PermissionDenied, Invalid) as exc:
        return type(exc), str(exc)
    return agent.pk, sorted(agent.held), version.pk, version.config, version.model_provider


def _one_statement(user: Any, env: Any, agent_id: Any, ref: str) -> Any:
    try:
        agent, version = agent_and_version_to_invoke(
            user=user, environment=env, agent_id=agent_id, ref=ref
        )
    except (NotFound, PermissionDenied, Invalid) as exc:
        return type(exc), str(exc)
    assert version.agent is agent
    return agent.pk, sorted(agent.held), version.pk, version.config, version.model_provider


REFS = ["latest", "1", "2", "3", "prod", "PROD", "gone", "not a ref!", "0"]


def test_the_one_statement_answers_and_refuses_as_the_two_steps(
    make_agent: Any, admin_user: Any, owner: Any, stranger: Any, env: Any, other_env: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    other = LLMModel.objects.exclude(pk=CALCULATOR["config"]["llmModelId"]).first()
    assert other is not None
    version_add(
        user=admin_user, agent=agent, config={**CALCULATOR["config"], "llmModelId": other.pk}
    )
    alias_set(user=admin_user, agent=agent, name="prod", version_number=1)
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, agent)
    refs = [*REFS, str(agent.versions.get(number=2).pk), str(uuid.uuid4())]
    seen = set()
    callers = [(admin_user, env), (owner, env), (reader, env), (stranger, env), (owner, other_env)]
    for user, where in callers:
        for agent_id in (agent.pk, uuid.uuid4()):
            for ref in refs:
                expected = _two_steps(user, where, agent_id, ref)
                with CaptureQueriesContext(connection) as queries:
                    assert _one_statement(user, where, agent_id, ref) == expected, (user, ref)
                assert len(queries.captured_queries) <= 2  # two only for a bad ref
                seen.add(expected[0] if isinstance(expected[0], type) else "ok")
    assert seen == {"ok", NotFound, PermissionDenied, Invalid}  # every outcome was compared


def test_a_good_reference_is_one_statement(make_agent: Any, owner: Any, env: Any) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    with CaptureQueriesContext(connection) as queries:
        agent_and_version_to_invoke(user=owner, environment=env, agent_id=agent.pk, ref="1")
    assert len(queries.captured_queries) == 1


@pytest.mark.parametrize(
    ("guardrails", "expected"),
    [
        # The token's holder; the agent, the grants and the version; the run opened; closed
        # with its events kept (WITH … INSERT the events … UPDATE the run).
        ([], ["SELECT", "SELECT", "INSERT", "WITH"]),
        # And the guardrails' rules, read by name when the version names any.
        (["HAIP-Prompt_attack-Medium"], ["SELECT", "SELECT", "INSERT", "SELECT", "WITH"]),
    ],
)
def test_the_statements_of_an_invoke(
    make_agent: Any, owner: Any, guardrails: list[str], expected: list[str], monkeypatch: Any
) -> None:
    # A run's events are flushed while it lives once FLUSH_SECONDS pass; a busy machine can
    # stretch this short invoke past them. What is counted here is the invoke's own
    # statements, so no flush may fall inside it.
    monkeypatch.setattr(event_log, "FLUSH_SECONDS", 3600.0)
    config = {**CALCULATOR["config"], "guardrails": guardrails}
    agent = make_agent("Calculator", "tool", config=config)
    client = client_for(owner)
    url = f"/v1/agents/{agent.pk}/versions/latest/invoke"
    body = {"messages": [{"role": "user", "content": "Say hello."}]}
    assert client.post(url, body, format="json").status_code == 200  # warm: nothing cached

    with CaptureQueriesContext(connection) as queries:
        response = client.post(url, body, format="json")
    assert response.status_code == 200
    assert [query["sql"].split()[0] for query in queries.captured_queries] == expected
