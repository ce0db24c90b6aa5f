"""A2A 1.0 in full (docs/api.md#a2a) through the `a2a-sdk` client, unmodified, against a live
uvicorn on 127.0.0.1: one card shape per dialect, ListTasks and its pages, the
push-notification config methods (-32003), the extended card, messageId and -32005, and
A2A_PUBLIC_CARDS."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.compat.v0_3 import types as v03
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidParamsError,
)
from a2a.utils.proto_utils import validate_proto_required_fields
from django.test import override_settings
from google.protobuf.json_format import ParseDict
from rest_framework.test import APIClient

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR
from agents.models import Agent, Run
from agents.protocols.a2a.card import EXTENDED_URI
from agents.services.aliases import alias_set
from agents.services.versions import version_add
from tests.factories import UserFactory
from tests.live import django_port  # noqa: F401 (the fixture `port`)
from tests.support.a2a import ask, base, session, tok

LIVE = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def calculator(make_agent: Any) -> Agent:
    return make_agent("Calculator", "tool", config=CALCULATOR["config"])


def card_url(port: int, name: str = "calculator") -> str:
    return base(port, name) + "/.well-known/agent-card.json"


async def client_of(
    http: httpx.AsyncClient, port: int, version: str, name: str = "calculator"
) -> Client:
    """The SDK's client through the card's interface of protocol `version`."""
    card = await A2ACardResolver(http, base(port, name)).get_agent_card()
    kept = [i for i in card.supported_interfaces if i.protocol_version == version]
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)


async def send(port: int, token: str, count: int, context_id: str = "") -> list[str]:
    """`count` tasks sent one after another; their ids, in order."""
    ids = []
    async with session(token) as http:
        a2a = await client_of(http, port, "1.0")
        for index in range(count):
            message = ask(context_id=context_id)
            message.message_id = f"m-{index}"
            [update] = [u async for u in a2a.send_message(pb.SendMessageRequest(message=message))]
            assert update.task.status.state == pb.TASK_STATE_COMPLETED
            ids.append(update.task.id)
    return ids


async def list_all(
    port: int, token: str, **query: Any
) -> tuple[list[pb.ListTasksResponse], list[str]]:
    """Every page of ListTasks with `query`, following nextPageToken."""
    pages: list[pb.ListTasksResponse] = []
    async with session(token) as http:
        a2a = await client_of(http, port, "1.0")
        request = pb.ListTasksRequest(**query)
        while True:
            page = await a2a.list_tasks(request)
            pages.append(page)
            if not page.next_page_token:
                break
            request.page_token = page.next_page_token
    return pages, [task.id for page in pages for task in page.tasks]


# ---------------------------------------------------------------- one card shape per dialect


@LIVE
def test_the_card_has_the_shape_of_the_dialect_the_client_names(
    port: int, owner: Any, calculator: Agent
) -> None:
    auth = {"Authorization": f"Bearer {tok(owner)}"}

    url = card_url(port, "Calculator")  # as the list names it
    legacy = httpx.get(url, headers=auth)  # no A2A-Version: a 0.3 client
    assert legacy.headers["Vary"] == "A2A-Version"
    raw = legacy.json()
    # 0.3's JSON Schema shape, flat, nothing of 1.0's wrapper.
    assert raw["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "Bearer",
        "bearerFormat": "JWT",
        "description": "A token from POST /v1/auth/token, as on the REST API.",
    }
    oauth = raw["securitySchemes"]["oauth2"]
    assert oauth["type"] == "oauth2"
    flow = oauth["flows"]["authorizationCode"]
    assert flow["tokenUrl"] == f"http://127.0.0.1:{port}/oauth/token"
    assert set(flow["scopes"]) == {"agents:read", "agents:invoke"}
    assert raw["security"] == [{"bearer": []}, {"oauth2": ["agents:invoke"]}]
    assert raw["supportsAuthenticatedExtendedCard"] is True
    assert raw["capabilities"] == {"streaming": True, "pushNotifications": True}
    assert "securityRequirements" not in raw
    card03 = v03.AgentCard.model_validate(raw)  # what 0.3's specification requires
    assert (card03.url, card03.protocol_version) == (base(port, "Calculator"), "0.3")
    # 1.0's interfaces beside them, for a 1.0 client that names no version.
    assert [i["protocolVersion"] for i in raw["supportedInterfaces"]] == ["1.0", "0.3"]

    current = httpx.get(url, headers={**auth, "A2A-Version": "1.0"}).json()
    assert current["securitySchemes"]["bearer"] == {
        "httpAuthSecurityScheme": {
            "scheme": "Bearer",
            "bearerFormat": "JWT",
            "description": "A token from POST /v1/auth/token, as on the REST API.",
        }
    }
    flow = current["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"]
    assert flow["authorizationCode"]["pkceRequired"] is True
    # Strict: a field 1.0's proto does not have (0.3's url, security, type ...) fails here.
    card10 = ParseDict(current, pb.AgentCard())
    validate_proto_required_fields(card10)  # what 1.0's proto marks REQUIRED
    assert card10.capabilities.extended_agent_card
    assert card10.capabilities.push_notifications

    listed = httpx.get(f"http://127.0.0.1:{port}/v1/a2a", headers={**auth, "A2A-Version": "1.0"})
    assert listed.json()["agents"] == [current]
    listed = httpx.get(f"http://127.0.0.1:{port}/v1/a2a", headers=auth)
    assert listed.json()["agents"] == [raw]


@LIVE
@pytest.mark.parametrize("header", [None, "1.0", "0.3"])
def test_the_sdks_resolver_reads_either_card_and_talks_10(
    port: int, owner: Any, calculator: Agent, header: str | None
) -> None:
    token = tok(owner)  # here: the database is not for the event loop's thread

    async def go() -> tuple[pb.AgentCard, str]:
        async with session(token) as http:
            fetch = {"headers": {"A2A-Version": header}} if header else None
            resolver = A2ACardResolver(http, base(port, "calculator"))
            card = await resolver.get_agent_card(http_kwargs=fetch)
            a2a = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            [update] = [u async for u in a2a.send_message(pb.SendMessageRequest(message=ask()))]
            return card, update.task.id

    card, task_id = asyncio.run(go())
    bearer = card.security_schemes["bearer"].http_auth_security_scheme
    assert (bearer.scheme, bearer.bearer_format) == ("Bearer", "JWT")
    assert list(card.security_requirements[0].schemes) == ["bearer"]
    assert card.capabilities.extended_agent_card
    assert [i.protocol_version for i in card.supported_interfaces] == ["1.0", "0.3"]
    assert Run.objects.get(pk=task_id).status == "completed"


# ---------------------------------------------------------------- ListTasks


@LIVE
def test_list_tasks_pages_the_callers_tasks_newest_first(
    port: int, owner: Any, calculator: Agent
) -> None:
    alice, other = UserFactory(username="alice"), UserFactory(username="other")
    grant(alice, Action.INVOKE, calculator)
    grant(other, Action.INVOKE, calculator)
    mine = asyncio.run(send(port, tok(alice), 3)) + asyncio.run(
        send(port, tok(alice), 2, context_id="ctx-a")
    )
    theirs = asyncio.run(send(port, tok(other), 1))

    pages, listed = asyncio.run(list_all(port, tok(alice), page_size=2))
    assert listed == mine[::-1]  # newest first, each once
    assert [len(p.tasks) for p in pages] == [2, 2, 1]
    assert {(p.page_size, p.total_size) for p in pages} == {(2, 5)}
    assert all(not t.artifacts for p in pages for t in p.tasks)  # includeArtifacts: false
    assert {t.status.state for p in pages for t in p.tasks} == {pb.TASK_STATE_COMPLETED}

    _, in_context = asyncio.run(list_all(port, tok(alice), context_id="ctx-a"))
    assert in_context == mine[:2:-1]
    _, working = asyncio.run(list_all(port, tok(alice), status=pb.TASK_STATE_WORKING))
    assert working == []
    [page], _ = asyncio.run(list_all(port, tok(alice), include_artifacts=True, history_length=0))
    assert all(t.artifacts[0].parts[0].text for t in page.tasks)
    assert all(not t.history for t in page.tasks)
    assert page.page_size == 50  # the specification's default

    _, theirs_listed = asyncio.run(list_all(port, tok(other)))
    assert theirs_listed == theirs
    auditor = UserFactory(username="auditor")
    grant(auditor, Action.READ, calculator)  # AUDIT alone does not see the endpoint
    grant(auditor, Action.AUDIT, calculator)
    _, audited = asyncio.run(list_all(port, tok(auditor)))
    assert sorted(audited) == sorted(mine + theirs)


# ---------------------------------------------------------------- push config, extended card


@LIVE
@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_a_finished_task_takes_no_push_config_in_either_dialect(
    port: int, owner: Any, calculator: Agent, version: str
) -> None:
    """The configs kept and delivered: tests/agents/protocols/a2a/test_push.py."""
    token = tok(owner)  # here: the database is not for the event loop's thread
    [task_id] = asyncio.run(send(port, tok(owner), 1))
    config = pb.TaskPushNotificationConfig(task_id=task_id, url="https://example.invalid/hook")

    async def go() -> tuple[list[str], int]:
        refused = []
        async with session(token) as http:
            a2a = await client_of(http, port, version)
            listed = await a2a.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            calls = [
                (a2a.create_task_push_notification_config, config),
                (
                    a2a.get_task_push_notification_config,
                    pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id="c"),
                ),
                (
                    a2a.delete_task_push_notification_config,
                    pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="c"),
                ),
            ]
            for method, request in calls:
                with pytest.raises(A2AError) as caught:
                    await method(request)
                refused.append(str(caught.value))
        return refused, len(listed.configs)

    refused, listed = asyncio.run(go())
    assert listed == 0
    assert "no updates left to push" in refused[0]
    assert all("no push notification config 'c'" in message for message in refused[1:])


@LIVE
@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_the_extended_card_names_what_this_caller_may_call(
    port: int, owner: Any, calculator: Agent, version: str
) -> None:
    version_add(user=owner, agent=calculator, config=None)
    alias_set(user=owner, agent=calculator, name="prod", version_number=1)
    reader = UserFactory(username="reader")
    grant(reader, Action.READ, calculator)

    async def extended(token: str) -> pb.AgentCard:
        async with session(token) as http:
            a2a = await client_of(http, port, version)
            return await a2a.get_extended_agent_card(pb.GetExtendedAgentCardRequest())

    card = asyncio.run(extended(tok(owner)))
    assert card.name == "Calculator"
    [extension] = card.capabilities.extensions
    assert extension.uri == EXTENDED_URI
    view = dict(extension.params)
    assert view["canInvoke"] is True
    assert [(v["version"], v["url"]) for v in view["versions"]] == [
        (2, base(port, "Calculator@2")),
        (1, base(port, "Calculator@1")),
    ]
    assert [(a["name"], a["version"]) for a in view["aliases"]] == [("prod", 1)]
    # A reader sees the card, and that it may not call it.
    assert (
        dict(asyncio.run(extended(tok(reader))).capabilities.extensions[0].params)["canInvoke"]
        is False
    )


# ---------------------------------------------------------------- messageId, -32005


@LIVE
def test_a_send_without_message_id_or_with_a_file_part_is_refused_and_starts_no_run(
    port: int, owner: Any, calculator: Agent
) -> None:
    token = tok(owner)  # here: the database is not for the event loop's thread

    async def go(message: pb.Message) -> Exception:
        async with session(token) as http:
            a2a = await client_of(http, port, "1.0")
            try:
                async for _ in a2a.send_message(pb.SendMessageRequest(message=message)):
                    pass
            except Exception as exc:  # the refusal is what is looked at
                return exc
        raise AssertionError("the send was answered")

    nameless = ask()
    nameless.message_id = ""
    refused = asyncio.run(go(nameless))
    assert isinstance(refused, InvalidParamsError)
    assert refused.data is not None
    assert refused.data["path"] == ["params", "message", "messageId"]

    archive = ask()
    archive.parts.append(pb.Part(raw=b"PK\x03\x04", media_type="application/zip", filename="a.zip"))
    refused = asyncio.run(go(archive))
    assert isinstance(refused, ContentTypeNotSupportedError)
    assert refused.data is not None
    assert refused.data["path"] == ["params", "message", "parts", 1]
    assert not Run.objects.exists()


# ---------------------------------------------------------------- A2A_PUBLIC_CARDS


@LIVE
def test_public_cards_need_no_token_and_the_endpoint_still_does(
    port: int, owner: Any, calculator: Agent, make_agent: Any
) -> None:
    make_agent("hidden", "tool", config=CALCULATOR["config"])  # nobody was granted it
    root = f"http://127.0.0.1:{port}/v1/a2a"
    assert httpx.get(card_url(port)).status_code == 401
    assert httpx.get(root).status_code == 401

    with override_settings(A2A_PUBLIC_CARDS=True):
        card = httpx.get(card_url(port, "hidden"), headers={"A2A-Version": "1.0"})
        assert card.status_code == 200
        assert card.json()["name"] == "hidden"
        listed = httpx.get(root, headers={"X-Environment": "default"})
        assert [c["name"] for c in listed.json()["agents"]] == ["Calculator", "hidden"]
        assert httpx.get(card_url(port, "nobody")).status_code == 404
        assert httpx.get(root, headers={"X-Environment": "elsewhere"}).status_code == 404
        # A header no HTTP client of ours sends (they refuse a NUL), in process:
        nul = APIClient().get("/v1/a2a", HTTP_X_ENVIRONMENT="a\x00b")
        assert nul.status_code == 400
        assert nul.json()["detail"][0]["loc"] == ["header", "X-Environment"]
        resolved = asyncio.run(card_of_anonymous(port))
        assert resolved.name == "Calculator"
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
        assert httpx.post(base(port, "calculator"), json=rpc).status_code == 401

    assert httpx.get(card_url(port)).status_code == 401


async def card_of_anonymous(port: int) -> pb.AgentCard:
    async with session(None) as http:
        return await A2ACardResolver(http, base(port, "calculator")).get_agent_card()
