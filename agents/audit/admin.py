"""The audit log in the admin: a read-only list with filters, of the environments on which
the user holds AUDIT (a superuser: all, with the records of no environment)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from agentbuilder.scoped_admin import EnvironmentScopedAdmin
from agentbuilder.users import request_user
from agents.admin.forms import PRE_STYLE
from agents.audit.selectors import audited_environments
from agents.models import AuditRecord


@admin.register(AuditRecord)
class AuditRecordAdmin(EnvironmentScopedAdmin):
    global_rows = True  # a superuser's view of changes outside every environment
    list_display = ("at", "actor_name", "action", "object_type", "object_repr", "surface", "ip")
    list_filter = (
        "action",
        "object_type",
        "surface",
        "environment",
        ("at", admin.DateFieldListFilter),
    )
    search_fields = ("object_id", "object_repr", "actor_name")
    date_hierarchy = "at"
    fields = (
        "at",
        "environment",
        "actor",
        "actor_name",
        "action",
        "object_type",
        "object_id",
        "object_repr",
        "changes_shown",
        "surface",
        "ip",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditRecord]:
        records = super().get_queryset(request)
        user = request_user(request)
        if user.is_superuser:
            return records
        # READ lets one see an environment's rows; its audit log needs AUDIT, as the API's.
        return records.filter(environment__in=audited_environments(user))

    # Append-only: nobody adds, changes or deletes a record here (the database refuses too).
    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="changes")
    def changes_shown(self, record: AuditRecord) -> str:
        text = json.dumps(record.changes, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre style="{}">{}</pre>', PRE_STYLE, text)
