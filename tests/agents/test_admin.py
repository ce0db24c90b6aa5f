from __future__ import annotations

import copy
import html
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.hashers import check_password
from django.test import Client
from django.urls import reverse
from guardian.shortcuts import get_perms

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action, grant
from agents.models import Agent, AgentVersion, APIClient, Environment, LLMModel
from agents.services.agents import agent_delete
from agents.services.versions import version_add
from guardrails.models import Guardrail
from tests.factories import CALCULATOR_CONFIG, UserFactory
from tests.support.admin import browser_post_data, staff_with


@pytest.fixture
def site(client: Client, admin_user: Any) -> Client:
    client.force_login(admin_user)
    return client


@dataclass
class World:
    env: Environment
    agent: Agent
    version: AgentVersion
    client: APIClient
    model: LLMModel
    guardrail: Guardrail


@pytest.fixture
def world(env, make_agent, admin_user) -> World:
    agent = make_agent("calc")
    config = {**CALCULATOR_CONFIG, "systemPrompt": "Be terse."}
    version = version_add(user=admin_user, agent=agent, config=config)
    issued = api_client_create(name="ci", environment=env, actions=[Action.READ])
    return World(
        env=env,
        agent=agent,
        version=version,
        client=issued.client,
        model=LLMModel.objects.get(pk="local.demo-v1"),
        guardrail=Guardrail.objects.create(name="no-pii", description="Blocks PII"),
    )


def page(client: Client, name: str, *args: Any) -> str:
    response = client.get(reverse(f"admin:{name}", args=args))
    assert response.status_code == 200, response.content[:500]
    return html.unescape(response.content.decode())


def change_agent(client: Client, agent: Agent, **changes: Any) -> Any:
    url = reverse("admin:agents_agent_change", args=[agent.pk])
    return client.post(url, browser_post_data(client.get(url), **changes))


def add_agent(client: Client, env: Environment, config: Any, **fields: Any) -> Any:
    data = {
        "environment": env.pk,
        "name": "calc",
        "agent_type": "tool",
        "description": "Math",
        "version_label": "first",
        "config": json.dumps(config),
        **fields,
    }
    return client.post(reverse("admin:agents_agent_add"), data)


