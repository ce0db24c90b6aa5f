"""Bad input on every route of docs/api.md up to #configs: each answer is JSON as #errors has it,
never a 500, and a refused write leaves no row behind."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import jwt
import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings
from rest_framework.test import APIClient

from agents.access.api_clients import api_client_create
from agents.access.permissions import Action
from agents.models import Agent, AgentVersion
from tests.conftest import client_for
from tests.factories import CALCULATOR_CONFIG, TASK_CONFIG, UserFactory

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    body: Callable[[Agent], dict[str, Any]] | None = None  # a valid body: the route takes one
    pages: bool = False
    auth: bool = True

    def __str__(self) -> str:
        return f"{self.method.upper()} {self.path}"

    def url(self, agent_id: Any, version: str = "1") -> str:
        return self.path.format(agentId=agent_id, versionId=version)


ROUTES = [
    Route(
        "post",
        "/v1/auth/token",
        lambda a: {"grant_type": "password", "username": "owner", "password": "pw"},
        auth=False,
    ),
    Route("get", "/v1/environments", pages=True),
    Route("get", "/v1/agents/types", pages=True),
    Route("get", "/v1/agents", pages=True),
    Route(
        "post",
        "/v1/agents",
        lambda a: {"name": "fresh", "agentType": "tool", "config": CALCULATOR_CONFIG},
    ),
    Route("get", "/v1/agents/{agentId}"),
    Route("patch", "/v1/agents/{agentId}", lambda a: {"description": "new"}),
    Route("delete", "/v1/agents/{agentId}"),
    Route("get", "/v1/agents/{agentId}/versions", pages=True),
    Route("post", "/v1/agents/{agentId}/versions", lambda a: {"notes": "again"}),
    Route("get", "/v1/agents/{agentId}/versions/{versionId}"),
    Route("post", "/v1/agents/lookup", lambda a: {"name": "calc"}),
    Route("post", "/v1/agents/versions/batch-get", lambda a: {"agentIds": [str(a.pk)]}),
    Route("get", "/v1/models", pages=True),
    Route("get", "/v1/guardrails", pages=True),
]
BODY_ROUTES = [r for r in ROUTES if r.body]
AGENT_ROUTES = [r for r in ROUTES if "{agentId}" in r.path]
LIST_ROUTES = [r for r in ROUTES if r.pages]
PROTECTED_ROUTES = [r for r in ROUTES if r.auth]
VERSION_ROUTE = next(r for r in ROUTES if "{versionId}" in r.path)


def route_named(name: str) -> Route:
    return next(r for r in ROUTES if str(r) == name)


TOKEN = route_named("POST /v1/auth/token")
AGENT_LIST = route_named("GET /v1/agents")
CREATE = route_named("POST /v1/agents")
PATCH = route_named("PATCH /v1/agents/{agentId}")
ADD_VERSION = route_named("POST /v1/agents/{agentId}/versions")
LOOKUP = route_named("POST /v1/agents/lookup")
BATCH = route_named("POST /v1/agents/versions/batch-get")

TOOL = {"name": "n", "agentType": "tool", "config": CALCULATOR_CONFIG}
BAD_FUNCTION = {"toolType": "function", "name": "m", "description": "d", "funcName": "nope"}


def routes(selection: list[Route]) -> Any:
    return pytest.mark.parametrize("route", selection, ids=str)


def rows() -> tuple[list[Any], list[Any]]:
    """Every agent and version as stored: a failed request must leave this unchanged."""
    agents = Agent.objects.values_list(
        "id", "name", "display_name", "description", "modified_at", "deleted_at"
    )
    versions = AgentVersion.objects.values_list("id", "agent_id", "number", "version_label")
    return sorted(agents), sorted(versions)


@dataclass
class World:
    client: APIClient
    agent: Agent
    before: tuple[list[Any], list[Any]]

    def send(
        self,
        route: Route,
        data: bytes | str = b"",
        content_type: str = JSON,
        url: str | None = None,
        **extra: Any,
    ) -> Any:
        target = url or route.url(self.agent.pk)
        return self.client.generic(route.method.upper(), target, data, content_type, **extra)

    def send_json(self, route: Route, body: Any, **extra: Any) -> Any:
        return self.send(route, json.dumps(body), **extra)

    def assert_unchanged(self) -> None:
        assert rows() == self.before


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    cache.clear()  # throttle history lives in the cache and would leak between tests


@pytest.fixture
def world(owner: Any, make_agent: Callable[..., Agent]) -> World:
    agent = make_agent()
    return World(client=client_for(owner), agent=agent, before=rows())


def assert_error(response: Any, status: int, loc: list[Any] | None = None) -> Any:
    """docs/api.md#errors: JSON with `detail`, a list of located errors for a 400."""
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith(JSON)
    detail = response.json()["detail"]
    if loc is None:
        assert isinstance(detail, str)
        assert detail
    else:
        assert isinstance(detail, list)
        assert all(set(item) == {"loc", "msg", "type"} for item in detail), detail
        assert loc in [item["loc"] for item in detail], detail
    return detail


