"""The invoke path's lookups read what the next step needs in the same statement: the
token's environment with its holder; the agent, the caller's grants, the version and its
model's provider together, as a typed row (agents/runs/lookup.py)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentbuilder.errors import Invalid, NotFound, PermissionDenied
from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.llm.registry import provider_for
from agents.models import AgentUserObjectPermission, LLMModel
from agents.protocols.mcp_server.request import Caller
from agents.protocols.mcp_server.server import start as tools_call
from agents.runs import event_log
from agents.runs.lookup import run_target
from agents.runs.spec import agent_spec
from agents.runs.start import Invocation
from agents.runtime.pricing import Price
from agents.selectors.agents import agent_get_to_invoke
from agents.selectors.versions import version_get
from agents.services.aliases import alias_set
from agents.services.versions import version_add
from tests.conftest import client_for
from tests.factories import TASK_CONFIG, UserFactory


def test_the_version_comes_with_its_models_provider_and_the_spec_needs_no_query(
    make_agent: Any, owner: Any, env: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    target = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")
    expected = LLMModel.objects.get(pk=CALCULATOR["config"]["llmModelId"]).provider
    assert target.model_provider == expected

    with CaptureQueriesContext(connection) as queries:
        spec = agent_spec(target=target)
    assert queries.captured_queries == []
    assert spec.provider_name == expected


def test_a_task_agent_behind_a_tool_comes_with_its_provider_in_one_statement(
    make_agent: Any, owner: Any, env: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    task = make_agent("summarise", "task", config=TASK_CONFIG)
    tool = {"toolType": "task_agent", "name": "summarise", "description": "Summarises"}
    tools = [*CALCULATOR["config"]["tools"], {**tool, "agentId": str(task.pk)}]
    agent = make_agent("Calculator", "tool", config={**CALCULATOR["config"], "tools": tools})
    target = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")

    with CaptureQueriesContext(connection) as queries:
        spec = agent_spec(target=target)
    assert len(queries.captured_queries) == 1
    assert (
        spec.task_agents["summarise"].provider_name
        == LLMModel.objects.get(pk=TASK_CONFIG["llmModelId"]).provider
    )


def test_a_versions_parsed_config_is_shared_and_never_another_versions(
    make_agent: Any, admin_user: Any, owner: Any, env: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    first = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")
    again = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")
    spec = agent_spec(target=first)
    assert again is not first  # another row of the same version
    assert agent_spec(target=again).config is spec.config

    changed = {**CALCULATOR["config"], "systemPrompt": "Answer in French."}
    version_add(user=admin_user, agent=agent, config=changed)
    newer = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")
    assert newer.version_id != first.version_id
    assert agent_spec(target=newer).config.system_prompt == "Answer in French."
    assert agent_spec(target=first).config.system_prompt != "Answer in French."


def _two_steps(user: Any, env: Any, agent_id: Any, ref: str) -> Any:
    """The reference: the invoke routes' permission check, then the API's version read,
    then the catalog's provider, each from the ORM's own rows."""
    try:
        agent = agent_get_to_invoke(user=user, environment=env, agent_id=agent_id)
        version = version_get(agent=agent, ref=ref)
    except (NotFound, PermissionDenied, Invalid) as exc:
        return type(exc), str(exc)
    provider = LLMModel.objects.filter(pk=version.config["llmModelId"]).first()
    return (
        (agent.pk, agent.name, agent.agent_type, agent.environment_id),
        (version.pk, version.number, version.config),
        provider.provider if provider else None,
    )


def _one_statement(user: Any, env: Any, agent_id: Any, ref: str) -> Any:
    try:
        target = run_target(user=user, environment=env, agent_id=agent_id, ref=ref)
    except (NotFound, PermissionDenied, Invalid) as exc:
        return type(exc), str(exc)
    return (
        (target.agent_id, target.agent_name, target.agent_type, target.environment_id),
        (target.version_id, target.version_number, target.config),
        target.model_provider,
    )


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
        run_target(user=owner, environment=env, agent_id=agent.pk, ref="1")
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


def test_the_fallback_models_come_in_order_with_their_providers_and_prices(
    make_agent: Any, owner: Any, env: Any, settings: Any
) -> None:
    settings.LLM_OFFLINE = False
    LLMModel.objects.filter(pk="openai/gpt-4o-mini").update(
        input_usd_per_mtok=Decimal("0.15"),
        output_usd_per_mtok=Decimal("0.6"),
        cached_input_usd_per_mtok=Decimal("0.075"),
    )
    LLMModel.objects.filter(pk="amazon.nova-micro-v1:0").update(
        input_usd_per_mtok=None, output_usd_per_mtok=None
    )
    fallbacks = [
        "openai/gpt-4o-mini",
        "anthropic.claude-3-sonnet-20240229-v1:0",
        "amazon.nova-micro-v1:0",
    ]
    config = {**CALCULATOR["config"], "fallbackModels": fallbacks}
    agent = make_agent("Calculator", "tool", config=config)
    # Disabled since the version was saved: no longer tried.
    LLMModel.objects.filter(pk="anthropic.claude-3-sonnet-20240229-v1:0").update(enabled=False)

    with CaptureQueriesContext(connection) as queries:
        target = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")
        spec = agent_spec(target=target)

    assert len(queries.captured_queries) == 1
    assert [(f.model, f.provider_name, f.price) for f in spec.fallbacks] == [
        ("openai/gpt-4o-mini", "openai", Price(0.15, 0.6, 0.075)),
        ("amazon.nova-micro-v1:0", "bedrock", None),
    ]
    assert spec.fallbacks[0].provider is provider_for("openai")


def test_the_offline_model_has_no_fallbacks(make_agent: Any, owner: Any, env: Any) -> None:
    config = {**CALCULATOR["config"], "fallbackModels": ["openai/gpt-4o-mini"]}
    agent = make_agent("Calculator", "tool", config=config)

    target = run_target(user=owner, environment=env, agent_id=agent.pk, ref="latest")

    assert len(target.fallbacks) == 1
    assert agent_spec(target=target).fallbacks == ()


# ------------------------------------------------ one read of the grants on every route

ASK = [{"role": "user", "content": "Say hello."}]
TEXT = [{"type": "text", "text": "Say hello."}]
BY_ID = "/v1/agents/{id}/versions/latest/"
A2A_SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "message/send",
    "params": {
        "message": {
            "kind": "message",
            "messageId": "m-1",
            "role": "user",
            "parts": [{"kind": "text", "text": "Say hello."}],
        }
    },
}
# Each invoke route: its URL and body. The by-id routes, then those that name the agent.
ROUTES = {
    "invoke": (BY_ID + "invoke", {"messages": ASK}),
    "respond": (BY_ID + "respond", {"messages": ASK}),
    "process": (BY_ID + "process", {"input": [{"role": "user", "content": TEXT}]}),
    "chat/completions": (BY_ID + "chat/completions", {"messages": ASK}),
    "/v1/chat/completions": ("/v1/chat/completions", {"model": "CALCULATOR", "messages": ASK}),
    "/v1/openai": ("/v1/openai/chat/completions", {"model": "Calculator@1", "messages": ASK}),
    "a2a message/send": ("/v1/a2a/Calculator", A2A_SEND),
}


def _grant_reads(queries: CaptureQueriesContext) -> int:
    """How many statements read the grant tables (each statement that does reads all four)."""
    table = AgentUserObjectPermission._meta.db_table
    return sum(table in query["sql"] for query in queries.captured_queries)


def _statements(client: Any, url: str, body: dict[str, Any]) -> tuple[int, list[str]]:
    """A warm call's reads of the grants, and its statements' kinds."""
    assert client.post(url, body, format="json").status_code == 200  # warm: nothing cached
    with CaptureQueriesContext(connection) as queries:
        response = client.post(url, body, format="json")
    assert response.status_code == 200, response.content
    return _grant_reads(queries), [query["sql"].split()[0] for query in queries.captured_queries]


@pytest.mark.parametrize("route", ROUTES)
def test_each_invoke_route_reads_the_callers_grants_once(
    route: str, make_agent: Any, owner: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(event_log, "FLUSH_SECONDS", 3600.0)  # as test_the_statements_of_an_invoke
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    client = client_for(owner)
    url, body = ROUTES[route]

    grant_reads, statements = _statements(client, url.format(id=agent.pk), body)

    assert grant_reads == 1
    # `model` costs no statement: the run's own finds it, as many as the per-agent route's.
    # (A2A reads the agent first, with the grants, and the run reads its contextId's
    # thread: two statements more, and the grants still read once.)
    if route in ("/v1/chat/completions", "/v1/openai"):
        per_agent, by_id = ROUTES["chat/completions"]
        assert _statements(client, per_agent.format(id=agent.pk), by_id) == (1, statements)


def test_an_mcp_tools_call_reads_the_callers_grants_once(
    make_agent: Any, owner: Any, env: Any
) -> None:
    make_agent("Calculator", "tool", config=CALCULATOR["config"])
    caller = Caller(owner, env)
    tools_call(caller, "calculator", {"message": "Say hello."})  # warm: nothing cached

    with CaptureQueriesContext(connection) as queries:
        invocation, _ = tools_call(caller, "Calculator@latest", {"message": "Say hello."})

    assert isinstance(invocation, Invocation)
    assert _grant_reads(queries) == 1
    # The agent with the grants; the version with the budgets; the run's row; the rules
    # of the guardrails the calculator's config names.
    statements = [query["sql"].split()[0] for query in queries.captured_queries]
    assert statements == ["SELECT", "SELECT", "INSERT", "SELECT"]


def _outcome(**lookup: Any) -> Any:
    try:
        target = run_target(**lookup)
    except (NotFound, PermissionDenied, Invalid) as exc:
        return type(exc)
    return target.agent_id, target.version_id


def test_a_name_finds_its_agent_in_the_callers_environment_with_the_refusals_of_an_id(
    make_agent: Any, admin_user: Any, owner: Any, stranger: Any, env: Any, other_env: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    make_agent("Calculator", "tool", environment=other_env, config=CALCULATOR["config"])
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, agent)
    seen = set()
    for user in (admin_user, owner, reader, stranger):
        for ref in ("latest", "1", "9", "not a ref!"):
            lookup = {"user": user, "environment": env, "ref": ref}
            expected = _outcome(agent_id=agent.pk, **lookup)
            with CaptureQueriesContext(connection) as queries:
                assert _outcome(agent_id=None, name="calculator", **lookup) == expected
            assert len(queries.captured_queries) <= 2  # two only for a bad ref
            seen.add(expected if isinstance(expected, type) else "ok")
    assert seen == {"ok", NotFound, PermissionDenied, Invalid}

    with pytest.raises(NotFound) as missing:
        run_target(user=owner, environment=env, agent_id=None, name="nobody", ref="latest")
    assert str(missing.value) == "Agent 'nobody' in environment 'default' not found."
