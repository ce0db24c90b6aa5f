from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from agentbuilder.users import request_user
from agents.admin.timeline import timeline
from agents.admin.usage import dollars
from agents.evals.from_runs import add_case_view, feedback_view, run_page_context
from agents.models import RUN_ENDED, Run
from agents.runs.leases import runs_mark_failed
from agents.selectors.runs import runs_visible

SUMMARY = (
    "agent_link",
    "version_link",
    "caller",
    "protocol",
    "status",
    "started_at",
    "completed_at",
    "latency",
    "tokens_usage",
    "cost",
    "thread",
    "trace",
    "error",
    "lease_until",
)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of what happened: readable, filterable, never edited, except that
    a run stuck `in_progress` can be closed (its lease shows whether its process lives).

    Like GET /v1/runs (docs/api.md#runs), a staff user sees its own runs, and every caller's
    of the agents it holds AUDIT on; superusers see all."""

    list_display = [
        "started_at",
        "agent",
        "version_number",
        "caller",
        "protocol",
        "status",
        "latency",
        "total_tokens",
        "cost",
    ]
    list_display_links = ["started_at"]
    list_filter = [
        "status",
        "protocol",
        ("agent", admin.RelatedOnlyFieldListFilter),
        ("caller", admin.RelatedOnlyFieldListFilter),
        ("agent__environment", admin.RelatedOnlyFieldListFilter),  # only environments seen
        "started_at",
    ]
    date_hierarchy = "started_at"
    search_fields = ["id", "thread_id", "response_id", "trace_id", "agent__name"]
    list_select_related = ["agent", "version", "caller"]
    fieldsets = [
        (None, {"fields": ("id", *SUMMARY)}),
        ("Steps", {"fields": ("steps_timeline",)}),
        ("Turn", {"fields": ("pretty_messages", "pretty_output")}),
    ]
    readonly_fields = ["id", *SUMMARY, "steps_timeline", "pretty_messages", "pretty_output"]
    actions = ["mark_failed"]
    # Below the run, its feedback and "Add to dataset" (agents/evals/from_runs.py).
    change_form_template = "admin/agents/run/change_form.html"

    class Media:
        css = {"all": ["agents/runs.css"]}

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<str:object_id>/feedback/",
                self.admin_site.admin_view(feedback_view),
                name="agents_run_feedback",
            ),
            path(
                "<str:object_id>/add-to-dataset/",
                self.admin_site.admin_view(add_case_view),
                name="agents_run_add_case",
            ),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        run = self.get_object(request, object_id)
        if run is not None:
            extra_context = {**(extra_context or {}), **run_page_context(request, run)}
        return super().change_view(request, object_id, form_url, extra_context)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        runs = super().get_queryset(request)
        if request.user.is_superuser:
            return runs
        return runs.filter(pk__in=runs_visible(user=request_user(request)).values("pk"))

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # A run page links to its thread: the runs of one caller with one thread id.
        return lookup in ("thread_id", "thread_id__exact") or super().lookup_allowed(
            lookup, value, request
        )

    @admin.display(description="version", ordering="version__number")
    def version_number(self, run: Run) -> int:
        return run.version.number

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, run: Run) -> str:
        return "-" if run.latency_ms is None else f"{run.latency_ms} ms"

    @admin.display(description="tokens")
    def total_tokens(self, run: Run) -> int:
        return int(run.tokens_usage.get("total_tokens", 0))

    @admin.display(description="cost", ordering="cost_usd")
    def cost(self, run: Run) -> str:
        return dollars(run.cost_usd)

    @admin.display(description="agent")
    def agent_link(self, run: Run) -> SafeString:
        url = reverse("admin:agents_agent_change", args=[run.agent_id])
        return format_html('<a href="{}">{}</a>', url, run.agent.name)

    @admin.display(description="version")
    def version_link(self, run: Run) -> SafeString:
        url = reverse("admin:agents_agentversion_change", args=[run.version_id])
        return format_html('<a href="{}">v{}</a>', url, run.version.number)

    @admin.display(description="trace")
    def trace(self, run: Run) -> SafeString | str:
        """The trace id, linked to OTEL_TRACE_URL_TEMPLATE's viewer when one is set."""
        if not run.trace_id:
            return "-"
        template = str(settings.OTEL_TRACE_URL_TEMPLATE)
        if not template:
            return run.trace_id
        url = template.replace("{trace_id}", run.trace_id)
        return format_html('<a href="{}" id="run-trace-link">{}</a>', url, run.trace_id)

    @admin.display(description="thread")
    def thread(self, run: Run) -> SafeString | str:
        if not run.thread_id:
            return "-"
        query = {"thread_id": run.thread_id, "caller__id__exact": run.caller_id or ""}
        url = reverse("admin:agents_run_changelist") + "?" + urlencode(query)
        turns = Run.objects.filter(
            agent_id=run.agent_id, caller_id=run.caller_id, thread_id=run.thread_id
        ).count()
        said = "1 turn" if turns == 1 else f"{turns} turns"
        return format_html('<a href="{}">{}</a> ({})', url, run.thread_id, said)

    @admin.display(description="timeline")
    def steps_timeline(self, run: Run) -> SafeString:
        bars = timeline(run.steps or [], run.started_at, run.latency_ms)
        context = {
            "bars": bars,
            "span_ms": run.latency_ms,
            "in_progress": run.status not in RUN_ENDED,
        }
        return SafeString(render_to_string("admin/agents/run/timeline.html", context))

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
        closed = runs_mark_failed(runs=queryset, by=request_user(request))
        skipped = queryset.count() - closed
        note = f" ({skipped} had ended already and stay as they were)" if skipped else ""
        self.message_user(request, f"{closed} run(s) marked failed{note}.", messages.SUCCESS)

    def has_close_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("agents.change_run")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Every staff user has runs of its own (the playground's); the queryset narrows.
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