# ---------------------------------------------------------------- the table itself


@routes(ROUTES)
def test_valid_request_is_accepted(world: World, route: Route) -> None:
    body = route.body(world.agent) if route.body else None
    response = world.send_json(route, body) if body else world.send(route)
    assert response.status_code in (200, 201), response.content[:500]


# ---------------------------------------------------------------- bodies

NOT_JSON = [b"{", b"{'name': 'calc'}", b'{"name": "calc",}', b"NaN", b"\xff\xfe{}", b"1" * 5000]


@routes(BODY_ROUTES)
@pytest.mark.parametrize("raw", NOT_JSON, ids=lambda raw: repr(raw[:12]))
def test_body_that_is_not_json_is_400(world: World, route: Route, raw: bytes) -> None:
    detail = assert_error(world.send(route, raw), 400, ["body"])
    assert detail[0]["type"] == "json_invalid"
    world.assert_unchanged()


@routes(BODY_ROUTES)
@pytest.mark.parametrize("value", [[], "a string", 42, None, True, "[valid body]"], ids=repr)
def test_json_that_is_not_an_object_is_400(world: World, route: Route, value: Any) -> None:
    if value == "[valid body]":
        value = [route.body(world.agent)]  # type: ignore[misc]
    assert_error(world.send_json(route, value), 400, ["body"])
    world.assert_unchanged()


@routes(BODY_ROUTES)
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/xml", "multipart/form-data; boundary=x"]
)
def test_wrong_content_type_is_415(world: World, route: Route, content_type: str) -> None:
    raw = json.dumps(route.body(world.agent))  # type: ignore[misc]
    assert_error(world.send(route, raw, content_type), 415)
    world.assert_unchanged()


@routes([r for r in BODY_ROUTES if r.auth])
def test_form_body_is_415_outside_the_token_endpoint(world: World, route: Route) -> None:
    assert_error(world.send(route, urlencode(route.body(world.agent)), FORM), 415)  # type: ignore[misc]
    world.assert_unchanged()


def _padded(route: Route, agent: Agent, size: int) -> bytes:
    """A valid body made exactly `size` bytes long with trailing whitespace."""
    raw = json.dumps(route.body(agent)).encode()  # type: ignore[misc]
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


@routes(BODY_ROUTES)
def test_body_over_the_size_limit_is_413(world: World, route: Route) -> None:
    with override_settings(API_MAX_BODY_BYTES=400):
        assert_error(world.send(route, _padded(route, world.agent, 401)), 413)
    world.assert_unchanged()


@routes(BODY_ROUTES)
def test_body_at_the_size_limit_is_accepted(world: World, route: Route) -> None:
    with override_settings(API_MAX_BODY_BYTES=400):
        response = world.send(route, _padded(route, world.agent, 400))
    assert response.status_code in (200, 201), response.content[:500]


@routes(BODY_ROUTES)
def test_declared_length_over_the_default_limit_is_413(world: World, route: Route) -> None:
    declared = str(settings.API_MAX_BODY_BYTES + 1)
    assert_error(world.send(route, b"{}", CONTENT_LENGTH=declared), 413)
    world.assert_unchanged()


@routes(BODY_ROUTES)
def test_declared_length_over_a_configured_limit_is_413(world: World, route: Route) -> None:
    # settings.py ties Django's own limit to ours; a deployment changes both together.
    with override_settings(API_MAX_BODY_BYTES=64, DATA_UPLOAD_MAX_MEMORY_SIZE=64):
        assert_error(world.send(route, b"{}", CONTENT_LENGTH="65"), 413)
    world.assert_unchanged()


