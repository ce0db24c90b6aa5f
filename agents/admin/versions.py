"""The admin of agent versions: read-only, each with its config and the diff from the last."""

from __future__ import annotations

import difflib
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agentbuilder.users import request_user
from agents.access.permissions import Action, agents_with
from agents.admin.forms import (
    PRE_STYLE,
    config_text,
)
from agents.models import AgentVersion

DIFF_STYLES = {"+": "background:#e6ffec", "-": "background:#ffebe9", "@": "color:#57606a"}


def config_diff(old: AgentVersion, new: AgentVersion) -> SafeString | str:
    """A unified diff of two configs, each line escaped by format_html_join."""
    lines = difflib.unified_diff(
        config_text(old.config_shown).splitlines(),
        config_text(new.config_shown).splitlines(),
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


@admin.register(AgentVersion)
class AgentVersionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "notes", "created_at", "created_by")
    # Only the environments of rows the user sees (Django's filter names them all).
    list_filter = (("agent__environment", admin.RelatedOnlyFieldListFilter), "agent__agent_type")
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
            readable = agents_with(request_user(request), Action.READ).values("pk")
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
        return format_html('<pre style="{}">{}</pre>', PRE_STYLE, config_text(version.config_shown))

    @admin.display(description="changes from the previous version")
    def changes(self, version: AgentVersion) -> SafeString | str:
        previous = (
            version.agent.versions.filter(number__lt=version.number).order_by("-number").first()
        )
        if previous is None:
            return "The first version: nothing to compare with."
        return config_diff(previous, version)
