"""The config rules of docs/api.md#configs through the API: every refusal is a 400 naming the path
of the bad field, and what is accepted is stored camelCase with every default filled in."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.models import Agent, AgentVersion, Environment, LLMModel
from agents.services.agents import agent_delete
from tests.factories import CALCULATOR_CONFIG, RAG_CONFIG, TASK_CONFIG

pytestmark = pytest.mark.django_db

CONFIG = ["body", "config"]
TOOL_0 = [*CONFIG, "tools", 0]


def function_tool(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(CALCULATOR_CONFIG["tools"][0]), **changes}


def without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def structured_tool(name: str = "answer", schema: Any = None) -> dict[str, Any]:
    return {
        "toolType": "structured_output",
        "name": name,
        "description": "The final answer",
        "outputSchema": schema or {"type": "object", "properties": {"x": {"type": "string"}}},
    }


def task_agent_tool(agent_id: Any, **changes: Any) -> dict[str, Any]:
    tool = {
        "toolType": "task_agent",
        "name": "summarise",
        "description": "Summarises a text",
        "agentId": str(agent_id),
    }
    return {**tool, **changes}


def mcp_tool(reference: dict[str, Any]) -> dict[str, Any]:
    return {"toolType": "mcp", "mcpServerReferences": [reference]}


def tool_config(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(CALCULATOR_CONFIG), **changes}


def task_config(**changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(TASK_CONFIG), **changes}


def create(client: APIClient, config: Any, agent_type: str = "tool", name: str = "probe") -> Any:
    body = {"name": name, "agentType": agent_type, "config": config}
    return client.post("/v1/agents", body, format="json")


def add_version(client: APIClient, agent: Agent, config: Any) -> Any:
    return client.post(f"/v1/agents/{agent.pk}/versions", {"config": config}, format="json")


def stored_config(client: APIClient, agent_id: str) -> dict[str, Any]:
    """The config runs read: validated, defaults filled in. The API echoes the config as it
    was written (tests/agents/test_smoke_api.py), so this one is read from its row."""
    answer = client.get(f"/v1/agents/{agent_id}/versions/latest")
    assert answer.status_code == 200, answer.json()
    return AgentVersion.objects.get(pk=answer.json()["version"]["id"]).config


def assert_refused(response: Any, loc: list[str | int], msg: str) -> None:
    """A 400 whose every error points at `loc`, one of them saying `msg`."""
    assert response.status_code == 400, response.json()
    errors = response.json()["detail"]
    assert errors, errors
    assert [e["loc"] for e in errors] == [loc] * len(errors), errors
    assert any(msg.lower() in e["msg"].lower() for e in errors), errors
    assert all(set(e) == {"loc", "msg", "type"} for e in errors), errors


SCHEMA_OF_A_STRING = {"type": "string"}
BROKEN_SCHEMA = {"type": "object", "properties": {"a": {"type": "nonsense"}}}


# ---------------------------------------------------------------- shapes of a tool config


@pytest.mark.parametrize(
    ("config", "loc", "msg"),
    [
        pytest.param(
            tool_config(systemPromt="Hi"),
            [*CONFIG, "systemPromt"],
            "unknown field 'systemPromt'",
            id="unknown-config-key",
        ),
        pytest.param(
            tool_config(inferenceConfig={"maxTokenz": 10}),
            [*CONFIG, "inferenceConfig", "maxTokenz"],
            "unknown field 'maxTokenz'",
            id="unknown-key-in-inference-config",
        ),
        pytest.param(
            tool_config(tools=[function_tool(funcname="multiply")]),
            [*TOOL_0, "funcname"],
            "unknown field 'funcname'",
            id="unknown-key-in-tool",
        ),
        pytest.param(
            tool_config(tools=[function_tool(toolType="lambda")]),
            [*TOOL_0, "toolType"],
            "'lambda'",
            id="unknown-tool-type",
        ),
        pytest.param(
            tool_config(tools=[without(function_tool(), "toolType")]),
            [*TOOL_0, "toolType"],
            "tag",
            id="missing-tool-type",
        ),
        pytest.param(
            tool_config(tools=[without(function_tool(), "funcName")]),
            [*TOOL_0, "funcName"],
            "Field required",
            id="function-tool-without-func-name",
        ),
        pytest.param(
            tool_config(tools=[without(structured_tool(), "outputSchema")]),
            [*TOOL_0, "outputSchema"],
            "Field required",
            id="structured-output-without-schema",
        ),
        pytest.param(
            without(tool_config(), "llmModelId"),
            [*CONFIG, "llmModelId"],
            "Field required",
            id="missing-model",
        ),
        pytest.param(tool_config(tools=[]), [*CONFIG, "tools"], "at least 1 item", id="no-tools"),
        pytest.param(
            without(tool_config(), "tools"), [*CONFIG, "tools"], "Field required", id="tools-absent"
        ),
        pytest.param(
            tool_config(maxIterations=0),
            [*CONFIG, "maxIterations"],
            "greater than or equal to 1",
            id="max-iterations-0",
        ),
        pytest.param(
            tool_config(maxIterations=21),
            [*CONFIG, "maxIterations"],
            "less than or equal to 20",
            id="max-iterations-21",
        ),
        pytest.param(
            tool_config(inferenceConfig={"maxTokens": 0}),
            [*CONFIG, "inferenceConfig", "maxTokens"],
            "greater than or equal to 1",
            id="max-tokens-0",
        ),
        pytest.param(
            tool_config(inferenceConfig={"temperature": -1}),
            [*CONFIG, "inferenceConfig", "temperature"],
            "greater than or equal to 0",
            id="negative-temperature",
        ),
        pytest.param(
            tool_config(tools=[function_tool(), function_tool(funcName="add")]),
            [*CONFIG, "tools", 1, "name"],
            "duplicate tool name 'multiply'",
            id="duplicate-tool-names",
        ),
        pytest.param(
            tool_config(tools=[structured_tool("first"), structured_tool("second")]),
            [*CONFIG, "tools", 1],
            "only one structured_output tool",
            id="two-structured-output-tools",
        ),
        pytest.param(
            tool_config(tools=[structured_tool(schema=BROKEN_SCHEMA)]),
            [*TOOL_0, "outputSchema"],
            "invalid JSON Schema at properties/a/type",
            id="structured-output-invalid-schema",
        ),
        pytest.param(
            tool_config(tools=[structured_tool(schema={"type": "object", "pattern": "(["})]),
            [*TOOL_0, "outputSchema"],
            "invalid JSON Schema at pattern",
            id="structured-output-schema-with-bad-regex",
        ),
        pytest.param(
            tool_config(tools=[structured_tool(schema=SCHEMA_OF_A_STRING)]),
            [*TOOL_0, "outputSchema"],
            '"type": "object"',
            id="structured-output-schema-not-an-object",
        ),
        pytest.param(
            tool_config(tools=[structured_tool(schema={"$schema": [], "type": "object"})]),
            [*TOOL_0, "outputSchema"],
            "schema",
            id="structured-output-schema-with-list-dialect",
        ),
        pytest.param(
            tool_config(tools=[structured_tool(schema={"$schema": 7, "type": "object"})]),
            [*TOOL_0, "outputSchema"],
            "schema",
            id="structured-output-schema-with-number-dialect",
        ),
        pytest.param(
            tool_config(
                tools=[mcp_tool({"id": str(uuid.uuid4()), "url": "https://mcp.example.com"})]
            ),
            [*TOOL_0, "mcpServerReferences", 0],
            "exactly one of 'id' or 'url'",
            id="mcp-reference-with-id-and-url",
        ),
        pytest.param(
            tool_config(tools=[mcp_tool({"toolConfiguration": {"allowedTools": ["x"]}})]),
            [*TOOL_0, "mcpServerReferences", 0],
            "exactly one of 'id' or 'url'",
            id="mcp-reference-with-neither-id-nor-url",
        ),
        pytest.param(
            tool_config(
                tools=[{**function_tool(toolType="rag", name="search"), "funcName": "grep"}]
            ),
            [*TOOL_0, "funcName"],
            "semantic_search",
            id="rag-tool-with-other-function",
        ),
        pytest.param(
            tool_config(tools=[task_agent_tool("not-a-uuid")]),
            [*TOOL_0, "agentId"],
            "UUID",
            id="task-agent-id-not-a-uuid",
        ),
        pytest.param(
            tool_config(tools=[task_agent_tool(uuid.uuid4(), agentVersion=0)]),
            [*TOOL_0, "agentVersion"],
            "greater than or equal to 1",
            id="task-agent-version-0",
        ),
    ],
)
def test_tool_config_shape_is_refused_at_the_bad_field(
    owner_client: APIClient, config: dict[str, Any], loc: list[str | int], msg: str
) -> None:
    assert_refused(create(owner_client, config), loc, msg)


# ---------------------------------------------------------------- catalogs


@pytest.mark.parametrize(
    ("config", "loc", "msg"),
    [
        pytest.param(
            tool_config(tools=[function_tool(funcName="multiplyy")]),
            [*TOOL_0, "funcName"],
            "unknown function 'multiplyy'",
            id="unknown-function",
        ),
        pytest.param(
            tool_config(tools=[function_tool(), function_tool(name="div", funcName="divyde")]),
            [*CONFIG, "tools", 1, "funcName"],
            "unknown function 'divyde'",
            id="unknown-function-in-second-tool",
        ),
        pytest.param(
            tool_config(llmModelId="gpt-17-ultra"),
            [*CONFIG, "llmModelId"],
            "unknown model 'gpt-17-ultra'",
            id="unknown-model",
        ),
        pytest.param(
            tool_config(guardrails=["HAIP-Profanity", "HAIP-Nonsense"]),
            [*CONFIG, "guardrails", 1],
            "unknown guardrail 'HAIP-Nonsense'",
            id="unknown-guardrail",
        ),
        pytest.param(
            tool_config(guardrails=["HAIP-Profanity", "HAIP-Profanity", "HAIP-Nonsense"]),
            [*CONFIG, "guardrails", 2],
            "unknown guardrail 'HAIP-Nonsense'",
            id="unknown-guardrail-after-a-repeated-name",
        ),
    ],
)
def test_tool_config_naming_an_unknown_catalog_entry_is_refused(
    owner_client: APIClient, config: dict[str, Any], loc: list[str | int], msg: str
) -> None:
    assert_refused(create(owner_client, config), loc, msg)


def test_the_exact_spec_error_body_for_an_unknown_function(owner_client: APIClient) -> None:
    response = create(owner_client, tool_config(tools=[function_tool(funcName="multiplyy")]))

    assert response.status_code == 400
    assert response.json() == {
        "detail": [
            {
                "loc": ["body", "config", "tools", 0, "funcName"],
                "msg": "unknown function 'multiplyy'",
                "type": "value_error",
            }
        ]
    }


def test_disabled_model_is_refused_as_unknown(owner_client: APIClient) -> None:
    LLMModel.objects.filter(pk="amazon.nova-micro-v1:0").update(enabled=False)

    response = create(owner_client, tool_config(llmModelId="amazon.nova-micro-v1:0"))

    assert_refused(response, [*CONFIG, "llmModelId"], "unknown model 'amazon.nova-micro-v1:0'")


def test_model_that_does_not_serve_the_agent_type_is_refused(owner_client: APIClient) -> None:
    LLMModel.objects.create(
        id="test.tools-only", name="Tools only", provider="local", agent_types=["tool"]
    )

    accepted = create(owner_client, tool_config(llmModelId="test.tools-only"), name="tooly")
    refused = create(owner_client, task_config(llmModelId="test.tools-only"), "task")

    assert accepted.status_code == 201, accepted.json()
    assert_refused(
        refused, [*CONFIG, "llmModelId"], "model 'test.tools-only' does not serve task agents"
    )


# ---------------------------------------------------------------- task and RAG configs


@pytest.mark.parametrize(
    ("config", "loc", "msg"),
    [
        pytest.param(
            task_config(inputSchema=BROKEN_SCHEMA),
            [*CONFIG, "inputSchema"],
            "invalid JSON Schema at properties/a/type",
            id="invalid-input-schema",
        ),
        pytest.param(
            task_config(inputSchema={"type": "array", "items": {"type": "string"}}),
            [*CONFIG, "inputSchema"],
            '"type": "object"',
            id="input-schema-not-an-object",
        ),
        pytest.param(
            task_config(outputSchema={"type": "object", "required": "summary"}),
            [*CONFIG, "outputSchema"],
            "invalid JSON Schema at required",
            id="invalid-output-schema",
        ),
        pytest.param(
            task_config(outputSchema=SCHEMA_OF_A_STRING),
            [*CONFIG, "outputSchema"],
            '"type": "object"',
            id="output-schema-not-an-object",
        ),
        pytest.param(
            without(task_config(), "inputSchema"),
            [*CONFIG, "inputSchema"],
            "Field required",
            id="input-schema-absent",
        ),
        pytest.param(
            task_config(
                systemPrompt="Hi {{ name }}",
                inputSchema={"type": "object", "properties": {"text": {"type": "string"}}},
            ),
            [*CONFIG, "systemPrompt"],
            "template variables not in inputSchema: 'name'",
            id="template-variable-missing-from-input-schema",
        ),
        pytest.param(
            task_config(systemPrompt="Summarise {% for t in texts %}{{ t }}{% endfor %}"),
            [*CONFIG, "systemPrompt"],
            "'texts'",
            id="loop-variable-missing-from-input-schema",
        ),
        pytest.param(
            task_config(systemPrompt="Summarise {{ text "),
            [*CONFIG, "systemPrompt"],
            "template syntax error on line 1",
            id="template-syntax-error",
        ),
    ],
)
def test_task_config_is_refused_at_the_bad_field(
    owner_client: APIClient, config: dict[str, Any], loc: list[str | int], msg: str
) -> None:
    assert_refused(create(owner_client, config, "task"), loc, msg)


def test_task_config_with_null_output_schema_is_taken_as_no_schema(
    owner_client: APIClient,
) -> None:
    response = create(owner_client, task_config(outputSchema=None), "task")

    assert response.status_code == 201, response.json()
    assert "outputSchema" not in stored_config(owner_client, response.json()["id"])


def test_rag_prompt_without_context_placeholder_is_refused(owner_client: APIClient) -> None:
    config = {**RAG_CONFIG, "systemPrompt": "Answer {query_str} from what you know."}

    response = create(owner_client, config, "rag")

    assert_refused(response, [*CONFIG, "systemPrompt"], "{context_str}")


@pytest.mark.parametrize(
    ("changes", "loc"),
    [
        pytest.param({"limit": 0}, [*CONFIG, "limit"], id="limit-0"),
        pytest.param({"rerankerTopN": 0}, [*CONFIG, "rerankerTopN"], id="reranker-top-n-0"),
        pytest.param({"hxqlQuery": ""}, [*CONFIG, "hxqlQuery"], id="empty-hxql-query"),
        pytest.param({"tools": []}, [*CONFIG, "tools"], id="tool-agent-key"),
    ],
)
def test_rag_config_is_refused_at_the_bad_field(
    owner_client: APIClient, changes: dict[str, Any], loc: list[str | int]
) -> None:
    response = create(owner_client, {**RAG_CONFIG, **changes}, "rag")

    assert response.status_code == 400, response.json()
    assert [e["loc"] for e in response.json()["detail"]] == [loc]


# ---------------------------------------------------------------- task_agent references


@pytest.fixture
def summariser(make_agent: Callable[..., Agent]) -> Agent:
    return make_agent("summariser", "task")


def test_task_agent_tool_pointing_at_a_task_agent_is_accepted(
    owner_client: APIClient, summariser: Agent
) -> None:
    config = tool_config(tools=[task_agent_tool(summariser.pk, agentVersion=1)])

    response = create(owner_client, config)

    assert response.status_code == 201, response.json()
    stored = stored_config(owner_client, response.json()["id"])
    assert stored["tools"][0]["agentVersion"] == 1
    assert stored["tools"][0]["agentId"] == str(summariser.pk)


def test_task_agent_tool_pointing_at_nothing_is_refused(owner_client: APIClient) -> None:
    missing = uuid.uuid4()

    response = create(owner_client, tool_config(tools=[task_agent_tool(missing)]))

    assert_refused(
        response, [*TOOL_0, "agentId"], f"unknown agent '{missing}' in environment 'default'"
    )


def test_task_agent_tool_pointing_at_a_tool_agent_is_refused(
    owner_client: APIClient, make_agent: Callable[..., Agent]
) -> None:
    calc = make_agent("calc", "tool")

    response = create(owner_client, tool_config(tools=[task_agent_tool(calc.pk)]))

    assert_refused(response, [*TOOL_0, "agentId"], "agent 'calc' is a tool agent, not a task agent")


def test_task_agent_tool_pointing_at_a_rag_agent_is_refused(
    owner_client: APIClient, make_agent: Callable[..., Agent]
) -> None:
    docs = make_agent("docs", "rag")

    response = create(owner_client, tool_config(tools=[task_agent_tool(docs.pk)]))

    assert_refused(response, [*TOOL_0, "agentId"], "agent 'docs' is a rag agent, not a task agent")


def test_tool_agent_version_pointing_at_itself_is_refused(
    owner_client: APIClient, make_agent: Callable[..., Agent]
) -> None:
    calc = make_agent("calc", "tool")
    config = tool_config(tools=[function_tool(), task_agent_tool(calc.pk, name="myself")])

    response = add_version(owner_client, calc, config)

    assert_refused(
        response,
        [*CONFIG, "tools", 1, "agentId"],
        "agent 'calc' is a tool agent, not a task agent",
    )
    assert list(calc.versions.values_list("number", flat=True)) == [1]


def test_task_agent_tool_pointing_into_another_environment_is_refused(
    owner: Any,
    owner_client: APIClient,
    other_env: Environment,
    make_agent: Callable[..., Agent],
) -> None:
    grant(owner, Action.READ, other_env)  # visible to the caller, yet not in its environment
    elsewhere = make_agent("summariser", "task", environment=other_env)

    response = create(owner_client, tool_config(tools=[task_agent_tool(elsewhere.pk)]))

    assert_refused(
        response, [*TOOL_0, "agentId"], f"unknown agent '{elsewhere.pk}' in environment 'default'"
    )


def test_task_agent_tool_pointing_at_a_deleted_task_agent_is_refused(
    owner_client: APIClient, admin_user: Any, summariser: Agent
) -> None:
    agent_delete(user=admin_user, agent=summariser)

    response = create(owner_client, tool_config(tools=[task_agent_tool(summariser.pk)]))

    assert_refused(response, [*TOOL_0, "agentId"], f"unknown agent '{summariser.pk}'")


def test_task_agent_tool_pinned_to_a_missing_version_is_refused(
    owner_client: APIClient, summariser: Agent
) -> None:
    config = tool_config(tools=[task_agent_tool(summariser.pk, agentVersion=2)])

    response = create(owner_client, config)

    assert_refused(response, [*TOOL_0, "agentVersion"], "agent 'summariser' has no version 2")


# ---------------------------------------------------------------- versions endpoint


def test_new_version_config_is_checked_like_a_new_agent(
    owner_client: APIClient, make_agent: Callable[..., Agent]
) -> None:
    calc = make_agent("calc", "tool")
    config = tool_config(tools=[function_tool(funcName="multiplyy")], maxIterations=21)

    response = add_version(owner_client, calc, config)

    assert response.status_code == 400, response.json()
    # The shape is checked first; catalog checks run on a config of the right shape.
    assert response.json()["detail"] == [
        {
            "loc": [*CONFIG, "maxIterations"],
            "msg": "Input should be less than or equal to 20",
            "type": "less_than_equal",
        }
    ]
    fixed = add_version(owner_client, calc, {**config, "maxIterations": 20})
    assert_refused(fixed, [*TOOL_0, "funcName"], "unknown function 'multiplyy'")
    assert AgentVersion.objects.filter(agent=calc).count() == 1


def test_new_version_of_a_task_agent_is_checked_as_a_task_config(
    owner_client: APIClient, summariser: Agent
) -> None:
    response = add_version(owner_client, summariser, tool_config())

    assert response.status_code == 400, response.json()
    locs = [e["loc"] for e in response.json()["detail"]]
    assert [*CONFIG, "tools"] in locs
    assert [*CONFIG, "inputSchema"] in locs


# ---------------------------------------------------------------- accepted configs


def test_snake_case_keys_are_accepted_and_stored_camel_case(owner_client: APIClient) -> None:
    config = {
        "llm_model_id": "local.demo-v1",
        "system_prompt": "You add numbers.",
        "max_iterations": 3,
        "inference_config": {"max_tokens": 256, "max_retries": 2},
        "tools": [
            {"tool_type": "function", "name": "add", "description": "Adds", "func_name": "add"},
            {
                "tool_type": "structured_output",
                "name": "answer",
                "description": "The answer",
                "output_schema": {"type": "object", "properties": {"the_sum": {"type": "number"}}},
            },
        ],
    }
    body = {"name": "adder", "agent_type": "tool", "version_label": "v1", "config": config}

    response = owner_client.post("/v1/agents", body, format="json")

    assert response.status_code == 201, response.json()
    stored = stored_config(owner_client, response.json()["id"])
    assert stored["llmModelId"] == "local.demo-v1"
    assert stored["systemPrompt"] == "You add numbers."
    assert stored["maxIterations"] == 3
    assert stored["inferenceConfig"]["maxTokens"] == 256
    assert stored["inferenceConfig"]["maxRetries"] == 2
    assert stored["tools"][0] == {
        "toolType": "function",
        "name": "add",
        "description": "Adds",
        "funcName": "add",
    }
    # Keys inside a user's JSON Schema are never renamed.
    assert stored["tools"][1]["outputSchema"]["properties"] == {"the_sum": {"type": "number"}}
    assert not [key for key in _keys_outside_schemas(stored) if "_" in key]
    # What people read is what they wrote, snake_case included.
    echoed = owner_client.get(f"/v1/agents/{response.json()['id']}/versions/latest").json()
    assert echoed["version"]["config"] == config


def _keys_outside_schemas(node: Any) -> list[str]:
    if isinstance(node, list):
        return [k for item in node for k in _keys_outside_schemas(item)]
    if not isinstance(node, dict):
        return []
    return [
        k
        for key, value in node.items()
        if not key.endswith("Schema")
        for k in [key, *_keys_outside_schemas(value)]
    ]


def test_tool_config_defaults_are_stored(owner_client: APIClient) -> None:
    response = create(owner_client, tool_config())

    assert response.status_code == 201, response.json()
    stored = stored_config(owner_client, response.json()["id"])
    assert stored["inferenceConfig"] == {
        "maxTokens": 4000,
        "temperature": 0.0,
        "maxRetries": 10,
        "timeout": 3600,
    }
    assert stored["maxIterations"] == 10
    assert stored["guardrails"] == []


RAG_DEFAULTS = {
    "hxqlQuery": "SELECT * FROM SysContent",
    "limit": 50,
    "hybridSearch": True,
    "adjacentChunkRange": 0,
    "adjacentChunkMerge": False,
    "rerankerTopN": 13,
    "enableHallucinationCheck": False,
    "enableMultihopQueryRefinement": False,
}


def test_rag_config_defaults_are_stored(owner_client: APIClient) -> None:
    response = create(owner_client, RAG_CONFIG, "rag")

    assert response.status_code == 201, response.json()
    stored = stored_config(owner_client, response.json()["id"])
    assert {key: stored[key] for key in RAG_DEFAULTS} == RAG_DEFAULTS
    assert "{context_str}" in stored["systemPrompt"]
    assert "{query_str}" in stored["systemPrompt"]
    assert stored["inferenceConfig"]["maxTokens"] == 4000


def test_tool_entry_defaults_are_stored(owner_client: APIClient, summariser: Agent) -> None:
    rag_tool = {"toolType": "rag", "name": "search", "description": "Searches the documents"}
    config = tool_config(tools=[rag_tool, task_agent_tool(summariser.pk)])

    response = create(owner_client, config)

    assert response.status_code == 201, response.json()
    search, summarise = stored_config(owner_client, response.json()["id"])["tools"]
    assert search["funcName"] == "semantic_search"
    assert search["semanticSearchConfig"] == RAG_DEFAULTS
    assert summarise["agentVersion"] == "latest"


# ---------------------------------------------------------------- nothing half-written


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(tool_config(maxIterations=0), id="shape-error"),
        pytest.param(tool_config(tools=[function_tool(funcName="nope")]), id="catalog-error"),
        pytest.param("not a config", id="not-an-object"),
    ],
)
def test_failed_create_leaves_no_agent_and_no_version(owner_client: APIClient, config: Any) -> None:
    agents_before, versions_before = Agent.objects.count(), AgentVersion.objects.count()

    response = create(owner_client, config, name="ghost")

    assert response.status_code == 400, response.json()
    assert not Agent.objects.filter(name="ghost").exists()
    assert Agent.objects.count() == agents_before
    assert AgentVersion.objects.count() == versions_before


# ---------------------------------------------------------------- the context stage (issue 18)


@pytest.mark.parametrize(
    ("config", "loc", "msg"),
    [
        pytest.param(
            tool_config(contextGuardrails=["HAIP-Prompt_attack-Medium", "HAIP-Nonsense"]),
            [*CONFIG, "contextGuardrails", 1],
            "unknown guardrail 'HAIP-Nonsense'",
            id="unknown-name",
        ),
        pytest.param(
            tool_config(contextGuardrails=["HAIP-Prompt_attack-Medium", ""]),
            [*CONFIG, "contextGuardrails", 1],
            "at least 1 character",
            id="empty-name",
        ),
        pytest.param(
            tool_config(contextGuardrails="HAIP-Prompt_attack-Medium"),
            [*CONFIG, "contextGuardrails"],
            "valid list",
            id="not-a-list",
        ),
    ],
)
def test_a_bad_context_guardrail_is_refused_at_its_path(
    owner_client: APIClient, config: dict[str, Any], loc: list[str | int], msg: str
) -> None:
    assert_refused(create(owner_client, config), loc, msg)


def test_context_guardrails_are_stored_and_left_out_when_not_given(
    owner_client: APIClient,
) -> None:
    plain = create(owner_client, tool_config(), name="plain")
    guarded = create(
        owner_client,
        tool_config(contextGuardrails=["HAIP-Prompt_attack-Medium"]),
        name="guarded",
    )

    assert plain.status_code == guarded.status_code == 201
    # Configs written before the context stage read back exactly as they did.
    assert "contextGuardrails" not in stored_config(owner_client, plain.json()["id"])
    stored = stored_config(owner_client, guarded.json()["id"])
    assert stored["contextGuardrails"] == ["HAIP-Prompt_attack-Medium"]


# ---------------------------------------------------------------- fallback models (issue 31)

HAIKU, NOVA, MINI = (
    "anthropic.claude-3-haiku-20240307-v1:0",
    "amazon.nova-micro-v1:0",
    "openai/gpt-4o-mini",
)


@pytest.mark.parametrize(
    ("config", "loc", "msg"),
    [
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=[MINI, "openai/gpt-nonsense"]),
            [*CONFIG, "fallbackModels", 1],
            "unknown model 'openai/gpt-nonsense'",
            id="unknown",
        ),
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=[MINI, MINI]),
            [*CONFIG, "fallbackModels", 1],
            f"model '{MINI}' is listed already",
            id="twice",
        ),
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=[HAIKU]),
            [*CONFIG, "fallbackModels", 0],
            f"model '{HAIKU}' is the config's model",
            id="the-primary",
        ),
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=[MINI, NOVA, "local.demo-v1", "x"]),
            [*CONFIG, "fallbackModels"],
            "at most 3 items",
            id="too-many",
        ),
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=MINI),
            [*CONFIG, "fallbackModels"],
            "valid list",
            id="not-a-list",
        ),
        pytest.param(
            tool_config(llmModelId=HAIKU, fallbackModels=[MINI, ""]),
            [*CONFIG, "fallbackModels", 1],
            "at least 1 character",
            id="empty-id",
        ),
    ],
)
def test_a_bad_fallback_model_is_refused_at_its_path(
    owner_client: APIClient, config: dict[str, Any], loc: list[str | int], msg: str
) -> None:
    assert_refused(create(owner_client, config), loc, msg)


def test_a_disabled_fallback_model_is_refused_as_unknown(owner_client: APIClient) -> None:
    LLMModel.objects.filter(pk=NOVA).update(enabled=False)

    response = create(owner_client, tool_config(llmModelId=HAIKU, fallbackModels=[MINI, NOVA]))

    assert_refused(response, [*CONFIG, "fallbackModels", 1], f"unknown model '{NOVA}'")


def test_a_fallback_model_of_another_agent_type_is_refused(owner_client: APIClient) -> None:
    LLMModel.objects.create(
        id="test.tools-only", name="Tools only", provider="local", agent_types=["tool"]
    )

    accepted = create(owner_client, tool_config(fallbackModels=["test.tools-only"]), name="tooly")
    refused = create(owner_client, task_config(fallbackModels=[MINI, "test.tools-only"]), "task")

    assert accepted.status_code == 201, accepted.json()
    assert_refused(
        refused,
        [*CONFIG, "fallbackModels", 1],
        "model 'test.tools-only' does not serve task agents",
    )


def test_every_bad_model_of_a_config_is_named_in_one_answer(owner_client: APIClient) -> None:
    config = tool_config(llmModelId="nope.primary", fallbackModels=[MINI, "nope.second"])

    response = create(owner_client, config)

    assert response.status_code == 400
    assert [e["loc"] for e in response.json()["detail"]] == [
        [*CONFIG, "llmModelId"],
        [*CONFIG, "fallbackModels", 1],
    ]


@pytest.mark.parametrize("agent_type", ["tool", "rag", "task"])
def test_fallback_models_are_stored_in_order_and_left_out_when_not_given(
    owner_client: APIClient, agent_type: str
) -> None:
    base = {"tool": tool_config(), "rag": copy.deepcopy(RAG_CONFIG), "task": task_config()}
    config = {**base[agent_type], "llmModelId": HAIKU}
    plain = create(owner_client, config, agent_type, name="plain")
    backed = create(owner_client, {**config, "fallbackModels": [MINI, NOVA]}, agent_type, "backed")

    assert plain.status_code == backed.status_code == 201, backed.json()
    # Configs written before fallbacks read back exactly as they did.
    assert "fallbackModels" not in stored_config(owner_client, plain.json()["id"])
    assert stored_config(owner_client, backed.json()["id"])["fallbackModels"] == [MINI, NOVA]
