"""The admin of environments: each with its count of live agents."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from guardian.admin import GuardedModelAdmin, ReinforcedGuardedModelAdminMixin

from agents.models import Environment
from agents.permissions import environments_visible


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