def test_form_body_over_the_size_limit_is_413(world: World) -> None:
    form = urlencode({"grant_type": "password", "username": "owner", "password": "p" * 400})
    with override_settings(API_MAX_BODY_BYTES=400):
        assert_error(world.send(TOKEN, form, FORM), 413)


def test_form_with_too_many_fields_is_400(world: World) -> None:
    form = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    assert_error(world.send(TOKEN, form, FORM), 400, ["body"])


def _deep_task(levels: int) -> dict[str, Any]:
    """A task agent whose input schema has an object property `levels` objects deep."""
    deep: dict[str, Any] = {"type": "object", "properties": {}}
    inner = deep
    for _ in range(levels):
        inner["properties"]["a"] = {"type": "object", "properties": {}}
        inner = inner["properties"]["a"]
    schema = TASK_CONFIG["inputSchema"]
    schema = {**schema, "properties": {**schema["properties"], "deep": deep}}
    return {"name": "deep", "agentType": "task", "config": {**TASK_CONFIG, "inputSchema": schema}}


@routes(BODY_ROUTES)
@pytest.mark.parametrize("depth", [101, 100_000])
def test_json_nested_too_deeply_is_400(world: World, route: Route, depth: int) -> None:
    raw = b"[" * depth + b"]" * depth
    detail = assert_error(world.send(route, raw), 400, ["body"])
    assert detail[0]["type"] == "json_invalid"
    world.assert_unchanged()


def test_deep_json_schema_in_a_config_is_400_not_a_recursion_error(world: World) -> None:
    assert_error(world.send_json(CREATE, _deep_task(100)), 400, ["body"])
    world.assert_unchanged()


def test_json_schema_nested_within_the_limit_is_accepted(world: World) -> None:
    response = world.send_json(CREATE, _deep_task(45))
    assert response.status_code == 201, response.content[:500]


@routes(BODY_ROUTES)
def test_nul_character_in_a_body_is_400(world: World, route: Route) -> None:
    body = {**route.body(world.agent), "description": "a\x00b"}  # type: ignore[misc]
    assert_error(world.send_json(route, body), 400, ["body", "description"])
    world.assert_unchanged()


@pytest.mark.parametrize(
    ("config", "loc"),
    [
        ({**CALCULATOR_CONFIG, "systemPrompt": "\x00"}, ["body", "config", "systemPrompt"]),
        ({**CALCULATOR_CONFIG, "guardrails": ["ok", "n\x00"]}, ["body", "config", "guardrails", 1]),
        ({**CALCULATOR_CONFIG, "k\x00y": 1}, ["body", "config"]),
    ],
    ids=["value", "list-item", "key"],
)
def test_nul_character_deep_in_a_body_is_located(world: World, config: Any, loc: Any) -> None:
    assert_error(world.send_json(CREATE, {**TOOL, "config": config}), 400, loc)
    world.assert_unchanged()


def test_json_nested_at_the_depth_limit_reaches_validation(world: World) -> None:
    raw = b'{"name": "calc", "extra": ' + b"[" * 99 + b"]" * 99 + b"}"
    detail = assert_error(world.send(LOOKUP, raw), 400, ["body", "extra"])
    assert detail[0]["type"] == "extra_forbidden"


def test_nul_character_in_a_form_is_400(world: World) -> None:
    form = urlencode({"grant_type": "password", "username": "own\x00er", "password": "pw"})
    assert_error(world.send(TOKEN, form, FORM), 400, ["body", "username"])


# ---------------------------------------------------------------- bodies, route by route


