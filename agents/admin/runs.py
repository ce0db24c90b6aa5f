from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.timezone import localtime

from agentbuilder.users import request_user
from agents.admin.conversation import cut, input_preview
from agents.admin.run_page import (
    HEAVY,
    PREVIEW,
    WIDE_LIST,
    InputPreview,
    run_sections,
    thread_page,
    thread_url,
)
from agents.admin.usage import dollars
from agents.evals.from_runs import add_case_view, feedback_view, run_page_context
from agents.models import Run
from agents.runs.leases import runs_mark_failed
from agents.selectors.runs import runs_visible

# What an admin reads or acts on; the lease, the stored request and other bookkeeping of the
# run's process stay off the page (the "show JSON" details keep the turn's own records).
SUMMARY = (
    "agent_link",
    "version_link",
    "caller",
    "protocol",
    "status",
    "started_at",
    "completed_at",
    "thread",
    "trace",
    "failure",
)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of what happened: readable, filterable, never edited, except that
    a run stuck `in_progress` can be closed. A run's page reads as a conversation, with its
    usage, retrieval hits and steps below (agents/admin/run_page.py).

    Like GET /v1/runs (docs/api.md#runs), a staff user sees its own runs, and every caller's
    of the agents it holds AUDIT on; superusers see all."""

    list_display = [
        "started",
        "agent_name",
        "version_number",
        "caller",
        "protocol",
        "status",
        "latency",
        "total_tokens",
        "cost",
        "input",
    ]
    list_display_links = ["started"]
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
    fieldsets = [(None, {"fields": ("id", *SUMMARY)})]
    readonly_fields = ["id", *SUMMARY]
    actions = ["mark_failed"]
    # Below the summary the conversation, usage, hits and steps (agents/admin/run_page.py),
    # then its feedback and "Add to dataset" (agents/evals/from_runs.py).
    change_form_template = "admin/agents/run/change_form.html"
    change_list_template = "admin/agents/run/change_list.html"

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
                "thread/",
                self.admin_site.admin_view(self.thread_view),
                name="agents_run_thread",
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
            extra_context = {
                **(extra_context or {}),
                **run_sections(run),
                **run_page_context(request, run),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Run | None:
        run = super().get_object(request, object_id, from_field)
        if run is not None and run.thread_id:
            # Its thread's turns that this user may see, as the thread page shows them.
            thread = {"caller_id": run.caller_id, "thread_id": run.thread_id}
            run.turns = self.get_queryset(request).filter(**thread).count()
        return run

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Filtered to one thread, the list links to the thread read as a conversation.
        extra_context = {**(extra_context or {}), **WIDE_LIST}
        thread_id = request.GET.get("thread_id") or request.GET.get("thread_id__exact")
        if thread_id:
            caller = request.GET.get("caller__id__exact") or ""
            extra_context = {**(extra_context or {}), "thread_url": thread_url(thread_id, caller)}
        return super().changelist_view(request, extra_context)

    def thread_view(self, request: HttpRequest) -> HttpResponse:
        return thread_page(self.admin_site, request, self.get_queryset(request))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        runs = super().get_queryset(request)
        if not request.user.is_superuser:
            runs = runs.filter(pk__in=runs_visible(user=request_user(request)).values("pk"))
        if request.resolver_match and request.resolver_match.url_name == "agents_run_changelist":
            # The list reads a preview of each run's input, not its messages, output or steps.
            return runs.defer(*HEAVY).annotate(input_preview=InputPreview())
        return runs

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # A run page links to its thread: the runs of one caller with one thread id.
        return lookup in ("thread_id", "thread_id__exact") or super().lookup_allowed(
            lookup, value, request
        )

    @admin.display(description="started at", ordering="started_at")
    def started(self, run: Run) -> str:
        return f"{localtime(run.started_at):%Y-%m-%d %H:%M}"

    @admin.display(description="agent", ordering="agent__name")
    def agent_name(self, run: Run) -> SafeString:
        # Cut to its column by CSS, as the input is: the list keeps its other columns in view.
        name = run.agent.name
        return format_html('<span class="run-cut" title="{}">{}</span>', name, name)

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

    @admin.display(description="input")
    def input(self, run: Run) -> str:
        preview = getattr(run, "input_preview", None)
        text = cut(preview if preview is not None else input_preview(run.messages), PREVIEW)
        # Cut again to the column's width by CSS (agents/runs.css); the title keeps it all.
        return format_html('<span class="run-input" title="{}">{}</span>', text, text)

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
        caller = str(run.caller_id or "")
        query = {"thread_id": run.thread_id, "caller__id__exact": caller}
        listed = reverse("admin:agents_run_changelist") + "?" + urlencode(query)
        turns = getattr(run, "turns", 1)
        said = "1 turn" if turns == 1 else f"{turns} turns"
        return format_html(
            '{} ({}): <a href="{}" id="run-thread-link">read as a conversation</a> · '
            '<a href="{}" id="run-thread-runs">its runs</a>',
            run.thread_id,
            said,
            thread_url(run.thread_id, caller),
            listed,
        )

    @admin.display(description="error")
    def failure(self, run: Run) -> str:
        if not run.error:
            return "-"
        if isinstance(run.error, dict):
            return f"{run.error.get('code', '')}: {run.error.get('message', '')}"
        return str(run.error)

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
