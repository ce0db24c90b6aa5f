"""The admin's "Try retrieval" page: a query and an HxQL filter run through the retrieval of a
RAG config without a model, by the same calls as POST /v1/search (retrieval.rag), in an
environment the user may READ. With a RAG agent chosen, its latest version's settings are
the base and the form's fields override them as a request's would; without one, the
defaults, as /v1/search takes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django import forms
from django.contrib.admin import AdminSite
from django.contrib.admin.helpers import AdminForm
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse

from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import User, request_user
from retrieval.access import Grant, document_access
from retrieval.configs import RagSettings
from retrieval.models import Document
from retrieval.nodes import Node, context_str
from retrieval.rag import search_now, search_request
from retrieval.search import SearchRequest

MODES = [
    ("", "As configured (hybrid by default)"),
    ("hybrid", "Hybrid: vector and full text"),
    ("vector", "Vector only"),
]
FIELDSETS: list[tuple[str | None, dict[str, Any]]] = [
    (None, {"fields": ("environment", "agent", "query", "hxql_query")}),
    ("Overrides", {"fields": ("mode", "limit", "reranker_top_n")}),
]
# Where a located error of search_request lands in this form.
FORM_FIELDS = {"hxqlQuery": "hxql_query"}


class AgentChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.environment.name} / {obj.name}"


class RetrievalForm(forms.Form):
    # Their querysets are the user's, set in __init__.
    environment: forms.ModelChoiceField[Any] = forms.ModelChoiceField(
        queryset=None, help_text="Environments you may READ."
    )
    agent = AgentChoice(
        queryset=None,
        required=False,
        empty_label="None: the default settings, as POST /v1/search",
        help_text="A RAG agent of the environment: its latest version's retrieval settings.",
    )
    # Not stripped: the query is embedded as typed, as the API takes it.
    query = forms.CharField(
        max_length=10_000, strip=False, widget=forms.TextInput(attrs={"size": 80})
    )
    hxql_query = forms.CharField(
        label="HxQL filter",
        max_length=10_000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80, "style": "font-family:monospace"}),
        help_text="e.g. SELECT * FROM SysContent WHERE department = 'HR'. "
        "Empty: the agent's filter, or every document.",
    )
    mode = forms.ChoiceField(choices=MODES, required=False, label="Search")
    limit = forms.IntegerField(
        min_value=1, max_value=1000, required=False, help_text="Candidates before reranking."
    )
    reranker_top_n = forms.IntegerField(
        min_value=1, max_value=100, required=False, label="Top N", help_text="Hits kept."
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.result: Retrieval | None = None
        access = document_access()
        environments = access.environments_with(user, Grant.READ).order_by("name")
        cast(forms.ModelChoiceField, self.fields["environment"]).queryset = environments
        agents = access.rag_agents(user)
        cast(forms.ModelChoiceField, self.fields["agent"]).queryset = agents.select_related(
            "environment"
        ).order_by("environment__name", "name")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        environment = data["environment"]
        agent = data.get("agent")
        if agent is not None and agent.environment_id != environment.pk:
            self.add_error("agent", f"{agent.name} is not an agent of {environment.name}.")
            return data
        try:
            self.result = self._search(environment, agent, data)
        except Invalid as exc:
            for item in exc.errors:
                field = FORM_FIELDS.get(str(item.loc[-1]))
                where = ".".join(map(str, item.loc))
                self.add_error(field, item.msg if field else f"{where}: {item.msg}")
        except DomainError as exc:  # READ withdrawn meanwhile, an embedder or reranker down
            self.add_error(None, exc.detail)
        return data

    def _search(self, environment: Any, agent: Any, data: dict[str, Any]) -> Retrieval:
        access = document_access()
        access.require(self.user, environment, Grant.READ)
        rag = access.rag_settings(agent) if agent is not None else RagSettings()
        overrides = {
            "hxql_query": data["hxql_query"].strip() or None,
            "hybrid_search": {"hybrid": True, "vector": False}.get(data["mode"]),
            "limit": data["limit"],
            "reranker_top_n": data["reranker_top_n"],
        }
        template = search_request(rag, overrides)
        nodes = search_now(environment_id=environment.pk, template=template, query=data["query"])
        hxql = overrides["hxql_query"] or rag.hxql_query
        return Retrieval(nodes=nodes, request=template, hxql_query=hxql)


@dataclass(frozen=True)
class Retrieval:
    nodes: list[Node]
    request: SearchRequest  # the settings it ran with (its query left empty)
    hxql_query: str

    def hits(self) -> list[dict[str, Any]]:
        """Each node as sourceNodes lists it, with its document's title and page."""
        return [
            {
                **n.source_node(),
                "title": n.title,
                "position": n.position,
                "url": reverse("admin:retrieval_document_change", args=[n.document_id]),
            }
            for n in self.nodes
        ]

    def context(self) -> str:
        return context_str(self.nodes)


def search_page(site: AdminSite, request: HttpRequest) -> TemplateResponse:
    """A GET form: a search changes nothing, and its address can be shared."""
    bound = "query" in request.GET
    form = RetrievalForm(
        request.GET if bound else None, user=request_user(request), initial=_initial(request)
    )
    if bound:
        form.is_valid()
    context = {
        **site.each_context(request),
        "title": "Try retrieval",
        "opts": Document._meta,
        "adminform": AdminForm(cast(Any, form), FIELDSETS, {}),  # a plain form does
        "form": form,
        "errors": form.errors if bound else None,
        "result": form.result,
    }
    return TemplateResponse(request, "admin/retrieval/document/search.html", context)


def _initial(request: HttpRequest) -> dict[str, Any]:
    environments = list(document_access().environments_with(request_user(request), Grant.READ)[:2])
    return {"environment": environments[0].pk} if len(environments) == 1 else {}