@pytest.mark.parametrize(
    ("route", "body", "status", "loc"),
    [
        (CREATE, {"agentType": "tool", "config": CALCULATOR_CONFIG}, 400, ["body", "name"]),
        (CREATE, {**TOOL, "name": "bad name!"}, 400, ["body", "name"]),
        (CREATE, {**TOOL, "name": "x" * 101}, 400, ["body", "name"]),
        (CREATE, {**TOOL, "description": "d" * 201}, 400, ["body", "description"]),
        (CREATE, {**TOOL, "agentType": "robot"}, 400, ["body", "agentType"]),
        (CREATE, {**TOOL, "config": "nope"}, 400, ["body", "config"]),
        (
            CREATE,
            {**TOOL, "config": {"llmModelId": "local.demo-v1"}},
            400,
            ["body", "config", "tools"],
        ),
        (
            CREATE,
            {**TOOL, "config": {**CALCULATOR_CONFIG, "tools": [BAD_FUNCTION]}},
            400,
            ["body", "config", "tools", 0, "funcName"],
        ),
        (CREATE, {**TOOL, "colour": "red"}, 400, ["body", "colour"]),
        (CREATE, {**TOOL, "name": "CALC"}, 409, None),
        (PATCH, {"name": "bad name!"}, 400, ["body", "name"]),
        (PATCH, {"name": 5}, 400, ["body", "name"]),
        (PATCH, {"description": "d" * 201}, 400, ["body", "description"]),
        (PATCH, {"id": str(uuid.uuid4())}, 400, ["body", "id"]),
        (PATCH, {"name": "taken"}, 409, None),
        (ADD_VERSION, {"config": []}, 400, ["body", "config"]),
        (
            ADD_VERSION,
            {"config": {**CALCULATOR_CONFIG, "llmModelId": "nope"}},
            400,
            ["body", "config", "llmModelId"],
        ),
        (ADD_VERSION, {"versionLabel": "v" * 101}, 400, ["body", "versionLabel"]),
        (ADD_VERSION, {"notes": 7}, 400, ["body", "notes"]),
        (LOOKUP, {}, 400, ["body", "name"]),
        (LOOKUP, {"name": ""}, 400, ["body", "name"]),
        (LOOKUP, {"name": "ghost"}, 404, None),
        (LOOKUP, {"name": "calc", "versionLabel": "nope"}, 404, None),
        (BATCH, {}, 400, ["body", "agentIds"]),
        (BATCH, {"agentIds": []}, 400, ["body", "agentIds"]),
        (BATCH, {"agentIds": "abc"}, 400, ["body", "agentIds"]),
        (BATCH, {"agentIds": [str(uuid.uuid4()) for _ in range(101)]}, 400, ["body", "agentIds"]),
        (BATCH, {"agentIds": [1]}, 400, ["body", "agentIds", 0]),
    ],
)
def test_bad_body_is_refused_and_writes_nothing(
    world: World, make_agent: Callable[..., Agent], route: Route, body: Any, status: int, loc: Any
) -> None:
    if body.get("name") == "taken":
        make_agent(name="taken")
        world.before = rows()
    assert_error(world.send_json(route, body), status, loc)
    world.assert_unchanged()


def test_patch_without_a_name_is_accepted(world: World) -> None:
    response = world.send_json(PATCH, {"description": "new"})
    assert response.status_code == 200, response.content
    assert response.json()["description"] == "new"


def test_duplicate_version_label_is_409_and_adds_no_version(world: World) -> None:
    assert world.send_json(ADD_VERSION, {"versionLabel": "v2"}).status_code == 201
    world.before = rows()
    assert_error(world.send_json(ADD_VERSION, {"versionLabel": "v2"}), 409)
    world.assert_unchanged()


def test_batch_get_reports_bad_and_unknown_ids_per_item(world: World) -> None:
    unknown = str(uuid.uuid4())
    response = world.send_json(BATCH, {"agentIds": ["abc", unknown, str(world.agent.pk)]})
    assert response.status_code == 200
    answer = response.json()
    assert [a["agent"]["id"] for a in answer["agents"]] == [str(world.agent.pk)]
    assert [(e["agentId"], e["status"]) for e in answer["errors"]] == [("abc", 400), (unknown, 404)]


# ---------------------------------------------------------------- path parameters


@routes(AGENT_ROUTES)
def test_unknown_agent_is_404(world: World, route: Route) -> None:
    body = json.dumps(route.body(world.agent)) if route.body else b""
    assert_error(world.send(route, body, url=route.url(uuid.uuid4())), 404)
    world.assert_unchanged()


@routes(AGENT_ROUTES)
@pytest.mark.parametrize("agent_id", ["abc", "123", "%00", "not-a-uuid-at-all-0000000000000000"])
def test_bad_agent_id_is_400(world: World, route: Route, agent_id: str) -> None:
    body = json.dumps(route.body(world.agent)) if route.body else b""
    response = world.send(route, body, url=route.url(agent_id))
    assert_error(response, 400, ["path", "agentId"])
    world.assert_unchanged()


