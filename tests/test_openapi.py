"""The OpenAPI document: valid without warnings, complete for docs/api.md up to #configs, and served
with a Swagger UI whose assets ship with the app."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from contextlib import redirect_stderr
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import include
from django.urls import path as route
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.test import APIClient

from agentbuilder.api import schema
from agentbuilder.api.schema import SchemaView
from agents.runtime import depth

SPEC_OPERATIONS = [
    ("post", "/v1/auth/token"),
    ("get", "/v1/environments"),
    ("post", "/v1/environments"),
    ("get", "/v1/agents/types"),
    ("get", "/v1/agents"),
    ("post", "/v1/agents"),
    ("get", "/v1/agents/{agentId}"),
    ("patch", "/v1/agents/{agentId}"),
    ("delete", "/v1/agents/{agentId}"),
    ("get", "/v1/agents/{agentId}/versions"),
    ("post", "/v1/agents/{agentId}/versions"),
    ("get", "/v1/agents/{agentId}/versions/{versionId}"),
    ("post", "/v1/agents/lookup"),
    ("get", "/v1/agents/{agentId}/aliases"),
    ("put", "/v1/agents/{agentId}/aliases/{name}"),
    ("delete", "/v1/agents/{agentId}/aliases/{name}"),
    ("get", "/v1/agents/{agentId}/aliases/history"),
    ("post", "/v1/agents/versions/batch-get"),
    ("get", "/v1/models"),
    ("get", "/v1/guardrails"),
    ("get", "/v1/runs"),
    ("get", "/v1/runs/{runId}"),
    ("get", "/v1/usage"),
    ("get", "/v1/threads/{threadId}"),
    ("get", "/v1/documents"),
    ("post", "/v1/documents"),
    ("get", "/v1/documents/{documentId}"),
    ("delete", "/v1/documents/{documentId}"),
    ("post", "/v1/search"),
    ("get", "/v1/mcp-servers"),
    ("post", "/v1/mcp-servers"),
    ("get", "/v1/mcp-servers/{serverId}"),
    ("patch", "/v1/mcp-servers/{serverId}"),
    ("delete", "/v1/mcp-servers/{serverId}"),
    ("get", "/v1/mcp-servers/{serverId}/tools"),
    ("post", "/v1/agents/{agentId}/versions/{versionId}/respond"),
    ("post", "/v1/agents/{agentId}/versions/{versionId}/invoke"),
    ("post", "/v1/agents/{agentId}/versions/{versionId}/invoke-task"),
]
WRITES = [(m, p) for m, p in SPEC_OPERATIONS if m in ("post", "put", "patch")]
PUBLIC = {("post", "/v1/auth/token")}


def operations(selection: list[tuple[str, str]]) -> Any:
    return pytest.mark.parametrize(
        ("method", "path"), selection, ids=[f"{m.upper()} {p}" for m, p in selection]
    )


@dataclass(frozen=True)
class Generated:
    document: dict[str, Any]
    messages: str

    def operation(self, method: str, path: str) -> dict[str, Any]:
        return self.document["paths"][path][method]

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if ref is None:
            return schema
        name = ref.removeprefix("#/components/schemas/")
        return self.document["components"]["schemas"][name]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Generated:
    target = tmp_path_factory.mktemp("openapi") / "schema.json"
    GENERATOR_STATS.reset()  # warnings from schemas generated earlier in this process
    messages = io.StringIO()
    with redirect_stderr(messages):  # drf-spectacular prints its warnings to sys.stderr
        call_command(
            "spectacular",
            "--validate",
            "--fail-on-warn",
            "--format=openapi-json",
            f"--file={target}",
            stdout=messages,
            stderr=messages,
        )
    return Generated(json.loads(target.read_text()), messages.getvalue())


def test_schema_generates_and_validates_without_warnings(generated: Generated) -> None:
    assert "Warning" not in generated.messages
    assert "Error" not in generated.messages
    assert generated.document["openapi"].startswith("3.")


@operations(SPEC_OPERATIONS)
def test_every_spec_operation_is_documented(generated: Generated, method: str, path: str) -> None:
    assert method in generated.document["paths"].get(path, {}), sorted(generated.document["paths"])
    assert generated.operation(method, path)["operationId"]


@operations(SPEC_OPERATIONS)
def test_path_parameters_carry_spec_names(generated: Generated, method: str, path: str) -> None:
    declared = {
        p["name"]
        for p in generated.operation(method, path).get("parameters", [])
        if p["in"] == "path"
    }
    assert declared == set(re.findall(r"{(\w+)}", path))


@operations(WRITES)
def test_every_write_documents_a_json_request_body(
    generated: Generated, method: str, path: str
) -> None:
    body = generated.operation(method, path)["requestBody"]
    schema = generated.resolve(body["content"]["application/json"]["schema"])
    assert schema["type"] == "object"
    assert schema["properties"]


def test_token_endpoint_documents_form_bodies_too(generated: Generated) -> None:
    content = generated.operation("post", "/v1/auth/token")["requestBody"]["content"]
    form = generated.resolve(content["application/x-www-form-urlencoded"]["schema"])
    assert {"grant_type", "client_id", "client_secret", "username", "password"} <= set(
        form["properties"]
    )


@operations(SPEC_OPERATIONS)
def test_every_operation_documents_a_json_success_answer(
    generated: Generated, method: str, path: str
) -> None:
    responses = generated.operation(method, path)["responses"]
    success = [code for code in responses if code.startswith("2")]
    assert success, responses
    for code in success:
        if code == "204":
            assert "content" not in responses[code]
            continue
        schema = generated.resolve(responses[code]["content"]["application/json"]["schema"])
        # invoke: the response object, or a structured-output agent's object (docs/api.md#invoke).
        schema = generated.resolve(schema.get("anyOf", [schema])[0])
        assert schema["type"] == "object"
        assert schema["properties"]


def test_bearer_security_scheme_is_declared(generated: Generated) -> None:
    scheme = generated.document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"], scheme["bearerFormat"]) == ("http", "bearer", "JWT")


@operations(SPEC_OPERATIONS)
def test_operations_require_the_bearer_token_except_the_token_endpoint(
    generated: Generated, method: str, path: str
) -> None:
    security = generated.operation(method, path).get("security", [])
    if (method, path) in PUBLIC:
        assert all(requirement == {} for requirement in security)
    else:
        assert security == [{"bearerAuth": []}]


def test_schema_endpoint_answers(db: Any) -> None:
    response = APIClient().get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    assert "/v1/agents" in json.loads(response.content)["paths"]


JSON = "application/vnd.oai.openapi+json"
YAML = "application/vnd.oai.openapi"


def fetch(accept: str = JSON, **headers: str) -> Any:
    return APIClient().get("/v1/schema", HTTP_ACCEPT=accept, **headers)


def test_the_document_is_generated_once_and_served_from_memory(db: Any) -> None:
    schema.forget()  # whatever an earlier test in this process built
    before = schema.generations

    first, second = fetch(), fetch()
    as_yaml = fetch(YAML)
    by_format = APIClient().get("/v1/schema", {"format": "json"})

    assert schema.generations == before + 1  # four answers, two renderings, one generation
    assert first.content == second.content == by_format.content
    assert first["ETag"] == second["ETag"] == by_format["ETag"]
    assert first["Content-Type"] == JSON
    assert as_yaml["Content-Type"] == f"{YAML}; charset=utf-8"
    assert as_yaml["ETag"] != first["ETag"]  # another representation, another tag
    assert yaml.safe_load(as_yaml.content) == json.loads(first.content)
    assert first["Cache-Control"] == "no-cache"
    assert "Accept" in first["Vary"]


def test_a_client_holding_the_document_revalidates_for_a_304(db: Any) -> None:
    current = fetch()
    tag = current["ETag"]

    unchanged = fetch(HTTP_IF_NONE_MATCH=tag)
    among_others = fetch(HTTP_IF_NONE_MATCH=f'"stale", {tag}')
    stale = fetch(HTTP_IF_NONE_MATCH='"stale"')
    other_format = fetch(YAML, HTTP_IF_NONE_MATCH=tag)

    assert (unchanged.status_code, unchanged.content) == (304, b"")
    assert unchanged["ETag"] == tag
    assert among_others.status_code == 304
    assert (stale.status_code, stale.content) == (200, current.content)
    assert other_format.status_code == 200


def test_the_served_document_is_the_generated_one(db: Any, generated: Generated) -> None:
    assert json.loads(fetch().content) == generated.document


# The URL configuration of the test below: the schema and the guardrails' routes only.
urlpatterns = [
    route("v1/schema", SchemaView.as_view()),
    route("v1/", include("guardrails.api.urls")),
]


def test_a_changed_setting_forgets_the_document(db: Any, settings: Any) -> None:
    assert "/v1/agents" in json.loads(fetch().content)["paths"]
    before = schema.generations
    settings.ROOT_URLCONF = __name__  # as a test that changes the URLs does

    changed = json.loads(fetch().content)

    assert sorted(changed["paths"]) == ["/v1/guardrails"]
    assert schema.generations == before + 1


def test_anonymous_requests_for_the_document_are_throttled(
    db: Any, rates: Callable[..., None]
) -> None:
    rates(anon="2/min")  # per address for a caller without a token, as on every open route
    statuses = [fetch().status_code for _ in range(3)]
    tag = fetch(REMOTE_ADDR="127.0.0.2")["ETag"]  # another address has a budget of its own
    revalidated = fetch(HTTP_IF_NONE_MATCH=tag)

    assert statuses == [200, 200, 429]
    assert revalidated.status_code == 429  # a 304 is a request too


def test_an_anonymous_flood_of_the_open_routes_is_refused_with_retry_after(
    rates: Callable[..., None], owner_client: APIClient, settings: Any
) -> None:
    settings.A2A_PUBLIC_CARDS = True
    rates(anon="6/min")  # well under the user rate: the anonymous budget is what refuses
    anonymous = APIClient()
    open_routes = ["/v1/schema", "/v1/docs", "/v1/a2a"]
    statuses = [anonymous.get(route).status_code for route in open_routes * 2]
    refused = [anonymous.get(route) for route in open_routes]

    assert statuses == [200] * 6  # one budget per address, shared by the open routes
    for answer in refused:  # in the API's error JSON, whatever the route writes otherwise
        assert answer.status_code == 429
        assert 0 < int(answer["Retry-After"]) <= 60
        assert answer.json()["detail"].startswith("Request was throttled")
    # A caller with a token, from the same address, counts against its own rate.
    assert owner_client.get("/v1/schema").status_code == 200
    assert owner_client.get("/v1/a2a").status_code == 200


def docs_schema_url(page: bytes) -> str:
    """The address the docs page's Swagger UI fetches the document from."""
    written = re.search(rb'url: ("[^"]*")', page)
    assert written, page
    return str(json.loads(written.group(1)))


