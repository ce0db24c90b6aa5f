"""The admin for staff: environments, agents and their versions, the model catalog, API clients.

Agents and API clients are written through the services, like the API's writes, so the same
permission checks and validation apply and versions stay append-only.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import Count, Max, Q, QuerySet
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from guardian.admin import GuardedModelAdmin, ReinforcedGuardedModelAdminMixin
from guardian.shortcuts import get_perms

from agentbuilder.errors import DomainError, ErrorItem, Invalid, PermissionDenied
from agents import selectors, services
from agents.models import Agent, AgentType, AgentVersion, APIClient, Environment, LLMModel
from agents.permissions import Action, agents_with, environments_visible, environments_with

# Where an error located on the wire ("body", "displayName", …) shows in an admin form.
FORM_FIELDS = {
    "name": "name",
    "displayName": "display_name",
    "description": "description",
    "agentType": "agent_type",
    "config": "config",
}
DIFF_STYLES = {"+": "background:#e6ffec", "-": "background:#ffebe9", "@": "color:#57606a"}
PRE_STYLE = "font-size:12px; line-height:1.4; white-space:pre-wrap"


def config_text(config: Any) -> str:
    # Sorted: jsonb keeps keys in its own order (shortest first), which reads as random.
    return json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False)


def config_diff(old: AgentVersion, new: AgentVersion) -> SafeString | str:
    """A unified diff of two configs, each line escaped by format_html_join."""
    lines = difflib.unified_diff(
        config_text(old.config).splitlines(),
        config_text(new.config).splitlines(),
        fromfile=f"v{old.number}",
        tofile=f"v{new.number}",
        lineterm="",
    )
    rows = (
        ("font-weight:bold" if line[:3] in ("---", "+++") else DIFF_STYLES.get(line[:1], ""), line)
        for line in lines
    )
    body = format_html_join("", '<span style="display:block; {}">{}</span>', rows)
    if not body:
        return f"Same config as v{old.number}."
    return format_html('<pre style="{}">{}</pre>', PRE_STYLE, body)


def model_fields(model: type[models.Model]) -> list[str]:
    return [field.name for field in model._meta.concrete_fields]


# ---------------------------------------------------------------- forms


class ConfigField(forms.JSONField):
    """A JSON textarea that shows configs indented and says where broken JSON breaks."""

    widget = forms.Textarea(attrs={"rows": 24, "cols": 100, "style": "font-family:monospace"})

    def prepare_value(self, value: Any) -> Any:
        return value if isinstance(value, InvalidJSONInput) else config_text(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip():
            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                msg = f"config: invalid JSON, {exc.msg} at line {exc.lineno} column {exc.colno}"
                raise forms.ValidationError(msg, code="invalid") from None
        return super().to_python(value)


class ServiceForm(forms.ModelForm):
    """A form that writes through a service while it validates.

    The services check and write in one step, so calling them here is what turns their
    domain errors into form errors. The savepoint undoes a half-done change (a rename
    before a refused config), and the admin's transaction still wraps the whole request.
    The model's own validation is skipped (every model field is excluded): it would only
    repeat the service's rules with vaguer messages.
    """

    user: Any = None  # set for each request by the admin

    def apply(self, data: dict[str, Any]) -> models.Model:
        raise NotImplementedError

    def clean(self) -> dict[str, Any]:
        super().clean()
        if self.errors:
            return self.cleaned_data
        try:
            with transaction.atomic():
                self.instance = self.apply(self.cleaned_data)
        except Invalid as exc:
            for item in exc.errors:
                self._add_located_error(item)
        except DomainError as exc:
            self.add_error(None, exc.detail)
        return self.cleaned_data

    def _add_located_error(self, item: ErrorItem) -> None:
        loc = item.loc[1:] if item.loc[:1] == ("body",) else item.loc
        field = FORM_FIELDS.get(str(loc[0])) if loc else None
        message = f"{'.'.join(map(str, loc))}: {item.msg}" if loc else item.msg
        self.add_error(field if field in self.fields else None, message)


class AgentFieldsForm(ServiceForm):
    name = forms.CharField(max_length=100, help_text="Letters, digits, '-', '_' and '.'.")
    display_name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(max_length=200, required=False)
    config = ConfigField()
    version_label = forms.CharField(max_length=100, required=False)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    class Meta:
        model = Agent
        exclude = model_fields(Agent)  # noqa: DJ006 - see ServiceForm


class AgentAddForm(AgentFieldsForm):
    environment = forms.ModelChoiceField(queryset=Environment.objects.none())
    agent_type = forms.ChoiceField(choices=AgentType.choices)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        env_field = cast(forms.ModelChoiceField, self.fields["environment"])
        env_field.queryset = environments_with(self.user, Action.CREATE)

    def apply(self, data: dict[str, Any]) -> Agent:
        agent, _ = services.agent_create(
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
            "config": self.latest.config if self.latest else None,
            **(kwargs.get("initial") or {}),
        }
        super().__init__(*args, **kwargs)

    def apply(self, data: dict[str, Any]) -> Agent:
        old = self.instance
        agent = selectors.agent_get(
            user=self.user, environment=old.environment, agent_id=old.pk, action=Action.EDIT
        )
        fields = ("name", "display_name", "description")
        changes = {f: data[f] for f in fields if data[f] != getattr(agent, f)}
        if changes:
            agent = services.agent_update(user=self.user, agent=agent, changes=changes)
        config = data["config"] if self._config_changed(agent, data["config"]) else None
        if config is not None or data["version_label"] or data["notes"]:
            services.version_add(
                user=self.user,
                agent=agent,
                config=config,
                version_label=data["version_label"],
                notes=data["notes"],
            )
        return agent

    def _config_changed(self, agent: Agent, config: Any) -> bool:
        # Compared in stored form, so dropping a key that only restated a default adds no
        # version; validating here also reports errors before anything is written.
        stored = services.config_validate(
            user=self.user,
            environment=agent.environment,
            agent_type=agent.agent_type,
            data=config,
            loc=("body", "config"),
        )
        return self.latest is None or stored != self.latest.config


class APIClientAddForm(ServiceForm):
    name = forms.CharField(max_length=100)
    environment = forms.ModelChoiceField(queryset=Environment.objects.all())
    permissions = forms.MultipleChoiceField(
        choices=[(action.value, action.name) for action in Action],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Granted to the client on the environment, so for every agent in it.",
    )
    issued: services.IssuedClient | None = None

    class Meta:
        model = APIClient
        exclude = model_fields(APIClient)  # noqa: DJ006 - see ServiceForm

    def apply(self, data: dict[str, Any]) -> APIClient:
        environment = data["environment"]
        actions = [Action(value) for value in data["permissions"]]
        # Minting a client must not hand out more than its creator holds.
        missing = [
            a.name for a in actions if not environments_with(self.user, a).contains(environment)
        ]
        if missing:
            raise PermissionDenied(
                f"You cannot grant {', '.join(missing)} in environment '{environment.name}': "
                "you do not hold it there."
            )
        self.issued = services.api_client_create(
            name=data["name"], environment=environment, actions=actions
        )
        return self.issued.client


def form_for_user(form: type[forms.ModelForm], request: HttpRequest) -> type[forms.ModelForm]:
    # ModelAdmin.get_form builds a fresh class on every request, so this is per request.
    form.user = request.user  # type: ignore[attr-defined]
    return form


# ---------------------------------------------------------------- environments


@admin.register(Environment)
class EnvironmentAdmin(ReinforcedGuardedModelAdminMixin, GuardedModelAdmin):  # type: ignore[misc]
    list_display = ("name", "description", "live_agents", "created_at")
    search_fields = ("name", "description")
    fields = ("name", "description")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Environment]:
        envs = super().get_queryset(request)
        if not request.user.is_superuser:
            envs = envs.filter(pk__in=environments_visible(request.user).values("pk"))
        alive = Q(agents__deleted_at__isnull=True)
        return envs.annotate(live_agent_count=Count("agents", filter=alive))

    @admin.display(description="agents", ordering="live_agent_count")
    def live_agents(self, env: Environment) -> int:
        return env.live_agent_count  # type: ignore[attr-defined]


# ---------------------------------------------------------------- agents and versions


class VersionInline(admin.TabularInline):
    model = AgentVersion
    fields = ("version", "version_label", "notes", "created_at", "created_by")
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


class StatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("deleted", "Deleted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> QuerySet[Agent]:
        if self.value() in ("active", "deleted"):
            return queryset.filter(deleted_at__isnull=self.value() == "active")
        return queryset


ABOUT = ("environment", "agent_type", "status", "created_at", "created_by", "modified_at")
VERSION_HELP = (
    "Saving a changed config, or a version label or notes, adds a new version. "
    "Earlier versions never change."
)


@admin.register(Agent)
class AgentAdmin(ReinforcedGuardedModelAdminMixin, GuardedModelAdmin):  # type: ignore[misc]
    form = AgentAddForm
    list_display = ("name", "environment", "agent_type", "status", "latest", "modified_at")
    list_filter = ("environment", "agent_type", StatusFilter)
    list_select_related = ("environment",)
    search_fields = ("name", "display_name", "description")
    inlines = [VersionInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        agents = super().get_queryset(request)
        if not request.user.is_superuser:
            agents = agents.filter(pk__in=agents_with(request.user, Action.READ).values("pk"))
        return agents.annotate(latest_number=Max("versions__number"))

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
        return agents_with(request.user, action).filter(pk=agent.pk).exists()

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through the services while it validated."""

    def delete_model(self, request: HttpRequest, obj: Agent) -> None:
        services.agent_delete(user=request.user, agent=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            services.agent_delete(user=request.user, agent=agent)

    def get_deleted_objects(
        self, objs: Iterable[Agent], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # A soft delete keeps versions and runs, so only the agents are listed; an agent the
        # user may not DELETE (or one already deleted) refuses the whole batch.
        agents = list(objs)
        pks = [agent.pk for agent in agents]
        deletable = agents_with(request.user, Action.DELETE).filter(pk__in=pks).count()
        refused = {str(Agent._meta.verbose_name)} if deletable < len(agents) else set()
        return (
            [str(a) for a in agents],
            {str(Agent._meta.verbose_name_plural): len(agents)},
            refused,
            [],
        )

    @admin.display(description="latest version", ordering="latest_number")
    def latest(self, agent: Agent) -> str:
        number = getattr(agent, "latest_number", None)
        return f"v{number}" if number else "-"

    @admin.display(description="config of the latest version")
    def latest_config(self, agent: Agent) -> SafeString | str:
        latest = agent.versions.order_by("-number").first()
        if latest is None:
            return "-"
        return format_html('<pre style="{}">{}</pre>', PRE_STYLE, config_text(latest.config))


@admin.register(AgentVersion)
class AgentVersionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "notes", "created_at", "created_by")
    list_filter = ("agent__environment", "agent__agent_type")
    list_select_related = ("agent", "created_by")
    search_fields = ("agent__name", "version_label", "notes")
    fields = (
        "agent_link",
        "number",
        "version_label",
        "notes",
        "created_at",
        "created_by",
        "config_pretty",
        "changes",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentVersion]:
        versions = super().get_queryset(request)
        if not request.user.is_superuser:
            readable = agents_with(request.user, Action.READ).values("pk")
            versions = versions.filter(agent__in=readable)
        return versions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="agent")
    def agent_link(self, version: AgentVersion) -> SafeString:
        url = reverse("admin:agents_agent_change", args=[version.agent_id])
        return format_html('<a href="{}">{}</a>', url, version.agent)

    @admin.display(description="config")
    def config_pretty(self, version: AgentVersion) -> SafeString:
        return format_html('<pre style="{}">{}</pre>', PRE_STYLE, config_text(version.config))

    @admin.display(description="changes from the previous version")
    def changes(self, version: AgentVersion) -> SafeString | str:
        previous = (
            version.agent.versions.filter(number__lt=version.number).order_by("-number").first()
        )
        if previous is None:
            return "The first version: nothing to compare with."
        return config_diff(previous, version)


