"""The admin of environments (each with its count of live agents), of API clients (minted
through the service, their secret shown once) and of users (Django's pages, with their rate
limits inline). Registered with the admin's other pages by agents.admin."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from guardian.admin import GuardedModelAdmin, ReinforcedGuardedModelAdminMixin
from guardian.shortcuts import get_perms

from agentbuilder.admin_forms import form_for_user, model_fields
from agentbuilder.errors import PermissionDenied
from agentbuilder.scoped_admin import EnvironmentScopedAdmin, writable
from agentbuilder.users import User, request_user
from agents.access.admin_grants import AuditedPermissionsAdminMixin
from agents.access.api_clients import (
    IssuedClient,
    RateLimits,
    api_client_create,
    api_client_secret_rotate,
    api_client_update,
)
from agents.access.environments import environment_create
from agents.access.permissions import Action, environments_visible, environments_with
from agents.admin.forms import ServiceForm
from agents.models import (
    MAX_RATE_LIMIT,
    RPM_HELP,
    TPM_HELP,
    APIClient,
    Environment,
    UserLimits,
)
from agents.webhooks.admin import rotate_webhook_secret

# The login page with single sign-on's button when it is on (agents.access.sso).
admin.site.login_template = "admin/agents/login.html"


class EnvironmentAddForm(ServiceForm):
    """A new environment, through the service the API uses: the same rules, the audit log."""

    name = forms.CharField(max_length=100, help_text="Letters, digits, '-', '_', '.'")
    description = forms.CharField(max_length=200, required=False)

    class Meta:
        model = Environment
        exclude = model_fields(Environment)

    def apply(self, data: dict[str, Any]) -> Environment:
        return environment_create(
            user=self.user, name=data["name"], description=data["description"]
        )


@admin.register(Environment)
class EnvironmentAdmin(  # type: ignore[misc]
    AuditedPermissionsAdminMixin, ReinforcedGuardedModelAdminMixin, GuardedModelAdmin
):
    list_display = ("name", "description", "live_agents", "created_at")
    search_fields = ("name", "description")
    fields = ("name", "description")
    actions = (rotate_webhook_secret,)

    def get_form(
        self,
        request: HttpRequest,
        obj: Environment | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = EnvironmentAddForm
        return form_for_user(super().get_form(request, obj, change=change, **kwargs), request)

    def save_model(self, request: HttpRequest, obj: Environment, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
        # Added: the form's service call created it already.

    def get_queryset(self, request: HttpRequest) -> QuerySet[Environment]:
        envs = super().get_queryset(request)
        if not request.user.is_superuser:
            envs = envs.filter(pk__in=environments_visible(request_user(request)).values("pk"))
        alive = Q(agents__deleted_at__isnull=True)
        return envs.annotate(live_agent_count=Count("agents", filter=alive))

    @admin.display(description="agents", ordering="live_agent_count")
    def live_agents(self, env: Environment) -> int:
        return env.live_agent_count  # type: ignore[attr-defined]


class APIClientAddForm(ServiceForm):
    name = forms.CharField(max_length=100)
    environment = forms.ModelChoiceField(queryset=Environment.objects.all())
    permissions = forms.MultipleChoiceField(
        choices=[(action.value, action.name) for action in Action],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Granted to the client on the environment, so for every agent in it.",
    )
    # The model's bounds, which a form of no model fields does not check by itself.
    requests_per_minute = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_RATE_LIMIT, help_text=RPM_HELP
    )
    tokens_per_minute = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_RATE_LIMIT, help_text=TPM_HELP
    )
    issued: IssuedClient | None = None

    class Meta:
        model = APIClient
        exclude = model_fields(APIClient)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A client is minted in an environment its creator may change, as the admin's
        # other rows are; the select names no other.
        writable(cast(forms.ModelChoiceField, self.fields["environment"]), self.user)

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
        self.issued = api_client_create(
            name=data["name"],
            environment=environment,
            actions=actions,
            limits=RateLimits(data["requests_per_minute"], data["tokens_per_minute"]),
            user=self.user,
        )
        return self.issued.client


LIMITS_FIELDSET = (
    "Rate limits (docs/api.md#rate-limits)",
    {"fields": ("requests_per_minute", "tokens_per_minute")},
)


@admin.action(description="Rotate the secret (shown once; its tokens stop working)")
def rotate_client_secret(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[APIClient]
) -> None:
    user = request_user(request)
    for client in queryset.select_related("environment"):
        if not modeladmin.has_change_permission(request, client):
            modeladmin.message_user(request, f"{client}: rotating needs EDIT.", messages.WARNING)
            continue
        secret = api_client_secret_rotate(user=user, client=client)
        modeladmin.message_user(
            request,
            f"Client id: {client.client_id}  New secret: {secret}  "
            "Copy the secret now: it will not be shown again.",
            messages.WARNING,
        )


@admin.register(APIClient)
class APIClientAdmin(EnvironmentScopedAdmin):
    actions = (rotate_client_secret,)
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
            return [(None, {"fields": ("name", "environment", "permissions")}), LIMITS_FIELDSET]
        return [(None, {"fields": ("name", "enabled", *self.readonly_fields)}), LIMITS_FIELDSET]

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
        if change:  # through the service, so that the change is in the audit log
            data = form.cleaned_data
            api_client_update(
                user=request_user(request),
                client=APIClient.objects.get(pk=obj.pk),  # as stored: the record's "from"
                name=data["name"],
                enabled=data["enabled"],
                limits=RateLimits(data["requests_per_minute"], data["tokens_per_minute"]),
            )
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


class UserLimitsInline(admin.StackedInline):
    model = UserLimits
    can_delete = True
    max_num = 1
    verbose_name_plural = "rate limits (docs/api.md#rate-limits; an API client's are its own)"


if admin.site.is_registered(User):
    admin.site.unregister(User)  # Django's page, registered first, with the limits inline


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    inlines = (*DjangoUserAdmin.inlines, UserLimitsInline)
