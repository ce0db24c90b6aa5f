"""The admin of agents, written through the services like the API's writes, so the same
permission checks and validation apply and versions stay append-only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import Max, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from guardian.admin import GuardedModelAdmin, ReinforcedGuardedModelAdminMixin

from agentbuilder.admin_forms import form_for_user, model_fields
from agentbuilder.users import request_user
from agents.access.admin_grants import AuditedPermissionsAdminMixin
from agents.access.permissions import Action, agents_with, environments_with, may_flag
from agents.admin.aliases import aliases_page
from agents.admin.compare import compare_page
from agents.admin.config_editor import (
    TEMPLATE_FIELD,
    ConfigEditorWidget,
    check_view,
    schema_view,
)
from agents.admin.forms import (
    PRE_STYLE,
    ConfigField,
    ServiceForm,
    config_text,
)
from agents.admin.run_page import WIDE_LIST
from agents.evals.admin_urls import experiment_urls
from agents.evals.from_runs import PlaygroundCaseView, PlaygroundFeedbackView
from agents.examples import TEMPLATES
from agents.models import Agent, AgentType, AgentVersion, Environment
from agents.protocols.playground.views import (
    PlaygroundApprovalsView,
    PlaygroundCancelView,
    PlaygroundRunView,
    PlaygroundStreamView,
    playground_page,
)
from agents.selectors.agents import agent_get
from agents.services.agents import agent_create, agent_delete, agent_update
from agents.services.config_check import config_validate
from agents.services.versions import version_add


class AgentFieldsForm(ServiceForm):
    name = forms.CharField(max_length=100, help_text="Letters, digits, '-', '_' and '.'.")
    display_name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(max_length=200, required=False)
    config = ConfigField()
    version_label = forms.CharField(max_length=100, required=False)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    class Meta:
        model = Agent
        exclude = model_fields(Agent)


class AgentAddForm(AgentFieldsForm):
    environment = forms.ModelChoiceField(queryset=Environment.objects.none())
    agent_type = forms.ChoiceField(choices=AgentType.choices)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        env_field = cast(forms.ModelChoiceField, self.fields["environment"])
        env_field.queryset = environments_with(self.user, Action.CREATE)
        only = list(env_field.queryset[:2])
        if len(only) == 1:
            # Nothing to choose: chosen, so the editor completes and checks at once.
            env_field.initial, env_field.empty_label = only[0].pk, None
        # A new agent starts from a working example, not from `null`.
        _, first = next(iter(TEMPLATES.values()))
        self.fields["agent_type"].initial = first["agentType"]
        self.fields["config"].initial = first["config"]
        # The template chosen before a failed save stays chosen, as the type and config do.
        chosen = self.data.get(TEMPLATE_FIELD, "") if self.is_bound else ""
        self.fields["config"].widget = ConfigEditorWidget(add=True, template=chosen)

    def apply(self, data: dict[str, Any]) -> Agent:
        agent, _ = agent_create(
            user=self.user,
            environment=data["environment"],
            name=data["name"],
            display_name=data["display_name"],
            description=data["description"],
            agent_type=data["agent_type"],
            version_label=data["version_label"],
            notes=data["notes"],
            config=data["config"],
        )
        return agent


class AgentChangeForm(AgentFieldsForm):
    """Renames through agent_update; a changed config (or a label or notes) adds a version."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: Agent = kwargs["instance"]
        self.latest = instance.versions.order_by("-number").first()
        kwargs["initial"] = {
            "name": instance.name,
            "display_name": instance.display_name,
            "description": instance.description,
            "config": self.latest.config_shown if self.latest else None,
            **(kwargs.get("initial") or {}),
        }
        super().__init__(*args, **kwargs)
        self.fields["config"].widget = ConfigEditorWidget(
            environment=instance.environment, agent_type=instance.agent_type
        )
        self.unchanged = False

    def apply(self, data: dict[str, Any]) -> Agent:
        old = self.instance
        agent = agent_get(
            user=self.user, environment=old.environment, agent_id=old.pk, action=Action.EDIT
        )
        fields = ("name", "display_name", "description")
        changes = {f: data[f] for f in fields if data[f] != getattr(agent, f)}
        if changes:
            agent = agent_update(user=self.user, agent=agent, changes=changes)
        config = data["config"] if self._config_changed(agent, data["config"]) else None
        if config is not None or data["version_label"] or data["notes"]:
            version_add(
                user=self.user,
                agent=agent,
                config=config,
                version_label=data["version_label"],
                notes=data["notes"],
            )
        else:
            self.unchanged = not changes
        return agent

    def _config_changed(self, agent: Agent, config: Any) -> bool:
        # Compared in stored form, so dropping a key that only restated a default adds no
        # version; validating here also reports errors before anything is written.
        stored = config_validate(
            user=self.user,
            environment=agent.environment,
            agent_type=agent.agent_type,
            data=config,
            loc=("body", "config"),
        )
        return self.latest is None or stored != self.latest.config


