"""The OpenAPI document, exact: pydantic bodies under names of their own, and every error
status an operation can answer, with the error body its view writes.

drf-spectacular's own pydantic extension names a component after its class and keeps the
first of two classes that share a name (the agent HTTP contract's `AgentRequest` documented
the agent API protocol's body), and documents request bodies as pydantic serializes them.
Here a name shared by two project classes is qualified by its module (or the
SCHEMA_PREFIX its module declares), a request body is
documented as pydantic validates it, and the error responses are added by operation kind
(docs/api.md#errors) in one place rather than in every view's `extend_schema`.
"""

from __future__ import annotations

import enum
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from drf_spectacular import openapi
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel
from pydantic.json_schema import CoreModeRef, DefsRef, GenerateJsonSchema, JsonSchemaMode

from agentbuilder.api.errors import ErrorBody
from agentbuilder.api.pagination import PageQuery

PROJECT_PACKAGES = ("agentbuilder", "agents", "guardrails", "retrieval")
REF_TEMPLATE = "#/components/schemas/{model}"

# ---------------------------------------------------------------- component names


def _project_types() -> Iterator[type]:
    def below(cls: type) -> Iterator[type]:
        subclasses: list[type] = cls.__subclasses__()
        for sub in subclasses:
            yield sub
            yield from below(sub)

    for cls in (*below(BaseModel), *below(enum.Enum)):
        # Importable classes only: a model built at run time (a task's inputs) must not
        # rename a documented one depending on what this process happened to build.
        if (
            cls.__module__.split(".", 1)[0] in PROJECT_PACKAGES
            and _class_of(f"{cls.__module__}.{cls.__qualname__}") is cls
        ):
            yield cls