def errors_of(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, "the form should have been re-rendered"
    return response.context["adminform"].form.errors


OBJECTS = {
    "agents_environment": lambda w: (w.env, "The environment of requests that name none."),
    "agents_agent": lambda w: (w.agent, "calc"),
    "agents_agentversion": lambda w: (w.version, "Be terse."),
    "agents_llmmodel": lambda w: (w.model, "Offline demo model"),
    "agents_apiclient": lambda w: (w.client, w.client.client_id),
    "guardrails_guardrail": lambda w: (w.guardrail, "Blocks PII"),
}


@pytest.mark.parametrize("model", OBJECTS)
def test_changelist_links_the_object(site, world, model):
    obj, _ = OBJECTS[model](world)
    link = reverse(f"admin:{model}_change", args=[quote(obj.pk)])
    assert f'href="{link}"' in page(site, f"{model}_changelist")


@pytest.mark.parametrize("model", OBJECTS)
def test_change_page_shows_the_object(site, world, model):
    obj, text = OBJECTS[model](world)
    assert text in page(site, f"{model}_change", quote(obj.pk))


@pytest.mark.parametrize("model", [m for m in OBJECTS if m != "agents_agentversion"])
def test_add_page_renders(site, world, model):
    assert 'type="submit"' in page(site, f"{model}_add")


def test_agent_list_runs_a_fixed_number_of_queries(
    site, world, make_agent, django_assert_max_num_queries
):
    for n in range(5):
        make_agent(f"agent{n}")

    with django_assert_max_num_queries(8):
        assert "agent4" in page(site, "agents_agent_changelist")


def test_agent_list_hides_deleted_agents_unless_filtered_for(site, world, make_agent, admin_user):
    gone = make_agent("gone")
    agent_delete(user=admin_user, agent=gone)
    url = reverse("admin:agents_agent_changelist")

    def listed(**query):
        return sorted(a.name for a in site.get(url, query).context["cl"].result_list)

    assert listed() == ["calc"]
    assert listed(deleted="yes") == ["gone"]
    assert listed(deleted="all") == ["calc", "gone"]
    page = site.get(url, {"deleted": "all"}).content.decode()
    # A deleted agent cannot be invoked: no playground link that would 404.
    assert reverse("admin:agents_agent_playground", args=[gone.pk]) not in page
    assert reverse("admin:agents_agent_playground", args=[world.agent.pk]) in page
    assert '<a href="?deleted=yes">Yes</a>' in page


def test_add_form_creates_agent_with_version_1(site, env, admin_user):
    response = add_agent(site, env, CALCULATOR_CONFIG)

    assert response.status_code == 302, errors_of(response)
    agent = Agent.objects.get(name="calc")
    assert (agent.environment, agent.description, agent.created_by) == (env, "Math", admin_user)
    version = agent.versions.get()
    assert (version.number, version.version_label) == (1, "first")
    assert version.config["inferenceConfig"]["maxTokens"] == 4000


def test_add_form_refuses_a_duplicate_name(site, env, make_agent):
    make_agent("calc")

    errors = errors_of(add_agent(site, env, CALCULATOR_CONFIG, name="CALC"))

    assert errors["__all__"] == ["Agent 'CALC' already exists in environment 'default'"]
    assert Agent.objects.count() == 1


def test_add_form_names_the_line_of_broken_json(site, env):
    errors = errors_of(
        site.post(reverse("admin:agents_agent_add"), {"config": '{\n  "tools": [,]\n}'})
    )

    assert errors["config"] == ["config: invalid JSON, Expecting value at line 2 column 13"]


BAD_CONFIGS = {
    "unknown function": (
        lambda c: c["tools"][0].update(funcName="multiplyy"),
        "config.tools.0.funcName: unknown function 'multiplyy'",
    ),
    "unknown key": (
        lambda c: c.update(systemPromt=c.pop("systemPrompt")),
        "config.systemPromt: unknown field 'systemPromt'",
    ),
}


@pytest.mark.parametrize("case", BAD_CONFIGS)
def test_add_form_refuses_an_invalid_config_naming_its_path(site, env, case):
    spoil, message = BAD_CONFIGS[case]
    config = copy.deepcopy(CALCULATOR_CONFIG)
    spoil(config)

    response = add_agent(site, env, config)

    assert errors_of(response)["config"] == [message]
    assert message in html.unescape(response.content.decode())
    assert not Agent.objects.exists()
    assert not AgentVersion.objects.exists()


def test_change_form_adds_version_2_and_keeps_version_1(site, make_agent, admin_user):
    agent = make_agent("calc")
    first = agent.versions.get()
    config = {**first.config, "systemPrompt": "Be terse."}

    response = change_agent(
        site, agent, config=json.dumps(config), version_label="terse", description="Terse math"
    )

    assert response.status_code == 302, errors_of(response)
    versions = list(agent.versions.order_by("number"))
    assert [v.number for v in versions] == [1, 2]
    assert versions[0].config == first.config
    assert versions[0].config["systemPrompt"] != "Be terse."
    assert (versions[1].config["systemPrompt"], versions[1].version_label) == ("Be terse.", "terse")
    assert versions[1].created_by == admin_user
    assert Agent.objects.get(pk=agent.pk).description == "Terse math"


def test_change_form_without_a_config_change_adds_no_version(site, make_agent):
    agent = make_agent("calc")

    response = change_agent(site, agent, name="calculator")

    assert response.status_code == 302, errors_of(response)
    assert Agent.objects.get(pk=agent.pk).name == "calculator"
    assert agent.versions.count() == 1


def test_change_form_refuses_a_taken_version_label(site, world):
    response = change_agent(site, world.agent, version_label="stable", notes="first try")
    assert response.status_code == 302, errors_of(response)

    errors = errors_of(change_agent(site, world.agent, version_label="stable"))

    assert errors["__all__"] == ["Agent 'calc' already has a version labelled 'stable'"]
    assert world.agent.versions.count() == 3


@pytest.mark.parametrize("case", BAD_CONFIGS)
def test_change_form_refuses_an_invalid_config_and_changes_nothing(site, make_agent, case):
    agent = make_agent("calc")
    first = agent.versions.get()
    spoil, message = BAD_CONFIGS[case]
    config = copy.deepcopy(first.config)
    spoil(config)

    response = change_agent(site, agent, config=json.dumps(config), name="renamed")

    assert errors_of(response)["config"] == [message]
    assert message in html.unescape(response.content.decode())
    assert agent.versions.count() == 1
    assert agent.versions.get().config == first.config
    assert Agent.objects.get(pk=agent.pk).name == "calc", "the rename is rolled back too"


def test_agent_page_links_each_version(site, world):
    content = page(site, "agents_agent_change", world.agent.pk)

    for version in world.agent.versions.all():
        url = reverse("admin:agents_agentversion_change", args=[version.pk])
        assert f'<a href="{url}">v{version.number}</a>' in content


def test_version_page_shows_diff_against_the_previous_version(site, world):
    content = page(site, "agents_agentversion_change", world.version.pk)

    assert "--- v1" in content
    assert "+++ v2" in content
    assert '-  "systemPrompt": "You are a helpful assistant with access to various tools."' in (
        content
    )
    assert '+  "systemPrompt": "Be terse."' in content
    assert '"funcName": "multiply"' in content
    assert '-  "tools"' not in content, "unchanged lines are context, not changes"


def test_first_version_page_says_there_is_nothing_to_compare(site, world):
    first = world.agent.versions.get(number=1)

    assert "nothing to compare with" in page(site, "agents_agentversion_change", first.pk)


def test_versions_cannot_be_added_changed_or_deleted_in_the_admin(site, world):
    version = world.version
    url = reverse("admin:agents_agentversion_change", args=[version.pk])

    assert site.get(reverse("admin:agents_agentversion_add")).status_code == 403
    assert site.post(url, {"notes": "edited"}).status_code == 403
    delete_url = reverse("admin:agents_agentversion_delete", args=[version.pk])
    assert site.post(delete_url, {"post": "yes"}).status_code == 403
    assert AgentVersion.objects.get(pk=version.pk).notes == ""


def test_delete_is_a_soft_delete(site, world):
    agent = world.agent
    url = reverse("admin:agents_agent_delete", args=[agent.pk])

    assert "calc" in page(site, "agents_agent_delete", agent.pk)
    assert site.post(url, {"post": "yes"}).status_code == 302

    agent.refresh_from_db()
    assert agent.deleted_at is not None
    assert agent.versions.count() == 2
    content = page(site, "agents_agent_change", agent.pk)
    assert 'name="name"' not in content, "a deleted agent is read-only"
    assert '<div class="readonly">deleted</div>' in content


def test_delete_action_soft_deletes_the_selection(site, world, make_agent):
    other = make_agent("other")
    data = {"action": "delete_selected", "_selected_action": [world.agent.pk, other.pk]}
    data["post"] = "yes"

    response = site.post(reverse("admin:agents_agent_changelist"), data)

    assert response.status_code == 302
    assert Agent.objects.filter(deleted_at__isnull=False).count() == 2
    assert AgentVersion.objects.count() == 3


def test_staff_with_read_grant_sees_agent_but_cannot_change_it(client, world):
    staff = staff_with("change_agent")
    grant(staff, Action.READ, world.agent)
    client.force_login(staff)

    content = page(client, "agents_agent_change", world.agent.pk)
    response = change_agent(client, world.agent, description="hijacked")

    assert 'name="description"' not in content
    assert response.status_code == 403
    assert Agent.objects.get(pk=world.agent.pk).description == ""


def test_staff_without_a_create_grant_gets_a_form_error(client, env):
    client.force_login(staff_with("add_agent"))

    errors = errors_of(add_agent(client, env, CALCULATOR_CONFIG))

    assert "Select a valid choice" in errors["environment"][0]
    assert not Agent.objects.exists()


def test_staff_with_edit_grant_on_the_environment_changes_agent(client, world):
    staff = staff_with("change_agent")
    grant(staff, Action.READ, world.env)
    grant(staff, Action.EDIT, world.env)
    client.force_login(staff)

    response = change_agent(client, world.agent, description="Sums too")

    assert response.status_code == 302, errors_of(response)
    assert Agent.objects.get(pk=world.agent.pk).description == "Sums too"


def test_api_client_cannot_grant_more_than_its_creator_holds(client, env):
    staff = staff_with("add_apiclient")
    grant(staff, Action.READ, env)
    grant(staff, Action.EDIT, env)  # minting a client in an environment needs EDIT there
    client.force_login(staff)
    data = {"name": "ci", "environment": env.pk, "permissions": ["view_agent", "delete_agent"]}

    errors = errors_of(client.post(reverse("admin:agents_apiclient_add"), data))

    assert errors["__all__"] == [
        "You cannot grant DELETE in environment 'default': you do not hold it there."
    ]
    assert not APIClient.objects.exists()


def test_api_client_secret_is_shown_once(site, env):
    response = site.post(
        reverse("admin:agents_apiclient_add"),
        {"name": "ci", "environment": env.pk, "permissions": ["view_agent", "invoke_agent"]},
        follow=True,
    )

    assert response.status_code == 200
    client = APIClient.objects.get(name="ci")
    notes = [str(m) for m in response.context["messages"]]
    shown = next(n for n in notes if client.client_id in n)
    secret = shown.split("Secret: ")[1].split()[0]
    assert "will not be shown again" in shown
    assert client.secret_hash != secret
    assert check_password(secret, client.secret_hash)
    assert sorted(get_perms(client.service_user, env)) == ["invoke_agent", "view_agent"]

    content = page(site, "agents_apiclient_change", client.pk)
    assert secret not in content
    assert client.secret_hash not in content
    assert "READ, INVOKE" in content


def test_api_client_can_be_disabled(site, world):
    url = reverse("admin:agents_apiclient_change", args=[world.client.pk])

    response = site.post(url, {"name": "ci"})

    assert response.status_code == 302
    assert APIClient.objects.get(pk=world.client.pk).enabled is False


def test_model_catalog_entry_is_added_with_its_agent_types(site):
    data = {
        "id": "openai/gpt-4.1",
        "name": "GPT-4.1",
        "provider": "openai",
        "agent_types": ["tool", "task"],
        "capabilities": "streaming,tools",
        "enabled": "on",
    }

    response = site.post(reverse("admin:agents_llmmodel_add"), data)

    assert response.status_code == 302, errors_of(response)
    model = LLMModel.objects.get(pk="openai/gpt-4.1")
    assert (model.agent_types, model.capabilities) == (["tool", "task"], ["streaming", "tools"])


def test_guardrail_list_shows_the_scope(site, world):
    Guardrail.objects.create(name="env-only", description="Local", environment=world.env)

    rows = page(site, "guardrails_guardrail_changelist").split("<tr")

    assert '<td class="field-scope">global</td>' in next(r for r in rows if "no-pii" in r)
    assert '<td class="field-scope">default</td>' in next(r for r in rows if "env-only" in r)


@pytest.mark.parametrize("model", ["agents_environment", "agents_agent"])
def test_object_permissions_page_lists_the_holders(site, world, model):
    holder = UserFactory(username="jane-invoker")
    target = world.env if model == "agents_environment" else world.agent
    grant(holder, Action.INVOKE, target)

    assert "<td>jane-invoker</td>" in page(site, f"{model}_permissions", target.pk)
    manage = page(site, f"{model}_permissions_manage_user", target.pk, holder.pk)
    assert '<option value="invoke_agent" selected>' in manage
    assert '<option value="view_agent">' in manage


def test_guardrail_admin_saves_an_engine_and_refuses_one_it_cannot_build(site):
    from guardrails.models import Guardrail

    url = reverse("admin:guardrails_guardrail_add")
    fields = {
        "name": "Team-Profanity",
        "description": "Profanity, our wording",
        "enabled": "on",
        "engine": "local",
        "blocked_input_message": "Please rephrase.",
        "blocked_output_message": "Answer withheld.",
    }
    refused = site.post(url, {**fields, "engine_config": '{"detector": "profanityy"}'})
    assert "unknown guardrail detector" in str(errors_of(refused)["engine_config"])
    assert not Guardrail.objects.filter(name="Team-Profanity").exists()

    saved = site.post(url, {**fields, "engine_config": '{"detector": "profanity"}'})
    assert saved.status_code == 302
    row = Guardrail.objects.get(name="Team-Profanity")
    assert (row.engine_config, row.blocked_output_message) == (
        {"detector": "profanity"},
        "Answer withheld.",
    )