# ---------------------------------------------------------------- catalog and clients


class LLMModelForm(forms.ModelForm):
    agent_types = forms.MultipleChoiceField(
        choices=AgentType.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = LLMModel
        fields = ("id", "name", "provider", "agent_types", "capabilities", "enabled")


@admin.register(LLMModel)
class LLMModelAdmin(admin.ModelAdmin):
    form = LLMModelForm
    list_display = ("id", "name", "provider", "agent_types", "capabilities", "enabled")
    list_filter = ("provider", "enabled")
    search_fields = ("id", "name")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A changed primary key would save a second row and leave the first behind.
        return ("id",) if obj else ()


@admin.register(APIClient)
class APIClientAdmin(admin.ModelAdmin):
    list_display = ("name", "client_id", "environment", "enabled", "created_at", "last_used_at")
    list_filter = ("environment", "enabled")
    list_select_related = ("environment",)
    search_fields = ("name", "client_id")
    readonly_fields = (
        "client_id",
        "environment",
        "granted",
        "service_user",
        "created_at",
        "last_used_at",
    )

    def get_fieldsets(self, request: HttpRequest, obj: APIClient | None = None) -> Any:
        if obj is None:
            return [(None, {"fields": ("name", "environment", "permissions")})]
        return [(None, {"fields": ("name", "enabled", *self.readonly_fields)})]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.readonly_fields if obj else ()

    def get_form(
        self,
        request: HttpRequest,
        obj: APIClient | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = APIClientAddForm
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: APIClient, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = form.issued
        self.message_user(
            request,
            f"Client id: {issued.client.client_id}  Secret: {issued.secret}  "
            "Copy the secret now: it will not be shown again.",
            messages.WARNING,
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Disable instead: deleting would leave the service user and its grants behind.
        return False

    @admin.display(description="permissions on the environment")
    def granted(self, client: APIClient) -> str:
        held = get_perms(client.service_user, client.environment)
        return ", ".join(action.name for action in Action if action.value in held) or "-"