@pytest.mark.parametrize("version", ["999", "2147483647", "a-random-uuid", "no-such-alias"])
def test_unknown_version_is_404(world: World, version: str) -> None:
    if version == "a-random-uuid":
        version = str(uuid.uuid4())
    url = VERSION_ROUTE.url(world.agent.pk, version)
    assert_error(world.send(VERSION_ROUTE, url=url), 404)


@pytest.mark.parametrize(
    "version",
    ["0", "-1", "2x", "1.5", "9" * 40, "2147483648", "LATEST", "history", "1e3", "0x1", "%20"],
)
def test_bad_version_ref_is_400(world: World, version: str) -> None:
    url = VERSION_ROUTE.url(world.agent.pk, version)
    assert_error(world.send(VERSION_ROUTE, url=url), 400, ["path", "versionId"])


def test_non_ascii_digit_version_ref_is_400(world: World) -> None:
    world.client.raise_request_exception = False
    url = VERSION_ROUTE.url(world.agent.pk, "%C2%B2")
    assert_error(world.send(VERSION_ROUTE, url=url), 400, ["path", "versionId"])


# ---------------------------------------------------------------- query parameters

BAD_PAGES = [
    ("offset", "-1"),
    ("offset", "1000001"),
    ("offset", "9" * 40),
    ("offset", "9" * 5000),
    ("offset", "abc"),
    ("offset", "1.5"),
    ("limit", "0"),
    ("limit", "-1"),
    ("limit", "101"),
    ("limit", "9" * 40),
    ("limit", "abc"),
    ("limit", "2.5"),
]


@routes(LIST_ROUTES)
@pytest.mark.parametrize(("param", "value"), BAD_PAGES, ids=lambda v: v[:12])
def test_bad_offset_or_limit_is_400(world: World, route: Route, param: str, value: str) -> None:
    url = f"{route.url(world.agent.pk)}?{urlencode({param: value})}"
    assert_error(world.send(route, url=url), 400, ["query", param])


@routes(LIST_ROUTES)
def test_largest_offset_and_limit_are_accepted(world: World, route: Route) -> None:
    url = f"{route.url(world.agent.pk)}?offset=1000000&limit=100"
    response = world.send(route, url=url)
    assert response.status_code == 200
    assert response.json()["pagination"]["offset"] == 1_000_000


@routes(LIST_ROUTES)
def test_empty_query_values_mean_the_defaults(world: World, route: Route) -> None:
    # The list URL `?offset=0&limit=50&agentType=&name=` (docs/api.md#pagination): empty is
    # "not given".
    url = f"{route.url(world.agent.pk)}?offset=&limit=&agentType=&name="
    response = world.send(route, url=url)
    assert response.status_code == 200, response.content
    assert response.json()["pagination"] | {"totalItems": 0, "hasMore": False} == {
        "offset": 0,
        "limit": 50,
        "totalItems": 0,
        "hasMore": False,
    }


@pytest.mark.parametrize("path", ["/v1/agents", "/v1/models"])
@pytest.mark.parametrize("agent_type", ["robot", "TOOL", "tool,rag"])
def test_unknown_agent_type_filter_is_400(world: World, path: str, agent_type: str) -> None:
    response = world.client.get(path, {"agentType": agent_type})
    assert_error(response, 400, ["query", "agentType"])


def test_nul_character_in_a_query_is_400(world: World) -> None:
    world.client.raise_request_exception = False
    assert_error(world.client.get("/v1/agents", {"name": "a\x00"}), 400, ["query", "name"])


# ---------------------------------------------------------------- methods and paths


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("put", "/v1/agents"),
        ("delete", "/v1/agents"),
        ("patch", "/v1/agents/types"),
        ("put", "/v1/agents/{agentId}"),
        ("post", "/v1/agents/{agentId}"),
        ("delete", "/v1/agents/{agentId}/versions"),
        ("put", "/v1/agents/{agentId}/versions/1"),
        ("get", "/v1/agents/lookup"),
        ("get", "/v1/agents/versions/batch-get"),
        ("post", "/v1/models"),
        ("delete", "/v1/guardrails"),
        ("get", "/v1/auth/token"),
        ("put", "/v1/auth/token"),
    ],
)
def test_method_not_allowed_is_405(world: World, method: str, path: str) -> None:
    route = Route(method, path)
    assert_error(world.send(route, b"{}"), 405)
    assert world.send(route, b"{}")["Allow"]
    world.assert_unchanged()


