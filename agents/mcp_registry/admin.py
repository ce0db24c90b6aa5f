"""The admin for MCP servers, written through the registry's services like the API's writes
(same address guard, same permission checks). Header values are write-only: the form shows
their names and takes new values, never displays the stored ones."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agentbuilder.admin_forms import form_for_user, model_fields
from agentbuilder.errors import ErrorItem
from agentbuilder.scoped_admin import EnvironmentScopedAdmin
from agentbuilder.users import request_user
from agents.access.permissions import Action, environments_with
from agents.admin.forms import ServiceForm
from agents.mcp_registry import services
from agents.models import Environment, McpServer, McpTransport

HEADERS_HELP = (
    "One 'Name: value' per line. Values are stored encrypted and never shown again. "
    "Leave empty to keep the current headers; a new host in the URL drops them."
)


class HeadersField(forms.CharField):
    widget = forms.Textarea(attrs={"rows": 3, "cols": 80, "placeholder": "Authorization: Bearer …"})

    def to_python(self, value: Any) -> dict[str, str] | None:  # type: ignore[override]
        text = super().to_python(value) or ""
        if not text.strip():
            return None
        headers: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            name, colon, header_value = line.partition(":")
            if not colon or not name.strip():
                raise forms.ValidationError(f"line {number}: write 'Name: value'")
            headers[name.strip()] = header_value.strip()
        return headers


class McpServerForm(ServiceForm):
    environment = forms.ModelChoiceField(
        queryset=Environment.objects.none(),
        required=False,
        help_text="Empty: a global server, for every environment (superusers only).",
    )
    name = forms.CharField(max_length=100, help_text="Letters, digits, '-', '_' and '.'.")
    description = forms.CharField(max_length=200, required=False)
    url = forms.CharField(max_length=2000, help_text="http(s) URL of the MCP endpoint.")
    transport = forms.ChoiceField(choices=McpTransport.choices)
    timeout = forms.FloatField(initial=30.0, min_value=0.1, max_value=300, help_text="Seconds.")
    enabled = forms.BooleanField(required=False, initial=True)
    headers = HeadersField(required=False, help_text=HEADERS_HELP)
    clear_headers = forms.BooleanField(required=False, help_text="Remove every header.")

    class Meta:
        model = McpServer
        exclude = model_fields(McpServer)  # see ServiceForm

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        instance: McpServer | None = kwargs.get("instance")
        if instance is not None:
            kwargs["initial"] = {
                "environment": instance.environment,
                "name": instance.name,
                "description": instance.description,
                "url": instance.url,
                "transport": instance.transport,
                "timeout": instance.timeout,
                "enabled": instance.enabled,
                **(kwargs.get("initial") or {}),
            }
        super().__init__(*args, **kwargs)
        env_field = cast(forms.ModelChoiceField, self.fields["environment"])
        env_field.queryset = environments_with(self.user, Action.EDIT)
        if instance is not None:
            env_field.disabled = True  # a server stays where it was registered
            names = ", ".join(instance.header_names) or "none"
            self.fields["headers"].help_text = f"Current headers: {names}. {HEADERS_HELP}"
        else:
            del self.fields["clear_headers"]

    def apply(self, data: dict[str, Any]) -> McpServer:
        fields = {key: data[key] for key in ("name", "description", "url", "transport", "timeout")}
        fields["enabled"] = data["enabled"]
        if self.instance._state.adding:  # a new row's uuid is set already
            return services.mcp_server_create(
                user=self.user,
                environment=data["environment"],
                headers=data["headers"] or {},
                **fields,
            )
        if data.get("clear_headers"):
            fields["headers"] = {}
        elif data["headers"] is not None:
            fields["headers"] = data["headers"]
        return services.mcp_server_update(user=self.user, server=self.instance, changes=fields)

    def _add_located_error(self, item: ErrorItem) -> None:
        loc = item.loc[1:] if item.loc[:1] == ("body",) else item.loc
        field = str(loc[0]) if loc else None
        if field in self.fields:
            self.add_error(field, item.msg)
        else:
            super()._add_located_error(item)


@admin.register(McpServer)
class McpServerAdmin(EnvironmentScopedAdmin):
    form = McpServerForm
    list_display = ("name", "scope", "url", "transport", "enabled", "headers_kept", "modified_at")
    list_filter = ("enabled", "transport", "environment")
    list_select_related = ("environment",)
    global_rows = True
    search_fields = ("name", "url", "description")
    readonly_fields = ("header_names", "created_at", "created_by", "modified_at")

    def get_fields(self, request: HttpRequest, obj: McpServer | None = None) -> Any:
        fields = ["environment", "name", "description", "url", "transport", "timeout", "enabled"]
        if obj is None:
            return [*fields, "headers"]
        return [*fields, "header_names", "headers", "clear_headers", *self.readonly_fields[1:]]

    def get_readonly_fields(
        self, request: HttpRequest, obj: McpServer | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else self.readonly_fields

    def get_form(
        self,
        request: HttpRequest,
        obj: McpServer | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        """Nothing left to do: the form saved through the services while it validated."""

    def delete_model(self, request: HttpRequest, obj: McpServer) -> None:
        services.mcp_server_delete(user=request_user(request), server=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset.select_related("environment"):
            services.mcp_server_delete(user=request_user(request), server=server)

    @admin.display(description="scope", ordering="environment__name")
    def scope(self, server: McpServer) -> str:
        return server.environment.name if server.environment else "global"

    @admin.display(description="headers")
    def headers_kept(self, server: McpServer) -> str:
        return ", ".join(server.header_names) or "-"
