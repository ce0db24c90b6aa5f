"""The permission matrix of the agent routes (docs/api.md#permissions).

Every cell is generated from ROUTES × GRANTS × SITUATIONS; its expected answer comes from
`expected_status`, one rule: an agent the caller may not READ is 404, a readable agent
without the route's permission is 403, creating needs CREATE on the environment, and
listings answer 200 with only what the caller may READ.

The cast of each cell: `calc` (the target) and `helper` in the default environment, and
`calc` again in `other`, the twin that must never leak into a default-environment answer.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action, grant
from agents.access.tokens import token_encode
from agents.models import Agent, AgentVersion, Environment, VersionAlias
from agents.services.aliases import alias_set
from tests.conftest import client_for
from tests.factories import CALCULATOR_CONFIG, UserFactory

READ, CREATE, EDIT, INVOKE, DELETE = (
    Action.READ,
    Action.CREATE,
    Action.EDIT,
    Action.INVOKE,
    Action.DELETE,
)


@dataclass
class World:
    env: Environment
    other_env: Environment
    caller: Any
    group: Group
    calc: Agent
    helper: Agent
    twin: Agent
    v1: AgentVersion

    def agents(self, names: set[str]) -> set[str]:
        return {str(getattr(self, name).pk) for name in names}

    def fill(self, text: str) -> str:
        return text.format(agent=self.calc.pk, v1=self.v1.pk)


# A check receives the answer after its status was asserted, whether the route succeeded,
# and the names (calc, helper) the caller may READ in the default environment.
Check = Callable[[World, Any, bool, set[str]], None]


def check_list(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    ids = [a["id"] for a in response.json()["agents"]]
    assert sorted(ids) == sorted(world.agents(visible))
    assert response.json()["pagination"]["totalItems"] == len(visible)


def check_create(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    created = Agent.objects.filter(environment=world.env, name="fresh", deleted_at=None)
    if not ok:
        assert not created.exists()
        return
    agent = created.get()
    assert response.json()["id"] == str(agent.pk)
    assert agent.created_by == world.caller
    assert list(agent.versions.values_list("number", flat=True)) == [1]


def check_get(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert response.json()["id"] == str(world.calc.pk)


def check_patch(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    world.calc.refresh_from_db()
    if ok:
        assert response.json()["description"] == "patched"
        assert world.calc.description == "patched"
        assert world.calc.modified_by == world.caller
    else:
        assert world.calc.description == ""


def check_delete(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    world.calc.refresh_from_db()
    if ok:
        assert response.json() == {"agentId": str(world.calc.pk)}
        assert world.calc.deleted_at is not None
    else:
        assert world.calc.deleted_at is None


def check_versions(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert response.json()["agent"]["id"] == str(world.calc.pk)
        assert [v["number"] for v in response.json()["versions"]] == [1]


def check_version_add(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    numbers = list(world.calc.versions.order_by("number").values_list("number", flat=True))
    if ok:
        assert response.json()["version"]["number"] == 2
        assert numbers == [1, 2]
    else:
        assert numbers == [1]


def check_version(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert response.json()["agent"]["id"] == str(world.calc.pk)
        assert response.json()["version"]["id"] == str(world.v1.pk)


def check_batch(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    body = response.json()
    found = [item["agent"]["id"] for item in body["agents"]]
    assert sorted(found) == sorted(world.agents(visible))
    requested = world.agents({"calc", "helper", "twin"})
    missing = {e["agentId"]: e["status"] for e in body["errors"]}
    assert missing == dict.fromkeys(requested - set(found), 404)


def check_aliases(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert [a["name"] for a in response.json()["aliases"]] == ["prod"]


def check_alias_set(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    canary = VersionAlias.objects.filter(agent=world.calc, name="canary").first()
    if ok:
        assert response.json()["versionId"] == str(world.v1.pk)
        assert canary is not None
        assert canary.updated_by == world.caller
    else:
        assert canary is None


def check_alias_delete(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    assert VersionAlias.objects.filter(agent=world.calc, name="prod").exists() is not ok


def check_alias_history(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert [c["toVersion"] for c in response.json()["changes"]] == [1]


def check_schedules(world: World, response: Any, ok: bool, visible: set[str]) -> None:
    if ok:
        assert response.json()["schedules"] == []


@dataclass(frozen=True)
class Route:
    label: str
    method: Literal["get", "post", "put", "patch", "delete"]
    path: str
    needs: Action
    # agent: acts on `calc`; environment: acts on the request's environment;
    # listing: answers with the readable subset of what was asked for.
    scope: Literal["agent", "environment", "listing"]
    ok: int
    check: Check
    body: Callable[[World], dict[str, Any]] | None = None


ROUTES = [
    Route("GET agents", "get", "/v1/agents", READ, "listing", 200, check_list),
    Route(
        "POST agents",
        "post",
        "/v1/agents",
        CREATE,
        "environment",
        201,
        check_create,
        lambda w: {"name": "fresh", "agentType": "tool", "config": CALCULATOR_CONFIG},
    ),
    Route("GET agent", "get", "/v1/agents/{agent}", READ, "agent", 200, check_get),
    Route(
        "PATCH agent",
        "patch",
        "/v1/agents/{agent}",
        EDIT,
        "agent",
        200,
        check_patch,
        lambda w: {"description": "patched"},
    ),
    Route("DELETE agent", "delete", "/v1/agents/{agent}", DELETE, "agent", 200, check_delete),
    Route("GET versions", "get", "/v1/agents/{agent}/versions", READ, "agent", 200, check_versions),
    Route(
        "POST versions",
        "post",
        "/v1/agents/{agent}/versions",
        EDIT,
        "agent",
        201,
        check_version_add,
        lambda w: {"notes": "copy of the latest"},
    ),
    Route(
        "GET version latest",
        "get",
        "/v1/agents/{agent}/versions/latest",
        READ,
        "agent",
        200,
        check_version,
    ),
    Route(
        "GET version number",
        "get",
        "/v1/agents/{agent}/versions/1",
        READ,
        "agent",
        200,
        check_version,
    ),
    Route(
        "GET version uuid",
        "get",
        "/v1/agents/{agent}/versions/{v1}",
        READ,
        "agent",
        200,
        check_version,
    ),
    Route("GET aliases", "get", "/v1/agents/{agent}/aliases", READ, "agent", 200, check_aliases),
    Route(
        "PUT alias",
        "put",
        "/v1/agents/{agent}/aliases/canary",
        EDIT,
        "agent",
        200,
        check_alias_set,
        lambda w: {"version": 1},
    ),
    Route(
        "DELETE alias",
        "delete",
        "/v1/agents/{agent}/aliases/prod",
        EDIT,
        "agent",
        204,
        check_alias_delete,
    ),
    Route(
        "GET alias history",
        "get",
        "/v1/agents/{agent}/aliases/history",
        READ,
        "agent",
        200,
        check_alias_history,
    ),
    Route(
        "GET schedules", "get", "/v1/agents/{agent}/schedules", READ, "agent", 200, check_schedules
    ),
    Route(
        "POST lookup",
        "post",
        "/v1/agents/lookup",
        READ,
        "agent",
        200,
        check_version,
        lambda w: {"name": "CALC"},
    ),
    Route(
        "POST batch-get",
        "post",
        "/v1/agents/versions/batch-get",
        READ,
        "listing",
        200,
        check_batch,
        lambda w: {"agentIds": sorted(w.agents({"calc", "helper", "twin"}))},
    ),
]

# Each permission alone, and each other permission together with READ.
GRANTS: list[tuple[Action, ...]] = [
    *[(action,) for action in Action],
    *[(READ, action) for action in Action if action is not READ],
]


@dataclass(frozen=True)
class Situation:
    label: str
    holder: Literal["user", "group"]
    # Where the grants are held: on calc, on the default environment, on `other`, nowhere.
    on: Literal["agent", "environment", "other-environment"] | None


SITUATIONS = [
    Situation("on-agent", "user", "agent"),
    Situation("on-environment", "user", "environment"),
    Situation("group-on-environment", "group", "environment"),
    Situation("group-on-agent", "group", "agent"),
    Situation("not-granted", "user", None),
    Situation("other-environment", "user", "other-environment"),
]


def holds(grants: tuple[Action, ...], situation: Situation, action: Action, on: str) -> bool:
    """Whether the caller holds `action` on calc ("agent") or the default environment."""
    if action not in grants:
        return False
    # A grant on the environment holds for every agent in it; one on an agent only there.
    return situation.on == "environment" or situation.on == on == "agent"


def readable(grants: tuple[Action, ...], situation: Situation) -> set[str]:
    """The default-environment agents the caller may READ."""
    if READ not in grants:
        return set()
    return {"agent": {"calc"}, "environment": {"calc", "helper"}}.get(situation.on or "", set())


def expected_status(route: Route, grants: tuple[Action, ...], situation: Situation) -> int:
    if route.scope == "listing":
        return route.ok
    if route.scope == "environment":
        return route.ok if holds(grants, situation, route.needs, "environment") else 403
    if not holds(grants, situation, READ, "agent"):
        return 404
    if not holds(grants, situation, route.needs, "agent"):
        return 403
    return route.ok


def send(client: APIClient, route: Route, world: World, **headers: str) -> Any:
    body = route.body(world) if route.body else None
    call = getattr(client, route.method)
    if body is None:
        return call(world.fill(route.path), headers=headers)
    return call(world.fill(route.path), body, format="json", headers=headers)


@pytest.fixture(scope="module")
def api() -> APIClient:
    # One client for the module: every new client builds its middleware chain again, and
    # WhiteNoise rescans the static files each time, which would double the matrix's time.
    return APIClient()


def signed_in(api: APIClient, user: Any) -> APIClient:
    token, _ = token_encode(user_id=user.pk, environment_id=None)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


@pytest.fixture
def world(env: Environment, other_env: Environment, make_agent: Any) -> World:
    calc = make_agent("calc")
    alias_set(user=calc.created_by, agent=calc, name="prod", version_number=1)
    caller = UserFactory(username="caller")
    group = Group.objects.create(name="team")
    caller.groups.add(group)
    return World(
        env=env,
        other_env=other_env,
        caller=caller,
        group=group,
        calc=calc,
        helper=make_agent("helper", "task"),
        twin=make_agent("calc", environment=other_env),
        v1=calc.versions.get(number=1),
    )


def give(world: World, grants: tuple[Action, ...], situation: Situation) -> None:
    if situation.on is None:
        return
    holder = world.group if situation.holder == "group" else world.caller
    target = {
        "agent": world.calc,
        "environment": world.env,
        "other-environment": world.other_env,
    }[situation.on]
    for action in grants:
        grant(holder, action, target)


CELLS = [
    pytest.param(
        route,
        grants,
        situation,
        id=f"{route.label}|{'+'.join(a.name for a in grants)}|{situation.label}",
    )
    for route, grants, situation in itertools.product(ROUTES, GRANTS, SITUATIONS)
]


@pytest.mark.parametrize(("route", "grants", "situation"), CELLS)
def test_permission_matrix(
    api: APIClient, world: World, route: Route, grants: tuple[Action, ...], situation: Situation
) -> None:
    give(world, grants, situation)
    want = expected_status(route, grants, situation)

    response = send(signed_in(api, world.caller), route, world)

    assert response.status_code == want, response.json()
    if want >= 400:
        assert isinstance(response.json()["detail"], str)
    route.check(world, response, want < 400, readable(grants, situation))


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.label)
def test_superuser_may_do_everything_without_grants(
    api: APIClient, world: World, admin_user: Any, route: Route
) -> None:
    world = dataclasses.replace(world, caller=admin_user)

    response = send(signed_in(api, admin_user), route, world)

    assert response.status_code == route.ok, response.json()
    route.check(world, response, True, {"calc", "helper"})


def test_superuser_sees_agents_of_every_environment(world: World, admin_user: Any) -> None:
    response = client_for(admin_user).get("/v1/agents", headers={"X-Environment": "other"})

    assert [a["id"] for a in response.json()["agents"]] == [str(world.twin.pk)]


@pytest.mark.parametrize("by", ["name", "id"])
def test_x_environment_header_reaches_agent_granted_in_that_environment(
    world: World, by: str
) -> None:
    grant(world.caller, READ, world.other_env)
    grant(world.caller, EDIT, world.other_env)
    client = client_for(world.caller)
    header = {"X-Environment": "other" if by == "name" else str(world.other_env.pk)}

    listed = client.get("/v1/agents", headers=header)
    fetched = client.get(f"/v1/agents/{world.twin.pk}", headers=header)
    looked_up = client.post("/v1/agents/lookup", {"name": "calc"}, format="json", headers=header)
    added = client.post(f"/v1/agents/{world.twin.pk}/versions", {}, format="json", headers=header)

    assert [a["id"] for a in listed.json()["agents"]] == [str(world.twin.pk)]
    assert fetched.status_code == 200
    assert looked_up.json()["agent"]["id"] == str(world.twin.pk)
    assert added.status_code == 201
    assert world.twin.versions.filter(number=2).exists()
    assert client.get(f"/v1/agents/{world.calc.pk}", headers=header).status_code == 404
    assert client.get(f"/v1/agents/{world.twin.pk}").status_code == 404


def test_x_environment_header_naming_an_unseen_environment_is_404(world: World) -> None:
    grant(world.caller, READ, world.env)

    response = client_for(world.caller).get("/v1/agents", headers={"X-Environment": "other"})

    assert response.status_code == 404
    assert isinstance(response.json()["detail"], str)


def test_token_bound_to_an_environment_scopes_every_request_to_it(world: World) -> None:
    for action in (READ, CREATE):
        grant(world.caller, action, world.env)
    grant(world.caller, READ, world.other_env)
    client = client_for(world.caller, world.other_env)

    listed = client.get("/v1/agents")
    ignored_header = client.get("/v1/agents", headers={"X-Environment": "default"})
    looked_up = client.post("/v1/agents/lookup", {"name": "calc"}, format="json")
    created = client.post(
        "/v1/agents",
        {"name": "fresh", "agentType": "tool", "config": CALCULATOR_CONFIG},
        format="json",
    )

    assert [a["id"] for a in listed.json()["agents"]] == [str(world.twin.pk)]
    assert [a["id"] for a in ignored_header.json()["agents"]] == [str(world.twin.pk)]
    assert looked_up.json()["agent"]["id"] == str(world.twin.pk)
    assert client.get(f"/v1/agents/{world.twin.pk}").status_code == 200
    assert client.get(f"/v1/agents/{world.calc.pk}").status_code == 404
    assert created.status_code == 403
    assert not Agent.objects.filter(name="fresh").exists()


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-jwt"], ids=["no-token", "bad-token"])
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.label)
def test_request_without_valid_token_is_401(
    api: APIClient, world: World, route: Route, authorization: str | None
) -> None:
    if authorization:
        api.credentials(HTTP_AUTHORIZATION=authorization)
    else:
        api.credentials()

    response = send(api, route, world)

    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/json")
    assert isinstance(response.json()["detail"], str)
    assert response["WWW-Authenticate"].startswith("Bearer")
    world.calc.refresh_from_db()
    assert world.calc.deleted_at is None
    assert world.calc.description == ""


# ------------------------------------------------------------------------- the admin
#
# The admin reads and writes the same rows as the API, so the same grants scope it: a
# staff user with Django's model permissions on every model, and object permissions on
# `default` only, sees `default`'s rows (read-only with READ, editable with EDIT) and
# nothing of the other environment: not its rows, not its name in a list filter or in an
# environment select, not its objects' pages, and no action or POST reaches them.

OTHER = "elsewhere-zz"  # the invisible environment's name: a string no page holds else


@dataclass
class AdminWorld:
    env: Environment
    other: Environment
    mine: dict[str, Any]  # one object per admin in `default`
    theirs: dict[str, Any]  # its twin in the other environment


ADMIN_MODELS = ("apiclient", "guardrail", "mcpserver", "agent", "agentversion")
ADMIN_URL = {
    "apiclient": "agents/apiclient",
    "guardrail": "guardrails/guardrail",
    "mcpserver": "agents/mcpserver",
    "agent": "agents/agent",
    "agentversion": "agents/agentversion",
    "run": "agents/run",
    "document": "retrieval/document",
}


@pytest.fixture
def admin_world(env: Environment, make_agent: Any) -> AdminWorld:
    from agents.models import McpServer
    from guardrails.models import Guardrail

    other = Environment.objects.create(name=OTHER)

    def objects(environment: Environment, tag: str) -> dict[str, Any]:
        agent = make_agent(name=f"agent-{tag}", environment=environment)
        return {
            "apiclient": api_client_create(name=f"client-{tag}", environment=environment).client,
            "guardrail": Guardrail.objects.create(
                name=f"guard-{tag}",
                description="d",
                environment=environment,
                engine_config={"detector": "profanity"},
            ),
            "mcpserver": McpServer.objects.create(
                environment=environment, name=f"mcp-{tag}", url="http://127.0.0.1:9/mcp"
            ),
            "agent": agent,
            "agentversion": agent.versions.get(),
        }

    return AdminWorld(env, other, objects(env, "mine"), objects(other, "theirs"))


def staff_with(world: AdminWorld, *actions: Action) -> Any:
    """A staff user with every model permission of the admin and `actions` on `default`."""
    from django.contrib.auth.models import Permission

    user = UserFactory(username="staffer", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=["agents", "guardrails", "retrieval"],
            codename__regex=r"^(view|add|change|delete)_",
        )
    )
    for action in actions:
        grant(user, action, world.env)
    return user


def admin_client(user: Any) -> Any:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def change_url(model: str, obj: Any) -> str:
    return f"/admin/{ADMIN_URL[model]}/{obj.pk}/change/"


@pytest.mark.parametrize("model", [*ADMIN_MODELS, "run", "document"])
@pytest.mark.parametrize("grants", [(READ,), (READ, EDIT)], ids=["read", "edit"])
def test_admin_changelist_shows_nothing_of_an_unseen_environment(
    admin_world: AdminWorld, model: str, grants: tuple[Action, ...]
) -> None:
    """Neither its rows nor its name (list filters, columns)."""
    client = admin_client(staff_with(admin_world, *grants))

    page = client.get(f"/admin/{ADMIN_URL[model]}/")

    assert page.status_code == 200
    html = page.content.decode()
    assert OTHER not in html
    assert "-theirs" not in html
    if model in admin_world.mine:
        assert "-mine" in html


@pytest.mark.parametrize("model", ADMIN_MODELS)
def test_admin_objects_of_an_unseen_environment_have_no_page(
    admin_world: AdminWorld, model: str
) -> None:
    client = admin_client(staff_with(admin_world, READ, EDIT, DELETE))
    theirs = admin_world.theirs[model]

    page = client.get(change_url(model, theirs))

    # Django's admin answers an object outside the admin's queryset like a missing one.
    assert page.status_code in (302, 404)
    assert OTHER not in page.content.decode()
    deleted = client.get(f"/admin/{ADMIN_URL[model]}/{theirs.pk}/delete/")
    assert deleted.status_code in (302, 403, 404)
    assert type(theirs).objects.filter(pk=theirs.pk).exists()


CHANGES: dict[str, dict[str, Any]] = {
    "apiclient": {"name": "renamed", "enabled": ""},
    "guardrail": {
        "name": "renamed",
        "description": "rewritten",
        "engine": "local",
        "engine_config": '{"detector": "insults"}',
        "blocked_input_message": "no",
        "blocked_output_message": "no",
    },
}


@pytest.mark.parametrize("model", sorted(CHANGES))
@pytest.mark.parametrize("whose", ["mine", "theirs"])
@pytest.mark.parametrize("grants", [(READ,), (READ, EDIT)], ids=["read", "edit"])
def test_admin_change_post_needs_edit_in_the_objects_environment(
    admin_world: AdminWorld, model: str, whose: str, grants: tuple[Action, ...]
) -> None:
    client = admin_client(staff_with(admin_world, *grants))
    obj = getattr(admin_world, whose)[model]
    data = dict(CHANGES[model])
    if model == "guardrail":
        data["environment"] = str(obj.environment_id)

    answer = client.post(change_url(model, obj), data)

    obj.refresh_from_db()
    changed = whose == "mine" and EDIT in grants
    assert (obj.name == "renamed") is changed, answer.status_code
    if model == "apiclient":
        assert obj.enabled is not changed
    if not changed:
        assert answer.status_code in (302, 403, 404)
        if answer.status_code == 302:
            assert answer["Location"] != f"/admin/{ADMIN_URL[model]}/"


@pytest.mark.parametrize("model", sorted(CHANGES))
def test_admin_readable_objects_are_read_only_without_edit(
    admin_world: AdminWorld, model: str
) -> None:
    client = admin_client(staff_with(admin_world, READ))

    page = client.get(change_url(model, admin_world.mine[model]))

    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


@pytest.mark.parametrize("model", ["apiclient", "guardrail", "mcpserver", "agent"])
@pytest.mark.parametrize("grants", [(READ,), (READ, CREATE, EDIT)], ids=["read", "write"])
def test_admin_add_form_offers_only_environments_the_user_may_write(
    admin_world: AdminWorld, model: str, grants: tuple[Action, ...]
) -> None:
    client = admin_client(staff_with(admin_world, *grants))

    page = client.get(f"/admin/{ADMIN_URL[model]}/add/")

    html = page.content.decode()
    assert OTHER not in html
    if page.status_code == 200 and READ in grants and EDIT not in grants:
        assert f'<option value="{admin_world.env.pk}"' not in html


def test_admin_add_refuses_an_environment_the_user_may_not_write(
    admin_world: AdminWorld,
) -> None:
    from guardrails.models import Guardrail

    client = admin_client(staff_with(admin_world, READ, CREATE, EDIT))
    data = {**CHANGES["guardrail"], "name": "planted", "environment": str(admin_world.other.pk)}

    client.post("/admin/guardrails/guardrail/add/", data)
    client.post(
        "/admin/agents/apiclient/add/",
        {"name": "planted", "environment": str(admin_world.other.pk)},
    )

    assert not Guardrail.objects.filter(name="planted").exists()
    assert not admin_world.other.clients.filter(name="planted").exists()


@pytest.mark.parametrize("grants", [(READ,), (READ, EDIT, DELETE)], ids=["read", "write"])
def test_admin_bulk_delete_reaches_only_deletable_rows(
    admin_world: AdminWorld, grants: tuple[Action, ...]
) -> None:
    from guardrails.models import Guardrail

    client = admin_client(staff_with(admin_world, *grants))
    rows = [admin_world.mine["guardrail"].pk, admin_world.theirs["guardrail"].pk]

    client.post(
        "/admin/guardrails/guardrail/",
        {"action": "delete_selected", "_selected_action": rows, "post": "yes"},
    )

    assert Guardrail.objects.filter(pk=admin_world.theirs["guardrail"].pk).exists()
    mine_left = Guardrail.objects.filter(pk=admin_world.mine["guardrail"].pk).exists()
    assert mine_left is (EDIT not in grants)


@pytest.mark.parametrize("model", ADMIN_MODELS)
def test_admin_superuser_sees_every_environment(
    admin_world: AdminWorld, admin_user: Any, model: str
) -> None:
    html = admin_client(admin_user).get(f"/admin/{ADMIN_URL[model]}/").content.decode()

    assert OTHER in html
    if model in admin_world.theirs:
        assert (
            admin_client(admin_user).get(change_url(model, admin_world.theirs[model])).status_code
            == 200
        )
