"""The config editor's server side (agents/admin/config_editor.py): the schema it completes
from, the check that marks problems as saving would, the templates an agent starts from,
and a save that changes nothing. The editor itself runs in Chromium in
tests/agents/admin/test_studio_browser.py."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.access.permissions import Action, grant
from agents.admin.config_editor import config_schema
from agents.examples import TEMPLATES
from agents.models import Agent, AgentVersion
from agents.runtime.tools.functions import REGISTRY
from agents.services.config_check import config_validate
from tests.factories import CALCULATOR_CONFIG, CONFIGS, UserFactory
from tests.support.admin import browser_post_data


@pytest.fixture
def site(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


def schema(site: Client, env: Any, agent_type: str) -> dict[str, Any]:
    url = reverse("admin:agents_agent_config_schema")
    response = site.get(url, {"environment": str(env.pk), "agentType": agent_type})
    assert response.status_code == 200, response.content
    return response.json()


def check(site: Client, env: Any, agent_type: str, config: Any) -> list[dict[str, Any]]:
    url = reverse("admin:agents_agent_config_check")
    body = {"environment": str(env.pk), "agentType": agent_type, "config": config}
    response = site.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["errors"]


def test_the_schema_is_the_config_model_s_with_the_environment_s_choices(
    site: Client, env: Any, make_agent: Any
) -> None:
    task = make_agent("summary", "task", config=CONFIGS["task"])
    tool = schema(site, env, "tool")

    assert set(tool["properties"]) >= {"llmModelId", "systemPrompt", "tools", "guardrails"}
    assert "local.demo-v1" in tool["properties"]["llmModelId"]["enum"]
    assert "HAIP-Profanity" in tool["properties"]["guardrails"]["items"]["enum"]
    fallbacks = tool["properties"]["fallbackModels"]
    assert fallbacks["items"]["enum"] == tool["properties"]["llmModelId"]["enum"]
    assert fallbacks["maxItems"] == 3
    assert "tried in order" in fallbacks["description"]
    defs = tool["$defs"]
    assert sorted(defs["FunctionTool"]["properties"]["funcName"]["enum"]) == sorted(REGISTRY)
    task_choice = defs["TaskAgentTool"]["properties"]["agentId"]
    assert task_choice["enum"] == [str(task.pk)]
    assert "summary" in task_choice["description"]
    assert set(schema(site, env, "task")["properties"]) >= {"inputSchema", "outputSchema"}
    assert "hxqlQuery" in schema(site, env, "rag")["properties"]


def test_the_schema_follows_the_config_models() -> None:
    for agent_type in ("tool", "rag", "task"):
        properties = config_schema(agent_type)["properties"]
        assert "llmModelId" in properties  # camelCase, as the API reads configs
        assert "llm_model_id" not in properties


def test_the_editor_offers_require_approval_with_its_choices() -> None:
    schema = config_schema("tool")
    definitions = schema["$defs"]
    for name in ("FunctionTool", "TaskAgentTool", "RagTool"):
        policy = definitions[name]["properties"]["requireApproval"]
        assert "approve" in policy["description"]
        shown = json.dumps(policy["anyOf"])
        for choice in ('"never"', '"always"', "ArgumentsMatch"):
            assert choice in shown
    assert "requireApproval" not in definitions["StructuredOutputTool"]["properties"]
    mcp = definitions["McpToolConfiguration"]["properties"]
    assert {"requireApproval", "toolApprovals"} <= set(mcp)
    assert "argumentsMatch" in definitions["ArgumentsMatch"]["properties"]
    assert "approvalTtl" in schema["properties"]


def test_the_check_reports_what_saving_would_with_the_path_of_each_problem(
    site: Client, env: Any
) -> None:
    assert check(site, env, "tool", CALCULATOR_CONFIG) == []

    bad = {**CALCULATOR_CONFIG, "llmModelId": "no-such-model", "systemPromt": "typo"}
    bad["tools"] = [{**CALCULATOR_CONFIG["tools"][0], "funcName": "nope"}]
    problems = check(site, env, "tool", bad)
    assert [p["loc"] for p in problems] == [["systemPromt"]]  # the shape first, as saving

    problems = check(site, env, "tool", {k: v for k, v in bad.items() if k != "systemPromt"})
    assert {tuple(p["loc"]) for p in problems} == {("llmModelId",), ("tools", 0, "funcName")}
    assert check(site, env, "task", {"llmModelId": "local.demo-v1"})[0]["loc"] in (
        ["systemPrompt"],
        ["inputSchema"],
    )


def test_the_endpoints_are_for_staff_of_the_environment(
    client: Client, env: Any, other_env: Any
) -> None:
    staff = UserFactory(username="staff", is_staff=True)
    grant(staff, Action.CREATE, env)
    client.force_login(staff)
    url = reverse("admin:agents_agent_config_schema")

    assert client.get(url, {"environment": str(env.pk), "agentType": "tool"}).status_code == 200
    elsewhere = client.get(url, {"environment": str(other_env.pk), "agentType": "tool"})
    assert elsewhere.status_code == 404
    assert client.get(url, {"environment": str(env.pk), "agentType": "x"}).status_code == 404
    check_url = reverse("admin:agents_agent_config_check")
    assert client.get(check_url).status_code == 405
    assert client.post(check_url, "[", content_type="application/json").status_code == 400


@pytest.mark.parametrize("key", TEMPLATES)
def test_every_template_is_a_valid_config(key: str, env: Any, admin_user: Any) -> None:
    _, example = TEMPLATES[key]
    config_validate(
        user=admin_user,
        environment=env,
        agent_type=example["agentType"],
        data=example["config"],
        loc=(),
    )


def test_adding_an_agent_starts_from_the_first_template(site: Client) -> None:
    page = site.get(reverse("admin:agents_agent_add"))
    form = page.context["adminform"].form
    _, first = next(iter(TEMPLATES.values()))

    assert form["agent_type"].value() == first["agentType"]
    assert json.loads(form["config"].value()) == first["config"]
    assert b'id="config-editor-template"' in page.content
    assert b"agents/vendor/config-editor.js" in page.content


def test_the_only_environment_is_chosen_on_the_add_page(site: Client, env: Any) -> None:
    form = site.get(reverse("admin:agents_agent_add")).context["adminform"].form

    assert form["environment"].value() == env.pk
    assert [str(value) for value, _ in form.fields["environment"].choices] == [str(env.pk)]


def test_with_several_environments_none_is_chosen_and_the_page_says_one_is_needed(
    site: Client, env: Any, other_env: Any
) -> None:
    page = site.get(reverse("admin:agents_agent_add"))
    form = page.context["adminform"].form

    assert form["environment"].value() is None
    assert b'class="config-editor-needs help"' in page.content
    assert b"Choose an environment" in page.content


def test_without_an_environment_the_check_finds_the_shape_s_problems(site: Client) -> None:
    url = reverse("admin:agents_agent_config_check")
    typo = {**CALCULATOR_CONFIG, "systemPromt": "Be terse.", "llmModelId": "no-such-model"}
    body = {"environment": "", "agentType": "tool", "config": typo}

    response = site.post(url, json.dumps(body), content_type="application/json")

    # The unknown key is found; the model, a catalog's, waits for an environment.
    assert [e["loc"] for e in response.json()["errors"]] == [["systemPromt"]]
    shape = site.get(reverse("admin:agents_agent_config_schema"), {"agentType": "tool"})
    assert shape.json() == config_schema("tool")


def test_start_from_keeps_its_choice_after_a_failed_save(site: Client, env: Any) -> None:
    url = reverse("admin:agents_agent_add")
    data = {**browser_post_data(site.get(url)), "name": "bad name!"}
    data["config_template"] = "summarizer"

    failed = site.post(url, data)

    assert failed.status_code == 200
    assert failed.context["adminform"].form.errors
    assert b'<option value="summarizer" selected>' in failed.content
    assert b'<option value="calculator" selected>' not in failed.content
    assert not Agent.objects.exists()


def test_the_change_page_shows_the_config_as_written_and_saving_it_keeps_it(
    site: Client, make_agent: Any
) -> None:
    written = {
        "systemPrompt": "You compute.\nShow the steps.",
        "tools": CALCULATOR_CONFIG["tools"],
        "llmModelId": CALCULATOR_CONFIG["llmModelId"],
    }
    agent: Agent = make_agent("calc", config=written)
    url = reverse("admin:agents_agent_change", args=[agent.pk])

    page = site.get(url)

    text = json.dumps(written, indent=2, ensure_ascii=False)
    assert page.context["adminform"].form["config"].value() == text
    assert html.escape(text) in page.content.decode()  # the read-only copy, in order
    # Changed and saved from the page: the new version is stored as it was typed.
    retyped = {"llmModelId": written["llmModelId"], **written, "systemPrompt": "Be terse."}
    data = {**browser_post_data(page), "config": json.dumps(retyped), "_continue": "1"}
    site.post(url, data)
    latest = agent.versions.order_by("-number").first()
    assert list(latest.config_shown) == ["llmModelId", "systemPrompt", "tools"]


def test_a_save_that_changes_nothing_says_so_and_makes_no_version(
    site: Client, make_agent: Any
) -> None:
    agent: Agent = make_agent("calc")
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    data = {**browser_post_data(site.get(url)), "_continue": "1"}

    saved = site.post(url, data, follow=True)

    assert AgentVersion.objects.filter(agent=agent).count() == 1
    said = [str(m) for m in saved.context["messages"]]
    assert any(m.startswith("Nothing changed") for m in said), said
    assert not any("changed successfully" in m for m in said), said

    changed = site.post(
        url,
        {**data, "config": json.dumps({**CALCULATOR_CONFIG, "systemPrompt": "Be terse."})},
        follow=True,
    )
    assert changed.status_code == 200
    assert AgentVersion.objects.filter(agent=agent).count() == 2