def _camel(words: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[._]", words) if part)


def _names() -> dict[type, str]:
    """Each project type's component name: its class name, qualified by its module (and,
    should that still be shared, by its whole module path) when another type has it."""
    by_name: dict[str, set[type]] = defaultdict(set)
    for cls in _project_types():
        by_name[cls.__name__].add(cls)
    names: dict[type, str] = {}
    for name, classes in by_name.items():
        if len(classes) == 1:
            names[classes.pop()] = name
            continue
        short = {cls: _qualifier(cls) + name for cls in classes}
        unique = len(set(short.values())) == len(classes)
        for cls in classes:
            names[cls] = short[cls] if unique else _camel(cls.__module__) + name
    return names


def _qualifier(cls: type) -> str:
    """What tells a class from another of its name: the document its module follows (its
    SCHEMA_PREFIX: a protocol split over modules), else its module's name."""
    prefix = getattr(sys.modules.get(cls.__module__), "SCHEMA_PREFIX", None)
    return prefix if isinstance(prefix, str) else _camel(cls.__module__.rsplit(".", 1)[-1])


def component_name(cls: type, names: dict[type, str], *, request: bool) -> str:
    name = names.get(cls, cls.__name__)
    # As drf-spectacular names request components (COMPONENT_SPLIT_REQUEST): a model may
    # validate more loosely than it serializes. An enum is the same either way.
    return f"{name}Request" if request and not issubclass(cls, enum.Enum) else name


def _class_of(core_ref: str) -> type | None:
    """The class behind pydantic's core reference `module.Qualname:id`, if it is one."""
    pieces = core_ref.rsplit(":", 1)[0].split(".")
    if any("[" in piece for piece in pieces):  # a parametrized generic
        return None
    for split in range(len(pieces) - 1, 0, -1):
        found: Any = sys.modules.get(".".join(pieces[:split]))
        if found is None:
            continue
        for attribute in pieces[split:]:
            found = getattr(found, attribute, None)
        return found if isinstance(found, type) else None
    return None


def _generator(names: dict[type, str], found: dict[str, type]) -> type[GenerateJsonSchema]:
    """pydantic's JSON Schema with each nested type under its component name; records
    which class each name stands for in `found`."""

    class NamedDefs(GenerateJsonSchema):
        def get_defs_ref(self, core_mode_ref: CoreModeRef) -> DefsRef:
            ref = super().get_defs_ref(core_mode_ref)
            core_ref, mode = core_mode_ref
            cls = _class_of(core_ref)
            if cls is not None:
                name = component_name(cls, names, request=mode == "validation")
                found[name] = cls
                self._prioritized_defsref_choices[ref].insert(0, DefsRef(name))
            return ref

    return NamedDefs


class PydanticModels(OpenApiSerializerExtension):
    """Replaces drf_spectacular.contrib.pydantic (see the module's docstring)."""

    target_class = "pydantic.BaseModel"
    match_subclasses = True
    priority = 1

    def get_name(self, auto_schema: Any, direction: str) -> str:
        # drf-spectacular appends "Request" itself for the request direction.
        return component_name(self.target, _names(), request=False)

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        mode: JsonSchemaMode = "validation" if direction == "request" else "serialization"
        found: dict[str, type] = {}
        schema: dict[str, Any] = self.target.model_json_schema(
            ref_template=REF_TEMPLATE, schema_generator=_generator(_names(), found), mode=mode
        )
        for name, sub_schema in schema.pop("$defs", {}).items():
            # The class as the component's identity, as drf-spectacular registers a model
            # it meets at the top: the same model met both ways is one component.
            auto_schema.registry.register_on_missing(
                ResolvedComponent(
                    name=name,
                    type=ResolvedComponent.SCHEMA,
                    object=found.get(name, name),
                    schema=sub_schema,
                )
            )
        return schema


# ---------------------------------------------------------------- query parameters


EMPTY = {"type": "string", "maxLength": 0, "description": "Empty: as if absent."}
# Text is stored or compared by PostgreSQL, which holds no NUL: a 400 (check_text).
NO_NUL = "^[^\\x00]*$"


def query_parameters(model: type[BaseModel], **descriptions: str) -> list[OpenApiParameter]:
    """The fields of a query model (what ApiView.query validates) as query parameters, with
    their constraints, so that the document allows exactly what the view does."""
    schema = model.model_json_schema(mode="validation", ref_template=REF_TEMPLATE)
    required = set(schema.get("required", ()))
    # A list route reads `?name=` as no filter (docs/api.md#pagination): say so.
    empty_is_absent = issubclass(model, PageQuery)
    parameters = []
    for name, field in schema["properties"].items():
        field = {k: v for k, v in field.items() if k != "title"}
        if field.get("default", 0) is None:
            del field["default"]
        description = descriptions.get(name) or field.pop("description", "")
        field.pop("description", None)
        # `X | None = None`: absent is the None; a query string cannot send a null.
        options = [o for o in field.pop("anyOf", ()) if o.get("type") != "null"]
        if len(options) == 1:
            field.update(options[0])
        elif options:
            field["anyOf"] = options
        if field.get("type") == "string" and not {"enum", "format", "pattern"} & set(field):
            field["pattern"] = NO_NUL
        if empty_is_absent and name not in required:
            field = {"anyOf": [field, EMPTY]}
        parameters.append(
            OpenApiParameter(
                name, field, required=name in required, description=str(description or "")
            )
        )
    return parameters


# ---------------------------------------------------------------- error responses

ERRORS = {
    400: "Invalid request: `detail` lists each problem with its location (`loc`).",
    401: "Missing, expired or invalid Bearer token (at /auth/token: wrong credentials).",
    402: "A blocking budget that applies is spent: refused before the run (its `budget` "
    "beside `detail`), or the run stopped `budget_exceeded` (docs/api.md#budgets).",
    403: "The caller lacks the permission this needs.",
    404: "No such object, or not one the caller may see.",
    409: "The name is already taken.",
    413: "The body is larger than the limit.",
    415: "Unsupported Content-Type.",
    429: "Throttled: retry after `Retry-After` seconds.",
    502: "The model provider, a tool or an MCP server failed.",
    504: "The model provider or an MCP server timed out.",
}
HEADERS = {
    401: {"WWW-Authenticate": 'The scheme to authenticate with: `Bearer realm="api"`.'},
    429: {"Retry-After": "Seconds to wait before retrying."},
}
WRITES = ("POST", "PUT", "PATCH")


class AutoSchema(openapi.AutoSchema):
    """Adds the error responses an operation can answer, by what it is: every one may be
    refused (400) and is throttled (429); one with a body may be too large (413) or of the
    wrong type (415); one on an object or an environment may be forbidden (403) or find
    nothing (404). A view says what its domain adds: `conflicts` (409 on writes),
    `upstream` (502, 504: it waits on a model or an MCP server) and `spends` (402: it runs
    agents, which budgets may refuse or stop). The body is the one its
    view's exception handler writes, `error_schema` (docs/api.md#errors by default)."""

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        responses = operation["responses"]
        for status in sorted(self._error_statuses(operation)):
            responses.setdefault(str(status), self._error_response(status))
        return operation

    def _error_statuses(self, operation: dict[str, Any]) -> set[int]:
        statuses = {400, 401}
        if self.view.get_throttles():
            statuses.add(429)
        if "requestBody" in operation:
            statuses |= {413, 415}
        parameters = operation.get("parameters", [])
        if any(p["in"] == "path" or p["name"] == "X-Environment" for p in parameters):
            statuses |= {403, 404}
        if self.method in WRITES and getattr(self.view, "conflicts", False):
            statuses.add(409)
        if getattr(self.view, "upstream", False):
            statuses |= {502, 504}
        if getattr(self.view, "spends", False):
            statuses.add(402)
        return statuses

    def _error_response(self, status: int) -> dict[str, Any]:
        body = getattr(self.view, "error_schema", ErrorBody)
        response: dict[str, Any] = self._get_response_for_code(
            body, str(status), media_types=["application/json"]
        )
        if status in (404, 413) and body is not ErrorBody:
            # The body-size middleware refuses by Content-Length before any view runs, in
            # docs/api.md#errors' shape; a body that lied about its length meets the view's.
            # A path no route matches (an empty id: `/v1/agents//versions/1/process`) is
            # the API's 404, before any view too.
            native = self._get_response_for_code(ErrorBody, str(status), ["application/json"])
            content = response["content"]["application/json"]
            content["schema"] = {
                "anyOf": [content["schema"], native["content"]["application/json"]["schema"]]
            }
        response["description"] = ERRORS[status]
        headers = HEADERS.get(status, {})
        if headers:
            response["headers"] = {
                name: {"description": text, "schema": {"type": "string"}}
                for name, text in headers.items()
            }
        return response


# ---------------------------------------------------------------- server-sent events

SSE = "text/event-stream"


def sse_events(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: a `text/event-stream` answer's schema is
    written by the views as the object one event carries; this makes it the event's, as
    OpenAPI 3.1 tools read a stream (each event an object whose `data` is that object's
    JSON: `contentMediaType` and `contentSchema`). A plain string stays a string."""
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            for response in operation.get("responses", {}).values():
                media = response.get("content", {}).get(SSE)
                if media is None:
                    continue
                data: dict[str, Any] = {"type": "string"}
                if media.get("schema", {}).get("type") != "string":
                    data |= {
                        "contentMediaType": "application/json",
                        "contentSchema": media["schema"],
                    }
                media["schema"] = {
                    "type": "object",
                    "properties": {"data": data},
                    "required": ["data"],
                }
    return result


# ---------------------------------------------------------------- links

AGENT_IN_BODY = "$response.body#/id"
AGENT_IN_PATH = "$request.path.agentId"
# What a client does next with what an answer gave it (OpenAPI links): create an agent,
# add a version, point an alias at it, call it by number or alias, read the run, delete the
# alias and the agent. Tools that walk an API (schemathesis's stateful phase) follow them.
# {operationId: {status: {link name: (target operationId, {parameter: value})}}}; a value is
# a runtime expression or a constant.
LINKS: dict[str, dict[str, dict[str, tuple[str, dict[str, str]]]]] = {
    "agents_create": {
        "201": {
            "GetAgent": ("agents_get", {"agentId": AGENT_IN_BODY}),
            "AddVersion": ("versions_create", {"agentId": AGENT_IN_BODY}),
            "Invoke": ("agents_invoke", {"agentId": AGENT_IN_BODY, "versionId": "latest"}),
            "InvokeTask": (
                "agents_invoke_task",
                {"agentId": AGENT_IN_BODY, "versionId": "latest"},
            ),
            "DeleteAgent": ("agents_delete", {"agentId": AGENT_IN_BODY}),
        }
    },
    "versions_create": {
        "201": {
            "GetVersion": (
                "versions_get",
                {"agentId": "$response.body#/agent/id", "versionId": "$response.body#/version/id"},
            ),
            "SetAlias": ("aliases_set", {"agentId": "$response.body#/agent/id"}),
            "Invoke": (
                "agents_invoke",
                {
                    "agentId": "$response.body#/agent/id",
                    "versionId": "$response.body#/version/number",
                },
            ),
        }
    },
    "aliases_set": {
        "200": {
            "InvokeByAlias": (
                "agents_invoke",
                {"agentId": AGENT_IN_PATH, "versionId": "$response.body#/name"},
            ),
            "AliasHistory": ("aliases_history", {"agentId": AGENT_IN_PATH}),
            "DeleteAlias": (
                "aliases_delete",
                {"agentId": AGENT_IN_PATH, "name": "$response.body#/name"},
            ),
        }
    },
    "aliases_delete": {"204": {"DeleteAgent": ("agents_delete", {"agentId": AGENT_IN_PATH})}},
    "agents_invoke": {
        "200": {
            "GetRun": ("runs_get", {"runId": "$response.header.X-Run-Id"}),
            "DeleteAgent": ("agents_delete", {"agentId": AGENT_IN_PATH}),
        }
    },
    # A list's first item, and what can be done with it.
    "agents_list": {
        "200": {
            "GetAgent": ("agents_get", {"agentId": "$response.body#/agents/0/id"}),
            "ListVersions": ("versions_list", {"agentId": "$response.body#/agents/0/id"}),
            "ListAliases": ("aliases_list", {"agentId": "$response.body#/agents/0/id"}),
        }
    },
    "runs_list": {"200": {"GetRun": ("runs_get", {"runId": "$response.body#/runs/0/id"})}},
    "runs_get": {"200": {"GetThread": ("threads_get", {"threadId": "$response.body#/threadId"})}},
    "documents_list": {
        "200": {
            "GetDocument": ("documents_get", {"documentId": "$response.body#/documents/0/id"}),
        }
    },
    "documents_get": {
        "200": {"DeleteDocument": ("documents_delete", {"documentId": "$request.path.documentId"})}
    },
    "mcp_servers_list": {
        "200": {
            "GetServer": ("mcp_servers_get", {"serverId": "$response.body#/mcpServers/0/id"}),
        }
    },
    "mcp_servers_get": {
        "200": {
            "ListTools": ("mcp_servers_tools", {"serverId": "$request.path.serverId"}),
            "UpdateServer": ("mcp_servers_update", {"serverId": "$request.path.serverId"}),
            "DeleteServer": ("mcp_servers_delete", {"serverId": "$request.path.serverId"}),
        }
    },
}


def links(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular's postprocessing hook: LINKS into the operations' responses."""
    operations = {
        operation["operationId"]: operation
        for methods in result.get("paths", {}).values()
        for operation in methods.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    # A document of some of the routes (drf-spectacular's generator given a subset) links
    # only what it holds.
    for source, by_status in LINKS.items():
        if source not in operations:
            continue
        for status, named in by_status.items():
            links = {
                name: {"operationId": target, "parameters": parameters}
                for name, (target, parameters) in named.items()
                if target in operations
            }
            if links:
                operations[source]["responses"][status]["links"] = links
    return result
