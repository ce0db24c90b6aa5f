"""Version aliases (docs/api.md#aliases): set, moved and deleted with EDIT, listed with READ, kept
in a history; resolved by every route that names a version, and by `name@alias`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from agentbuilder.errors import Invalid
from agents.access.permissions import Action, grant
from agents.models import Agent, AliasChange, Run, VersionAlias
from agents.selectors.versions import version_ref_parse
from agents.services.versions import version_add
from tests.conftest import client_for
from tests.factories import UserFactory
from tests.support.aliases import history, put, url

ASK = {"messages": [{"role": "user", "content": "What is 3x5?"}]}
INPUTS = {"inputs": {"audience": "admins", "text": "Aliases point at versions."}}


def assert_invalid(response: Any, loc: list[Any]) -> None:
    assert response.status_code == 400, response.json()
    assert [item["loc"] for item in response.json()["detail"]] == [loc]


async def _drain(content: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in content]


def finished(response: Any) -> Any:
    """The answer read to its end (a stream too): its run is then written."""
    assert response.status_code == 200, response.content
    if response.streaming:
        async_to_sync(_drain)(response.streaming_content)
    return response


# ---------------------------------------------------------------- set, move, delete


def test_put_creates_an_alias_and_the_list_shows_it(owner_client: APIClient, calc: Agent) -> None:
    v1 = calc.versions.get(number=1)

    created = put(owner_client, calc, "prod", 1)
    listed = owner_client.get(url(calc))

    assert created.status_code == 200, created.json()
    alias = created.json()
    assert alias == {
        "name": "prod",
        "version": 1,
        "versionId": str(v1.pk),
        "updatedAt": alias["updatedAt"],
        "updatedBy": "owner",
    }
    assert listed.status_code == 200
    assert listed.json() == {"aliases": [alias]}


def test_put_moves_an_alias_and_the_list_is_by_name(owner_client: APIClient, calc: Agent) -> None:
    put(owner_client, calc, "staging", 2)
    first = put(owner_client, calc, "prod", 1).json()

    moved = put(owner_client, calc, "prod", 2)

    assert moved.status_code == 200
    assert moved.json()["version"] == 2
    assert moved.json()["versionId"] == str(calc.versions.get(number=2).pk)
    assert moved.json()["updatedAt"] > first["updatedAt"]
    listed = owner_client.get(url(calc)).json()["aliases"]
    assert [(a["name"], a["version"]) for a in listed] == [("prod", 2), ("staging", 2)]
    assert VersionAlias.objects.filter(agent=calc).count() == 2


def test_put_of_the_version_an_alias_names_changes_nothing(
    owner_client: APIClient, calc: Agent
) -> None:
    first = put(owner_client, calc, "prod", 1).json()

    again = put(owner_client, calc, "prod", 1)

    assert again.status_code == 200
    assert again.json() == first
    assert history(owner_client, calc) == [("prod", None, 1, "owner")]


def test_names_ignore_case_and_keep_their_first_spelling(
    owner_client: APIClient, calc: Agent
) -> None:
    put(owner_client, calc, "Prod", 1)

    moved = put(owner_client, calc, "PROD", 2)
    resolved = owner_client.get(f"/v1/agents/{calc.pk}/versions/prod")

    assert moved.json()["name"] == "Prod"
    assert [a["name"] for a in owner_client.get(url(calc)).json()["aliases"]] == ["Prod"]
    assert resolved.json()["version"]["number"] == 2


def test_delete_removes_the_alias_and_it_no_longer_resolves(
    owner_client: APIClient, calc: Agent
) -> None:
    put(owner_client, calc, "prod", 1)

    deleted = owner_client.delete(url(calc, "prod"))

    assert deleted.status_code == 204
    assert deleted.content == b""
    assert owner_client.get(url(calc)).json() == {"aliases": []}
    by_alias = owner_client.get(f"/v1/agents/{calc.pk}/versions/prod")
    assert by_alias.status_code == 404
    assert by_alias.json() == {"detail": "Alias 'prod' of agent 'calc' not found."}
    invoked = owner_client.post(f"/v1/agents/{calc.pk}/versions/prod/invoke", ASK, format="json")
    assert invoked.status_code == 404
    assert not Run.objects.exists()
    again = owner_client.delete(url(calc, "prod"))
    assert again.status_code == 404
    assert isinstance(again.json()["detail"], str)


@pytest.mark.parametrize(
    "name",
    [
        "latest",
        "LATEST",
        "History",
        "1prod",
        "-prod",
        "_prod",
        "prod.1",
        "pro d",
        "prød",
        "p" * 51,
        "deadbeefdeadbeefdeadbeefdeadbeef",
        "abcdef12-3456-7890-abcd-ef1234567890",
    ],
)
def test_reserved_and_malformed_names_are_refused_at_the_path(
    owner_client: APIClient, calc: Agent, name: str
) -> None:
    assert_invalid(put(owner_client, calc, name, 1), ["path", "name"])
    assert_invalid(owner_client.delete(url(calc, name)), ["path", "name"])
    assert not VersionAlias.objects.exists()
    assert not AliasChange.objects.exists()


def test_the_history_route_only_reads_and_says_so(owner_client: APIClient, calc: Agent) -> None:
    """`history` is the route's own name: a write there is a 405, and OPTIONS and `Allow`
    name what the document does (it advertised PUT and DELETE, documented nowhere)."""
    options = owner_client.options(url(calc, "history"))
    written = [owner_client.put(url(calc, "history"), {"version": 1}, format="json")]
    written.append(owner_client.delete(url(calc, "history")))

    assert options.status_code == 200
    assert options["Allow"] == "GET, HEAD, OPTIONS"
    for answer in written:
        assert answer.status_code == 405
        assert answer["Allow"] == "GET, HEAD, OPTIONS"
    assert not VersionAlias.objects.exists()
    assert not AliasChange.objects.exists()


def test_the_longest_name_is_50_characters(owner_client: APIClient, calc: Agent) -> None:
    name = "p" + "-_9" * 16 + "z"

    assert put(owner_client, calc, name, 1).json()["name"] == name


@pytest.mark.parametrize(
    "body",
    [{"version": 3}, {"version": 2**31 - 1}, {}, {"version": 0}, {"version": "two"}],
    ids=["unknown", "largest", "absent", "zero", "text"],
)
def test_a_missing_version_is_refused_at_body_version(
    owner_client: APIClient, calc: Agent, body: dict[str, Any]
) -> None:
    refused = owner_client.put(url(calc, "prod"), body, format="json")

    assert_invalid(refused, ["body", "version"])
    assert not VersionAlias.objects.exists()


def test_a_version_of_another_agent_is_not_a_version_of_this_one(
    owner_client: APIClient, calc: Agent, make_agent: Any
) -> None:
    other = make_agent("other")
    put(owner_client, calc, "prod", 2)

    refused = put(owner_client, other, "prod", 2)
    elsewhere = owner_client.get(f"/v1/agents/{other.pk}/versions/prod")

    assert_invalid(refused, ["body", "version"])
    assert elsewhere.status_code == 404


# ---------------------------------------------------------------- history


def test_history_keeps_who_when_from_and_to_of_every_change_deletes_included(
    owner: Any, owner_client: APIClient, calc: Agent, env: Any
) -> None:
    editor = UserFactory(username="editor")
    grant(editor, Action.READ, env)
    grant(editor, Action.EDIT, env)
    put(owner_client, calc, "prod", 1)
    put(owner_client, calc, "staging", 2)
    put(client_for(editor), calc, "prod", 2)
    client_for(editor).delete(url(calc, "prod"))

    got = owner_client.get(url(calc, "history"))

    assert history(owner_client, calc) == [
        ("prod", 2, None, "editor"),
        ("prod", 1, 2, "editor"),
        ("staging", None, 2, "owner"),
        ("prod", None, 1, "owner"),
    ]
    times = [c["changedAt"] for c in got.json()["changes"]]
    assert times == sorted(times, reverse=True)
    assert got.json()["pagination"] == {
        "totalItems": 4,
        "offset": 0,
        "limit": 50,
        "hasMore": False,
    }
    assert history(owner_client, calc, name="PROD", limit=2) == [
        ("prod", 2, None, "editor"),
        ("prod", 1, 2, "editor"),
    ]


def test_history_rows_are_never_rewritten(owner: Any, owner_client: APIClient, calc: Agent) -> None:
    put(owner_client, calc, "prod", 1)
    change = AliasChange.objects.get()

    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        AliasChange.objects.filter(pk=change.pk).update(to_version=calc.versions.get(number=2))

    # Deleting the user who made a change keeps the change, without its author.
    owner.delete()
    assert history(client_for(UserFactory(username="root2", is_superuser=True)), calc) == [
        ("prod", None, 1, None)
    ]


# ---------------------------------------------------------------- resolution

ROUTES = [
    ("invoke", "tool", ASK),
    ("invoke-stream", "tool", ASK),
    ("respond", "tool", ASK),
    (
        "process",
        "tool",
        {
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "text", "text": "3x5?"}]}
            ],
            "stream": False,
        },
    ),
    ("chat/completions", "tool", ASK),
    ("chat/completions", "tool", {**ASK, "stream": True}),
    ("invoke-task", "task", INPUTS),
    ("invoke-task-stream", "task", INPUTS),
]


@pytest.mark.parametrize(
    ("route", "agent_type", "body"),
    ROUTES,
    ids=[f"{r}{'-stream' if b.get('stream') else ''}" for r, _, b in ROUTES],
)
def test_every_version_route_resolves_an_alias_and_the_run_records_the_version(
    owner_client: APIClient,
    make_agent: Any,
    admin_user: Any,
    route: str,
    agent_type: str,
    body: dict[str, Any],
) -> None:
    agent = make_agent("aliased", agent_type)
    version_add(user=admin_user, agent=agent, config=None)
    put(owner_client, agent, "prod", 1)

    answer = finished(
        owner_client.post(f"/v1/agents/{agent.pk}/versions/prod/{route}", body, format="json")
    )

    run = Run.objects.get(pk=answer["X-Run-Id"])
    assert (run.agent_id, run.version.number) == (agent.pk, 1)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/openai/chat/completions"])
def test_chat_completions_model_names_an_alias(
    owner_client: APIClient, calc: Agent, path: str
) -> None:
    put(owner_client, calc, "prod", 1)

    answer = owner_client.post(path, {"model": "CALC@Prod", **ASK}, format="json")

    assert answer.status_code == 200, answer.json()
    assert answer.json()["model"] == "calc@1"
    assert Run.objects.get(pk=answer["X-Run-Id"]).version.number == 1
    missing = owner_client.post(path, {"model": "calc@canary", **ASK}, format="json")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"


def test_version_detail_answers_the_version_an_alias_names(
    owner_client: APIClient, calc: Agent
) -> None:
    put(owner_client, calc, "prod", 1)

    got = owner_client.get(f"/v1/agents/{calc.pk}/versions/prod")

    assert got.status_code == 200
    assert got.json()["version"]["id"] == str(calc.versions.get(number=1).pk)
    assert got.json()["agent"]["currentVersionId"] == str(calc.versions.get(number=2).pk)


def test_an_earlier_run_keeps_the_version_its_alias_named_then(
    owner_client: APIClient, calc: Agent
) -> None:
    invoke = f"/v1/agents/{calc.pk}/versions/prod/invoke"
    put(owner_client, calc, "prod", 1)
    before = owner_client.post(invoke, ASK, format="json")["X-Run-Id"]

    put(owner_client, calc, "prod", 2)
    after = owner_client.post(invoke, ASK, format="json")["X-Run-Id"]

    assert owner_client.get(f"/v1/runs/{before}").json()["versionId"] == str(
        calc.versions.get(number=1).pk
    )
    assert owner_client.get(f"/v1/runs/{after}").json()["versionId"] == str(
        calc.versions.get(number=2).pk
    )


def test_an_alias_of_one_agent_names_nothing_of_another(
    owner_client: APIClient, calc: Agent, make_agent: Any
) -> None:
    other = make_agent("other")
    put(owner_client, calc, "prod", 1)

    assert owner_client.get(f"/v1/agents/{other.pk}/versions/prod").status_code == 404


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [("latest", None), ("7", 7), ("prod", "prod"), ("Canary-2_b", "Canary-2_b")],
)
def test_a_version_ref_may_be_an_alias_name(ref: str, parsed: Any) -> None:
    # The playground locates a bad version at ["body", "version"] through this parse.
    assert version_ref_parse(ref) == parsed


@pytest.mark.parametrize("ref", ["2x", "History", "LATEST", "pro d", "p" * 51])
def test_a_version_ref_that_is_no_alias_name_is_invalid(ref: str) -> None:
    with pytest.raises(Invalid) as refused:
        version_ref_parse(ref)
    assert refused.value.errors[0].loc == ("path", "versionId")


# ---------------------------------------------------------------- permissions


def test_read_lists_and_reads_the_history_but_may_not_change(
    owner_client: APIClient, calc: Agent
) -> None:
    put(owner_client, calc, "prod", 1)
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, calc)
    client = client_for(reader)

    assert client.get(url(calc)).status_code == 200
    assert client.get(url(calc, "history")).status_code == 200
    assert put(client, calc, "prod", 2).status_code == 403
    assert put(client, calc, "canary", 1).status_code == 403
    assert client.delete(url(calc, "prod")).status_code == 403
    assert VersionAlias.objects.get().version.number == 1
    assert AliasChange.objects.count() == 1


def test_edit_with_read_changes_aliases(calc: Agent) -> None:
    editor = UserFactory(username="editor")
    grant(editor, Action.READ, calc)
    grant(editor, Action.EDIT, calc)
    client = client_for(editor)

    assert put(client, calc, "prod", 1).json()["updatedBy"] == "editor"
    assert client.delete(url(calc, "prod")).status_code == 204


@pytest.mark.parametrize("grants", [(), (Action.EDIT,), (Action.INVOKE,)], ids=str)
def test_a_caller_who_may_not_read_the_agent_gets_404(
    owner_client: APIClient, calc: Agent, grants: tuple[Action, ...]
) -> None:
    put(owner_client, calc, "prod", 1)
    outsider = UserFactory(username="outsider")
    for action in grants:
        grant(outsider, action, calc)
    client = client_for(outsider)

    for response in (
        client.get(url(calc)),
        client.get(url(calc, "history")),
        put(client, calc, "prod", 2),
        client.delete(url(calc, "prod")),
        client.get(f"/v1/agents/{calc.pk}/versions/prod"),
    ):
        assert response.status_code == 404
        assert isinstance(response.json()["detail"], str)
    assert VersionAlias.objects.get().version.number == 1


def test_invoke_alone_invokes_by_alias(owner_client: APIClient, calc: Agent) -> None:
    put(owner_client, calc, "prod", 1)
    service = UserFactory(username="service")
    grant(service, Action.INVOKE, calc)

    answer = client_for(service).post(
        f"/v1/agents/{calc.pk}/versions/prod/invoke", ASK, format="json"
    )

    assert answer.status_code == 200
    assert Run.objects.get(pk=answer["X-Run-Id"]).version.number == 1


def test_aliases_of_a_deleted_agent_are_gone_with_it(owner_client: APIClient, calc: Agent) -> None:
    put(owner_client, calc, "prod", 1)
    owner_client.delete(f"/v1/agents/{calc.pk}")

    assert owner_client.get(url(calc)).status_code == 404
    assert put(owner_client, calc, "prod", 2).status_code == 404