class VersionInline(admin.TabularInline):
    model = AgentVersion
    fields = (
        "version",
        "version_label",
        "notes",
        "created_at",
        "created_by",
        "compare",
        "promote",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "version history"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentVersion]:
        return super().get_queryset(request).select_related("created_by").defer("config")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="version")
    def version(self, version: AgentVersion) -> SafeString:
        url = reverse("admin:agents_agentversion_change", args=[version.pk])
        return format_html('<a href="{}">v{}</a>', url, version.number)

    @admin.display(description="promote")
    def promote(self, version: AgentVersion) -> SafeString:
        url = reverse("admin:agents_agent_aliases", args=[version.agent_id])
        return format_html('<a href="{}?version={}">Promote to…</a>', url, version.number)

    @admin.display(description="compare")
    def compare(self, version: AgentVersion) -> SafeString | str:
        if version.number == 1:
            return ""
        url = reverse("admin:agents_agent_compare", args=[version.agent_id])
        query = f"?a={version.number - 1}&b={version.number}"
        return format_html('<a href="{}{}">with v{}</a>', url, query, version.number - 1)


class DeletedFilter(admin.SimpleListFilter):
    """Deleted agents (soft-deleted: their versions and runs stay) are left out of the list
    unless asked for: "deleted: yes" lists only them, "all" both."""

    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("all", "All")]

    def choices(self, changelist: Any) -> Iterator[Any]:
        # Django's first choice is "All" for no value; here no value means "No".
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "No",
        }
        for value, label in self.lookup_choices:
            yield {
                "selected": self.value() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> QuerySet[Agent]:
        if self.value() == "all":
            return queryset
        return queryset.filter(deleted_at__isnull=self.value() != "yes")


NOTHING_CHANGED = (
    "Nothing changed: the config is the same as the latest version's, so no version was made."
)
ABOUT = ("environment", "agent_type", "status", "created_at", "created_by", "modified_at")
VERSION_HELP = (
    "Saving a changed config, or a version label or notes, adds a new version. "
    "Earlier versions never change."
)


@admin.register(Agent)
class AgentAdmin(AuditedPermissionsAdminMixin, ReinforcedGuardedModelAdminMixin, GuardedModelAdmin):
    form = AgentAddForm
    list_display = (
        "name",
        "environment",
        "agent_type",
        "status",
        "latest",
        "modified_at",
        "playground",
    )
    # Only the environments of rows the user sees (Django's filter names them all).
    list_filter = (("environment", admin.RelatedOnlyFieldListFilter), "agent_type", DeletedFilter)
    list_select_related = ("environment",)
    search_fields = ("name", "display_name", "description")
    inlines = [VersionInline]
    # guardian's page (its "Object permissions" link) plus a "Playground" link
    change_form_template = "admin/agents/agent/change_form.html"  # type: ignore[misc]

    def get_urls(self) -> list[URLPattern]:
        page = self.admin_site.admin_view(self.playground_view)
        stream = PlaygroundStreamView.as_view()
        return [
            path("<str:object_id>/playground/", page, name="agents_agent_playground"),
            path(
                "<str:object_id>/aliases/",
                self.admin_site.admin_view(self.aliases_view),
                name="agents_agent_aliases",
            ),
            path(
                "<str:object_id>/compare/",
                self.admin_site.admin_view(self.compare_view),
                name="agents_agent_compare",
            ),
            path(
                "config-schema/",
                self.admin_site.admin_view(schema_view),
                name="agents_agent_config_schema",
            ),
            path(
                "config-check/",
                self.admin_site.admin_view(check_view),
                name="agents_agent_config_check",
            ),
            path(
                "<str:object_id>/playground/stream/",
                stream,
                name="agents_agent_playground_stream",
            ),
            path(
                "<str:object_id>/playground/runs/<str:run_id>/",
                PlaygroundRunView.as_view(),
                name="agents_agent_playground_run",
            ),
            path(
                "<str:object_id>/playground/runs/<str:run_id>/cancel/",
                PlaygroundCancelView.as_view(),
                name="agents_agent_playground_cancel",
            ),
            path(
                "<str:object_id>/playground/runs/<str:run_id>/approvals/",
                PlaygroundApprovalsView.as_view(),
                name="agents_agent_playground_approvals",
            ),
            *experiment_urls(self.admin_site),
            path(
                "<str:object_id>/playground/runs/<str:run_id>/feedback/",
                PlaygroundFeedbackView.as_view(),
                name="agents_agent_playground_feedback",
            ),
            path(
                "<str:object_id>/playground/runs/<str:run_id>/dataset/",
                PlaygroundCaseView.as_view(),
                name="agents_agent_playground_case",
            ),
            *super().get_urls(),
        ]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        return super().changelist_view(request, {**(extra_context or {}), **WIDE_LIST})

    def playground_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        return playground_page(self.admin_site, request, object_id)

    def aliases_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return aliases_page(self.admin_site, request, object_id)

    def compare_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        return compare_page(self.admin_site, request, object_id)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        agents = super().get_queryset(request)
        if not request.user.is_superuser:
            agents = agents.filter(
                pk__in=agents_with(request_user(request), Action.READ).values("pk")
            )
        return agents.annotate(
            latest_number=Max("versions__number"),
            invocable=may_flag(request_user(request), Action.INVOKE),
        )

    def get_fieldsets(self, request: HttpRequest, obj: Agent | None = None) -> Any:
        if obj is None:
            agent = ("environment", "name", "display_name", "description", "agent_type")
            return [
                (None, {"fields": agent}),
                ("Version 1", {"fields": ("version_label", "notes", "config")}),
            ]
        if not self.has_change_permission(request, obj):
            names = ("name", "display_name", "description", *ABOUT, "modified_by")
            return [(None, {"fields": names}), ("Latest version", {"fields": ("latest_config",)})]
        return [
            (None, {"fields": ("name", "display_name", "description", *ABOUT)}),
            (
                "New version",
                {"fields": ("config", "version_label", "notes"), "description": VERSION_HELP},
            ),
        ]

    def get_readonly_fields(
        self, request: HttpRequest, obj: Agent | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else (*ABOUT, "modified_by", "latest_config")

    def get_inlines(self, request: HttpRequest, obj: Agent | None) -> list[Any]:
        return [] if obj is None else list(self.inlines)

    def get_form(
        self, request: HttpRequest, obj: Agent | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        kwargs["form"] = AgentAddForm if obj is None else AgentChangeForm
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def has_change_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or self._holds(request, obj, Action.EDIT))

    def has_delete_permission(self, request: HttpRequest, obj: Agent | None = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or self._holds(request, obj, Action.DELETE))

    def _holds(self, request: HttpRequest, agent: Agent, action: Action) -> bool:
        return agents_with(request_user(request), action).filter(pk=agent.pk).exists()

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        """Nothing left to write: the form saved through the services while it validated.
        A save that changed nothing says so, and made no version."""
        if getattr(form, "unchanged", False):
            self.message_user(request, NOTHING_CHANGED, messages.WARNING)
            obj.admin_unchanged = True  # type: ignore[attr-defined]

    def response_change(self, request: HttpRequest, obj: Agent) -> HttpResponse:
        if getattr(obj, "admin_unchanged", False):
            return HttpResponseRedirect(request.path)  # stay, without "changed successfully"
        return super().response_change(request, obj)

    def delete_model(self, request: HttpRequest, obj: Agent) -> None:
        agent_delete(user=request_user(request), agent=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            agent_delete(user=request_user(request), agent=agent)

    def get_deleted_objects(
        self, objs: Iterable[Agent], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # A soft delete keeps versions and runs, so only the agents are listed; an agent the
        # user may not DELETE (or one already deleted) refuses the whole batch.
        agents = list(objs)
        pks = [agent.pk for agent in agents]
        deletable = agents_with(request_user(request), Action.DELETE).filter(pk__in=pks).count()
        refused = {str(Agent._meta.verbose_name)} if deletable < len(agents) else set()
        return (
            [str(a) for a in agents],
            {str(Agent._meta.verbose_name_plural): len(agents)},
            refused,
            [],
        )

    @admin.display(description="try it")
    def playground(self, agent: Agent) -> SafeString | str:
        if agent.deleted_at is not None or not getattr(agent, "invocable", False):
            return ""  # a deleted agent cannot be invoked: its playground is a 404
        url = reverse("admin:agents_agent_playground", args=[agent.pk])
        return format_html('<a href="{}">Playground</a>', url)

    @admin.display(description="latest version", ordering="latest_number")
    def latest(self, agent: Agent) -> str:
        number = getattr(agent, "latest_number", None)
        return f"v{number}" if number else "-"

    @admin.display(description="config of the latest version")
    def latest_config(self, agent: Agent) -> SafeString | str:
        latest = agent.versions.order_by("-number").first()
        if latest is None:
            return "-"
        return format_html('<pre style="{}">{}</pre>', PRE_STYLE, config_text(latest.config_shown))
