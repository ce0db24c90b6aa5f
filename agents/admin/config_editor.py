"""The admin's config editor: CodeMirror with the config's JSON Schema (completion, hover,
errors as you type), the schema made from the pydantic config models and filled with the
environment's catalogs, and a check that runs the same validation as saving.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from django import forms
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User, request_user
from agents.access.permissions import environments_visible
from agents.configs import CONFIG_MODELS, MAX_FALLBACK_MODELS, config_parse
from agents.examples import TEMPLATES
from agents.mcp_registry.selectors import mcp_server_list
from agents.models import AgentType, Environment
from agents.runtime.tools.functions import REGISTRY
from agents.selectors.agents import agent_list
from agents.selectors.catalog import model_list
from agents.services.config_check import config_validate
from guardrails.selectors import guardrail_list

# ---------------------------------------------------------------- the schema


def config_schema(agent_type: str) -> dict[str, Any]:
    """The JSON Schema of a config of `agent_type`, as the API reads it (camelCase)."""
    return CONFIG_MODELS[agent_type].model_json_schema(by_alias=True, mode="validation")


def editor_schema(*, user: User, environment: Environment, agent_type: str) -> dict[str, Any]:
    """`config_schema` with what this environment offers as choices: model ids, function
    names, guardrails, MCP servers and task agents, so the editor completes them."""
    schema = copy.deepcopy(config_schema(agent_type))
    models = list(model_list(agent_type=agent_type).values_list("pk", flat=True))
    guardrails = list(guardrail_list(environment_id=environment.pk).values_list("name", flat=True))
    try:
        servers = list(
            mcp_server_list(user=user, environment=environment).values_list("pk", "name")
        )
    except DomainError:  # MCP servers are listed to READ; a creator may not hold it
        servers = []
    tasks = agent_list(user=user, environment=environment, agent_type=AgentType.TASK)
    choices = {
        "llmModelId": _choices(models),
        "funcName": _choices(sorted(REGISTRY), {n: REGISTRY[n].description for n in REGISTRY}),
        "guardrails": {"type": "array", "items": _choices(guardrails)},
        "contextGuardrails": {"type": "array", "items": _choices(guardrails)},
        "fallbackModels": {
            "type": "array",
            "items": _choices(models),
            "maxItems": MAX_FALLBACK_MODELS,
            "uniqueItems": True,
        },
        "agentId": _choices([str(a.pk) for a in tasks], {str(a.pk): a.name for a in tasks}),
    }
    _fill(schema, choices)
    for name, definition in schema.get("$defs", {}).items():
        if name == "McpServerReference":
            ids = {str(pk): label for pk, label in servers}
            definition["properties"]["id"] = _choices(list(ids), ids)
    return schema


def _choices(values: list[str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    described = "; ".join(f"{v}: {labels[v]}" for v in values if labels and labels.get(v))
    choice: dict[str, Any] = {"type": "string", "enum": values}
    if described:
        choice["description"] = described
    return choice


def _fill(node: Any, choices: dict[str, dict[str, Any]]) -> None:
    """Replace, wherever a property of these names is declared, its schema by the choices
    (keeping its description when the choices have none)."""
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for name, choice in choices.items():
                if name in properties:
                    kept = properties[name].get("description")
                    properties[name] = {**({"description": kept} if kept else {}), **choice}
        for value in node.values():
            _fill(value, choices)
    elif isinstance(node, list):
        for value in node:
            _fill(value, choices)


# ---------------------------------------------------------------- the admin's endpoints


def _environment(request: HttpRequest, value: str | None) -> Environment:
    environment = (
        environments_visible(request_user(request)).filter(pk=value).first() if value else None
    )
    if environment is None:
        raise Http404("No environment of yours has this id.")
    return environment


def _agent_type(value: str | None) -> str:
    if value not in CONFIG_MODELS:
        raise Http404("No such agent type.")
    return str(value)


def schema_view(request: HttpRequest) -> JsonResponse:
    """GET ?environment=<id>&agentType=<type>: the editor's schema; without an environment
    (none chosen yet), the config's shape without the catalogs' choices."""
    agent_type = _agent_type(request.GET.get("agentType"))
    if not request.GET.get("environment"):
        return JsonResponse(config_schema(agent_type))
    environment = _environment(request, request.GET.get("environment"))
    return JsonResponse(
        editor_schema(user=request_user(request), environment=environment, agent_type=agent_type)
    )


@require_POST
def check_view(request: HttpRequest) -> JsonResponse:
    """POST {environment, agentType, config}: the problems saving would report, each with
    its path in the config, as `{"errors": [{"loc", "msg"}]}` (none: an empty list).
    Without an environment, the problems of the config's shape only."""
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return JsonResponse({"errors": [{"loc": [], "msg": "the request is not JSON"}]}, status=400)
    if not isinstance(body, dict):
        return JsonResponse({"errors": [{"loc": [], "msg": "expected an object"}]}, status=400)
    agent_type = _agent_type(body.get("agentType"))
    chosen = str(body.get("environment") or "") or None
    try:
        if chosen is None:
            # No environment chosen yet: the shape (keys, types, ranges) needs none; the
            # page says that the catalogs' checks wait for one.
            config_parse(agent_type, body.get("config"))
        else:
            config_validate(
                user=request_user(request),
                environment=_environment(request, chosen),
                agent_type=agent_type,
                data=body.get("config"),
                loc=(),
            )
    except Invalid as exc:
        return JsonResponse({"errors": [e.as_dict() for e in exc.errors]})
    except DomainError as exc:
        return JsonResponse({"errors": [{"loc": [], "msg": exc.detail}]})
    return JsonResponse({"errors": []})


# ---------------------------------------------------------------- the widget


# The add page's "Start from" select: posted with the form (no field reads it), so that a
# page shown again after a failed save shows the template it was started from.
TEMPLATE_FIELD = "config_template"


class ConfigEditorWidget(forms.Textarea):
    """The config textarea, turned into the editor by agents/config_editor.js (without
    script it stays a textarea that works). On the add page it offers the templates."""

    template_name = "admin/agents/widgets/config_editor.html"

    class Media:
        css = {"all": ["agents/config_editor.css"]}
        js = ["agents/vendor/config-editor.js", "agents/config_editor.js"]

    def __init__(
        self,
        *,
        environment: Environment | None = None,
        agent_type: str = "",
        add: bool = False,
        template: str = "",
    ) -> None:
        super().__init__(attrs={"rows": 24, "cols": 100, "class": "config-editor-source"})
        self.environment = environment
        self.agent_type = agent_type
        self.add = add
        self.template = template

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["editor"] = {
            "schemaUrl": reverse("admin:agents_agent_config_schema"),
            "checkUrl": reverse("admin:agents_agent_config_check"),
            "environment": str(self.environment.pk) if self.environment else "",
            "agentType": self.agent_type,
            "templates": _templates() if self.add else [],
        }
        context["template_field"] = TEMPLATE_FIELD
        context["template_chosen"] = self.template
        return context


def _templates() -> list[dict[str, Any]]:
    return [
        {"key": key, "label": label, "agentType": example["agentType"], "config": example["config"]}
        for key, (label, example) in TEMPLATES.items()
    ]
