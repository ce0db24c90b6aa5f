from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from agents.models import Run
from agents.runs.leases import runs_mark_failed


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of what happened: readable, filterable, never edited, except that
    a run stuck `in_progress` can be closed (its lease shows whether its process lives)."""

    list_display = [
        "id",
        "agent",
        "version_number",
        "protocol",
        "status",
        "started_at",
        "latency_ms",
        "total_tokens",
    ]
    list_filter = ["status", "protocol", "agent__environment", "agent", "started_at"]
    date_hierarchy = "started_at"
    search_fields = ["id", "thread_id", "response_id", "agent__name"]
    list_select_related = ["agent", "version"]
    readonly_fields = [
        "id",
        "agent",
        "version",
        "caller",
        "protocol",
        "status",
        "response_id",
        "started_at",
        "completed_at",
        "latency_ms",
        "tokens_usage",
        "thread_id",
        "pretty_messages",
        "pretty_output",
        "error",
        "lease_until",
    ]
    exclude = ["messages", "output"]
    actions = ["mark_failed"]

    @admin.display(description="version")
    def version_number(self, run: Run) -> int:
        return run.version.number

    @admin.display(description="tokens")
    def total_tokens(self, run: Run) -> int:
        return int(run.tokens_usage.get("total_tokens", 0))

    @admin.display(description="messages")
    def pretty_messages(self, run: Run) -> str:
        return format_html("<pre>{}</pre>", json.dumps(run.messages, indent=2, ensure_ascii=False))

    @admin.display(description="output")
    def pretty_output(self, run: Run) -> str:
        return format_html("<pre>{}</pre>", json.dumps(run.output, indent=2, ensure_ascii=False))

    @admin.action(
        description="Mark the selected in-progress runs failed (interrupted)", permissions=["close"]
    )
    def mark_failed(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        closed = runs_mark_failed(runs=queryset, by=request.user)
        skipped = queryset.count() - closed
        note = f" ({skipped} had ended already and stay as they were)" if skipped else ""
        self.message_user(request, f"{closed} run(s) marked failed{note}.", messages.SUCCESS)

    def has_close_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.change_run")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