@pytest.mark.parametrize(
    "path",
    ["/v1/nope", "/v1/", "/v1/agents/", "/v1/agents/{agentId}/versions/1/extra", "/v2/agents"],
)
@pytest.mark.parametrize("authenticated", [True, False])
def test_unknown_path_is_404_json(world: World, path: str, authenticated: bool) -> None:
    client = world.client if authenticated else APIClient()
    for method in ("get", "post"):
        assert_error(getattr(client, method)(path.format(agentId=world.agent.pk)), 404)


def test_disallowed_host_is_400_json(world: World) -> None:
    assert_error(world.client.get("/v1/agents", HTTP_HOST="evil.example"), 400)


# ---------------------------------------------------------------- authentication


def _signed(user: Any, **claims: Any) -> str:
    now = datetime.now(UTC)
    payload = {"iss": settings.JWT_ISSUER, "sub": str(user.pk), "iat": now}
    payload |= {"exp": now + timedelta(minutes=5), **claims}
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, settings.JWT_SIGNING_KEY, algorithm="HS256")


def _tampered(user: Any) -> str:
    header, payload, signature = _signed(user).split(".")
    forged = jwt.utils.base64url_encode(
        json.dumps({**json.loads(jwt.utils.base64url_decode(payload)), "sub": "1"}).encode()
    ).decode()
    return f"Bearer {header}.{forged}.{signature}"


BAD_AUTHORIZATION: dict[str, Callable[[Any], str | None]] = {
    "missing": lambda u: None,
    "empty": lambda u: "",
    "bearer-without-token": lambda u: "Bearer",
    "bearer-blank": lambda u: "Bearer    ",
    "basic": lambda u: "Basic b3duZXI6cHc=",
    "not-a-jwt": lambda u: "Bearer not-a-jwt",
    "two-tokens": lambda u: f"Bearer {_signed(u)} {_signed(u)}",
    "tampered": _tampered,
    "expired": lambda u: "Bearer " + _signed(u, exp=datetime.now(UTC) - timedelta(seconds=5)),
    "no-expiry": lambda u: "Bearer " + _signed(u, exp=None),
    "wrong-issuer": lambda u: "Bearer " + _signed(u, iss="someone-else"),
    "wrong-subject": lambda u: "Bearer " + _signed(u, sub="owner"),
    "wrong-key": lambda u: (
        "Bearer "
        + jwt.encode({"sub": str(u.pk), "iss": settings.JWT_ISSUER}, "k" * 32, algorithm="HS256")
    ),
    "alg-none": lambda u: (
        "Bearer "
        + jwt.encode({"sub": str(u.pk), "iss": settings.JWT_ISSUER}, None, algorithm="none")
    ),
    "unknown-user": lambda u: "Bearer " + _signed(u, sub=str(10**9)),
    "inactive-user": lambda u: "Bearer " + _signed(UserFactory(username="gone", is_active=False)),
}


# One authentication class serves every route: each route gets the common failures, two
# routes (a read and a write) every kind.
COMMON_FAILURES = ["missing", "bearer-without-token", "basic", "not-a-jwt", "tampered", "expired"]
EVERY_KIND = [(r, k) for r in (AGENT_LIST, PATCH) for k in BAD_AUTHORIZATION]
CASES = [(r, k) for r in PROTECTED_ROUTES for k in COMMON_FAILURES] + [
    (r, k) for r, k in EVERY_KIND if k not in COMMON_FAILURES
]


@pytest.mark.parametrize(("route", "kind"), CASES, ids=[f"{k}-{r}" for r, k in CASES])
def test_missing_or_bad_token_is_401(world: World, owner: Any, route: Route, kind: str) -> None:
    header = BAD_AUTHORIZATION[kind](owner)
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    world.client = client
    body = json.dumps(route.body(world.agent)) if route.body else b""
    response = world.send(route, body)
    assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    world.assert_unchanged()


# ---------------------------------------------------------------- the token endpoint


