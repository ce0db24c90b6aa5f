"""The OpenAPI document: valid without warnings, complete for SPEC sections 1–3, and served
with a Swagger UI whose assets ship with the app."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.test import APIClient

SPEC_OPERATIONS = [
    ("post", "/v1/auth/token"),
    ("get", "/v1/environments"),
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
    ("post", "/v1/agents/versions/batch-get"),
    ("get", "/v1/models"),
    ("get", "/v1/guardrails"),
    ("get", "/v1/runs"),
    ("get", "/v1/runs/{runId}"),
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
WRITES = [(m, p) for m, p in SPEC_OPERATIONS if m in ("post", "patch")]
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
        schema = generated.resolve(responses[code]["content"]["application/json"]["schema"])
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
    assert "cdn" not in page.lower()