def test_the_docs_page_and_any_query_string_share_the_one_generated_document(db: Any) -> None:
    schema.forget()
    before = schema.generations
    for lang in ("", "fr", "zz-unknown"):
        page = APIClient().get("/v1/docs", {"lang": lang} if lang else {})
        url = docs_schema_url(page.content)
        assert url.startswith("/v1/schema")
        # As Swagger UI asks for it.
        assert APIClient().get(url, HTTP_ACCEPT="application/json,*/*").status_code == 200
    fetch()
    APIClient().get("/v1/schema", {"lang": "de", "version": "2"})

    assert schema.generations == before + 1


def test_docs_page_serves_swagger_ui_from_the_sidecar(db: Any) -> None:
    response = APIClient().get("/v1/docs")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert any(a.endswith("swagger-ui-dist/swagger-ui-bundle.js") for a in assets), assets
    for asset in assets:
        assert asset.startswith("/static/drf_spectacular_sidecar/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not bundled"
    # No asset from elsewhere (the page also carries a random CSRF token, which may spell
    # "cdn" by chance: look at addresses only).
    assert not re.findall(r"https?://[^\s\"']*", page), "the page loads something from outside"


# ---------------------------------------------------------------- exactness

CHAT_ROUTES = [
    "/v1/agents/{agentId}/versions/{versionId}/chat/completions",
    "/v1/chat/completions",
    "/v1/openai/chat/completions",
]
PROCESS = "/v1/agents/{agentId}/versions/{versionId}/process"
RESPOND = "/v1/agents/{agentId}/versions/{versionId}/respond"
UPSTREAM = [
    *CHAT_ROUTES,
    PROCESS,
    RESPOND,
    *(
        f"/v1/agents/{{agentId}}/versions/{{versionId}}/{route}"
        for route in ("invoke", "invoke-stream", "invoke-task", "invoke-task-stream")
    ),
    "/v1/mcp-servers/{serverId}/tools",
    "/v1/runs/{runId}/approvals",  # the last decision resumes the run: it calls the model
]
CONFLICTS = [
    ("post", "/v1/environments"),  # a taken name
    ("post", "/v1/agents"),
    ("patch", "/v1/agents/{agentId}"),
    ("post", "/v1/agents/{agentId}/versions"),
    ("post", "/v1/mcp-servers"),
    ("patch", "/v1/mcp-servers/{serverId}"),
    ("post", "/v1/documents"),
    # A registered server whose address the network policy no longer allows.
    ("get", "/v1/mcp-servers/{serverId}/tools"),
    # A run that has ended: nothing left to cancel.
    ("post", "/v1/runs/{runId}/cancel"),
    # A request decided already, or a run that waits no more (expired, canceled).
    ("post", "/v1/runs/{runId}/approvals"),
    ("post", PROCESS),  # the same, through an mcp_approval_response
    # A gated alias's move its gate refused (docs/api.md#gated-aliases).
    ("put", "/v1/agents/{agentId}/aliases/{name}"),
    ("post", "/v1/datasets"),  # a taken name
    ("patch", "/v1/datasets/{datasetId}"),  # renamed to a taken name
    ("post", "/v1/experiments/{experimentId}/cancel"),  # an experiment that has ended
]


ERROR_BODY = "#/components/schemas/ErrorBody"


def every_operation(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, ops in document["paths"].items() for m, op in ops.items()]


def error_component(path: str) -> str:
    if path in CHAT_ROUTES or path.startswith("/v1/openai/"):
        return "OpenAIError"
    if path == PROCESS:
        return "AgentProtocolAgentResponse"  # the protocol's response, `status: failed`
    return "ErrorBody"


def test_respond_documents_the_agent_http_contracts_body(generated: Generated) -> None:
    body = generated.operation("post", RESPOND)["requestBody"]["content"]["application/json"]
    schema = generated.resolve(body["schema"])
    # The contract's two, and the platform's own: a background run (docs/api.md).
    assert set(schema["properties"]) == {"messages", "metadata", "background", "webhook"}
    assert schema["required"] == ["messages"]


def test_process_documents_its_event_stream_and_its_json_answer(generated: Generated) -> None:
    content = generated.operation("post", PROCESS)["responses"]["200"]["content"]
    assert set(content) == {"text/event-stream", "application/json"}
    answer = generated.resolve(content["application/json"]["schema"])
    assert {"id", "object", "status", "output"} <= set(answer["properties"])
    request = generated.operation("post", PROCESS)["requestBody"]["content"]["application/json"]
    fields = generated.resolve(request["schema"])["properties"]
    assert fields["stream"]["default"] is True
    assert "session_id" in fields


@pytest.mark.parametrize("path", CHAT_ROUTES)
def test_chat_completions_document_a_completion_and_an_event_stream(
    generated: Generated, path: str
) -> None:
    content = generated.operation("post", path)["responses"]["200"]["content"]
    assert set(content) == {"application/json", "text/event-stream"}
    completion = generated.resolve(content["application/json"]["schema"])
    assert {"id", "object", "choices", "usage"} <= set(completion["properties"])


@pytest.mark.parametrize("route", ["invoke-stream", "invoke-task-stream"])
def test_ndjson_streams_are_documented_as_text_plain(generated: Generated, route: str) -> None:
    path = f"/v1/agents/{{agentId}}/versions/{{versionId}}/{route}"
    assert set(generated.operation("post", path)["responses"]["200"]["content"]) == {"text/plain"}


def test_every_operation_documents_the_errors_of_its_kind(generated: Generated) -> None:
    for method, path, operation in every_operation(generated.document):
        responses = operation["responses"]
        expected = {"400", "401", "429"}
        if "requestBody" in operation:
            expected |= {"413", "415"}
        if "{" in path or any(
            p["name"] == "X-Environment" for p in operation.get("parameters", [])
        ):
            expected |= {"403", "404"}
        assert expected <= set(responses), (method, path, sorted(responses))


@pytest.mark.parametrize("path", UPSTREAM)
def test_routes_waiting_on_a_model_or_server_document_502_and_504(
    generated: Generated, path: str
) -> None:
    method = "get" if path.endswith("/tools") else "post"
    assert {"502", "504"} <= set(generated.operation(method, path)["responses"])


def test_only_routes_that_wait_on_something_document_502(generated: Generated) -> None:
    answering = {p for m, p, op in every_operation(generated.document) if "502" in op["responses"]}
    assert answering == set(UPSTREAM)


def test_only_the_routes_that_run_agents_document_402(generated: Generated) -> None:
    """A spent budget refuses or stops a run (docs/api.md#budgets): every route that runs
    one says so, and no other."""
    spending = {p for m, p, op in every_operation(generated.document) if "402" in op["responses"]}
    assert spending == set(UPSTREAM) - {"/v1/mcp-servers/{serverId}/tools"}


def test_the_routes_that_run_an_agent_document_the_call_depth_header(
    generated: Generated,
) -> None:
    """Every route that reads Agentbuilder-Call-Depth (agents.runtime.depth) declares it,
    with the bounds its parser holds to, and no other route does."""
    # A decision resumes a run with the depth its request had.
    runs = set(UPSTREAM) - {"/v1/mcp-servers/{serverId}/tools", "/v1/runs/{runId}/approvals"}
    declared = {}
    for method, path, operation in every_operation(generated.document):
        for parameter in operation.get("parameters", []):
            if parameter["name"] == depth.HEADER:
                declared[(method, path)] = parameter
    assert set(declared) == {("post", path) for path in runs}
    for parameter in declared.values():
        assert (parameter["in"], parameter.get("required", False)) == ("header", False)
        assert parameter["schema"] == {"type": "integer", "minimum": 0, "maximum": 9999}
        assert "400" in parameter["description"]
    assert depth.parse_header("9999") == 9999
    with pytest.raises(ValueError, match="whole number"):
        depth.parse_header("10000")


@operations(CONFLICTS)
def test_writes_that_can_meet_a_taken_name_document_409(
    generated: Generated, method: str, path: str
) -> None:
    assert "409" in generated.operation(method, path)["responses"]


def test_409_is_documented_only_where_it_can_happen(generated: Generated) -> None:
    documented = {
        (m, p) for m, p, op in every_operation(generated.document) if "409" in op["responses"]
    }
    assert documented == set(CONFLICTS)


def test_error_bodies_are_the_ones_each_route_writes(generated: Generated) -> None:
    for method, path, operation in every_operation(generated.document):
        for status, response in operation["responses"].items():
            if not status.startswith(("4", "5")):
                continue
            schema = response["content"]["application/json"]["schema"]
            refs = [s["$ref"] for s in schema.get("anyOf", [schema])]
            expected = f"#/components/schemas/{error_component(path)}"
            assert refs[0] == expected, (method, path, status, refs)
            if status in ("404", "413") and expected != ERROR_BODY:
                # The body-size middleware, and a path no route matches (an empty id),
                # refuse before the view, in the shape of docs/api.md#errors.
                assert refs[1:] == [ERROR_BODY]


def test_error_body_is_specs_detail(generated: Generated) -> None:
    body = generated.document["components"]["schemas"]["ErrorBody"]
    assert body["required"] == ["detail"]
    shapes = body["properties"]["detail"]["anyOf"]
    assert {"type": "string"} in shapes
    item = generated.resolve(next(s for s in shapes if s.get("type") == "array")["items"])
    assert set(item["properties"]) == {"loc", "msg", "type"}


def test_openai_error_body_is_openais(generated: Generated) -> None:
    error = generated.resolve(generated.document["components"]["schemas"]["OpenAIError"])
    inner = generated.resolve(error["properties"]["error"])
    assert set(inner["properties"]) == {"message", "type", "param", "code"}


def test_throttled_and_unauthenticated_answers_document_their_headers(
    generated: Generated,
) -> None:
    responses = generated.operation("get", "/v1/agents")["responses"]
    assert "Retry-After" in responses["429"]["headers"]
    assert "WWW-Authenticate" in responses["401"]["headers"]


def test_classes_sharing_a_name_get_components_of_their_own(generated: Generated) -> None:
    def body(path: str) -> str:
        content = generated.operation("post", path)["requestBody"]["content"]
        return str(content["application/json"]["schema"]["$ref"])

    assert body(RESPOND) != body(PROCESS)
    for ref in (body(RESPOND), body(PROCESS)):
        assert (
            ref.removeprefix("#/components/schemas/") in generated.document["components"]["schemas"]
        )


def test_query_parameters_carry_the_constraints_the_view_checks(generated: Generated) -> None:
    given = {
        p["name"]: p["schema"]
        for p in generated.operation("get", "/v1/runs")["parameters"]
        if p["in"] == "query"
    }
    # Each also empty (`?limit=`): a list route reads it as absent, as docs/api.md#pagination says.
    empty = {"type": "string", "maxLength": 0, "description": "Empty: as if absent."}
    assert all(schema["anyOf"][1] == empty for schema in given.values())
    parameters = {name: schema["anyOf"][0] for name, schema in given.items()}
    assert (parameters["limit"]["minimum"], parameters["limit"]["maximum"]) == (1, 100)
    assert parameters["offset"]["minimum"] == 0
    assert parameters["callerId"]["minimum"] == 1
    assert parameters["agentId"]["format"] == "uuid"
    assert parameters["status"]["enum"] == [
        "queued",
        "in_progress",
        "awaiting_approval",
        "completed",
        "failed",
        "canceled",
    ]


def test_multipart_upload_documents_its_file_and_form_fields(generated: Generated) -> None:
    content = generated.operation("post", "/v1/documents")["requestBody"]["content"]
    form = generated.resolve(content["multipart/form-data"]["schema"])
    assert form["properties"]["file"]["format"] == "binary"
    assert form["required"] == ["file"]
    assert form["properties"]["metadata"]["type"] == "string"  # JSON, as text
    assert form["properties"]["title"]["maxLength"] == 500