def _token_request(world: World, body: dict[str, Any], encoding: str) -> Any:
    if encoding == "form":
        return world.send(TOKEN, urlencode(body), FORM)
    return world.send_json(TOKEN, body)


@pytest.fixture
def api_client(env: Any) -> Any:
    return api_client_create(name="ci", environment=env, actions=[Action.READ])


@pytest.mark.parametrize("encoding", ["json", "form"])
@pytest.mark.parametrize("grant", ["password", "client_credentials"])
def test_token_endpoint_accepts_json_and_form(
    world: World, api_client: Any, encoding: str, grant: str
) -> None:
    if grant == "password":
        body = {"grant_type": "password", "username": "owner", "password": "pw"}
    else:
        body = {
            "grant_type": "client_credentials",
            "client_id": api_client.client.client_id,
            "client_secret": api_client.secret,
            "scope": "agents",
        }
    response = _token_request(world, body, encoding)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["token_type"] == "Bearer"
    assert answer["expires_in"] > 0
    caller = APIClient()
    caller.credentials(HTTP_AUTHORIZATION=f"Bearer {answer['access_token']}")
    assert caller.get("/v1/agents").status_code == 200


@pytest.mark.parametrize("encoding", ["json", "form"])
@pytest.mark.parametrize("grant_type", ["authorization_code", "refresh_token", "PASSWORD", ""])
def test_unsupported_grant_type_is_400(world: World, encoding: str, grant_type: str) -> None:
    body = {"grant_type": grant_type, "username": "owner", "password": "pw"}
    assert_error(_token_request(world, body, encoding), 400, ["body", "grant_type"])


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ["body", "grant_type"]),
        ({"grant_type": 1, "username": "owner", "password": "pw"}, ["body", "grant_type"]),
        ({"grant_type": "password"}, ["body", "username"]),
        ({"grant_type": "password", "username": "owner"}, ["body", "password"]),
        ({"grant_type": "password", "username": "", "password": "pw"}, ["body", "username"]),
        ({"grant_type": "client_credentials"}, ["body", "client_id"]),
        ({"grant_type": "client_credentials", "client_id": "abc"}, ["body", "client_secret"]),
        ({"grant_type": "password", "username": "u" * 151, "password": "pw"}, ["body", "username"]),
    ],
)
def test_missing_or_bad_token_fields_are_400(world: World, body: Any, loc: list[str]) -> None:
    assert_error(world.send_json(TOKEN, body), 400, loc)


@pytest.mark.parametrize("encoding", ["json", "form"])
@pytest.mark.parametrize(
    "credentials",
    [
        {"grant_type": "password", "username": "owner", "password": "wrong"},
        {"grant_type": "password", "username": "nobody", "password": "pw"},
        {"grant_type": "client_credentials", "client_id": "abc_0", "client_secret": "s"},
        {"grant_type": "client_credentials", "client_id": "known", "client_secret": "wrong"},
    ],
    ids=["wrong-password", "unknown-user", "unknown-client", "wrong-secret"],
)
def test_wrong_credentials_are_401(
    world: World, api_client: Any, encoding: str, credentials: dict[str, str]
) -> None:
    if credentials.get("client_id") == "known":
        credentials = {**credentials, "client_id": api_client.client.client_id}
    response = _token_request(world, credentials, encoding)
    assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "access_token" not in response.json()


# ---------------------------------------------------------------- throttling


def _assert_throttled(response: Any) -> None:
    assert_error(response, 429)
    assert 1 <= int(response["Retry-After"]) <= 61


def test_token_endpoint_is_throttled(world: World, rates: Callable[..., None]) -> None:
    rates(token="2/min")
    good = {"grant_type": "password", "username": "owner", "password": "pw"}
    assert world.send_json(TOKEN, good).status_code == 200
    assert world.send_json(TOKEN, {**good, "password": "wrong"}).status_code == 401
    response = world.send_json(TOKEN, good)
    _assert_throttled(response)
    assert "access_token" not in response.json()


def test_api_routes_are_throttled_per_user(
    world: World, stranger: Any, rates: Callable[..., None]
) -> None:
    rates(user="2/min")
    assert world.client.get("/v1/agents").status_code == 200
    assert world.client.get("/v1/models").status_code == 200
    _assert_throttled(world.client.get("/v1/agents"))
    assert client_for(stranger).get("/v1/agents").status_code == 200
