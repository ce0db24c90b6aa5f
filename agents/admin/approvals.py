"""The approvals inbox (docs/api.md#tool-approvals): the tool calls a staff user may decide,
across agents, newest first; each with its arguments and the run's conversation so far, and
Approve / Reject with a message. A decision that leaves the run nothing pending resumes it
in this server's runner; the run's page then shows how it went on, to whoever may read it
(its caller, AUDIT); an approver who may not goes back to the list."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from agentbuilder.errors import DomainError, Invalid
from agentbuilder.users import request_user
from agents.models import ApprovalRequest
from agents.selectors.approvals import approvals_pending
from agents.selectors.runs import runs_visible
from agents.services.approvals import (
    DecisionIn,
    StillWaiting,
    approvals_decide,
    run_resume_detached,
)

MESSAGE_MAX_CHARS = 4000  # as the API's `message`


@admin.register(ApprovalRequest)
class ApprovalInboxAdmin(admin.ModelAdmin):
    list_display = ["created_at", "agent", "tool", "short_arguments", "caller", "run_link"]
    list_display_links = ["created_at"]
    list_select_related = ["run__agent", "run__caller"]
    list_filter = [("run__agent", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["tool", "run__agent__name"]
    fields = ("agent", "tool", "pretty_arguments", "caller", "run_link", "conversation")
    readonly_fields = fields
    change_form_template = "admin/agents/approvalrequest/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApprovalRequest]:
        return approvals_pending(user=request_user(request)).select_related(
            "run__agent__environment", "run__caller"
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Any staff user may have runs of its own waiting; the queryset narrows to them.
        return request.user.is_active and request.user.is_staff

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # decided through the form below, by approvals_decide's rules

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "POST":
            return self._decide(request, object_id)
        return super().change_view(request, object_id, form_url, extra_context)

    def _decide(self, request: HttpRequest, object_id: str) -> HttpResponse:
        inbox = HttpResponseRedirect(reverse("admin:agents_approvalrequest_changelist"))
        asked = self.get_object(request, object_id)
        decision = request.POST.get("decision")
        if asked is None or decision not in ("approve", "reject"):
            self.message_user(request, "Nothing to decide here.", messages.ERROR)
            return inbox
        message = request.POST.get("message", "").strip()[:MESSAGE_MAX_CHARS]
        run = asked.run
        try:
            decided = approvals_decide(
                user=request_user(request),
                environment=run.agent.environment,
                run_id=run.pk,
                decisions=[
                    DecisionIn(asked.pk, "approve" if decision == "approve" else "reject", message)
                ],
            )
        except (DomainError, Invalid) as exc:  # decided by someone else meanwhile, expired
            self.message_user(request, str(exc), messages.ERROR)
            return inbox
        said = "Approved" if decision == "approve" else "Rejected"
        if isinstance(decided, StillWaiting):
            left = len(decided.pending)
            self.message_user(
                request, f"{said}. The run waits for {left} more decision(s).", messages.SUCCESS
            )
            return inbox
        run_resume_detached(decided)
        self.message_user(request, f"{said}. The run goes on.", messages.SUCCESS)
        if not runs_visible(user=request_user(request)).filter(pk=run.pk).exists():
            return inbox  # an approver who may not read the run (AUDIT) goes back to the list
        return HttpResponseRedirect(reverse("admin:agents_run_change", args=[run.pk]))

    @admin.display(description="agent", ordering="run__agent__name")
    def agent(self, asked: ApprovalRequest) -> str:
        return asked.run.agent.name

    @admin.display(description="caller")
    def caller(self, asked: ApprovalRequest) -> str:
        return str(asked.run.caller or "-")

    @admin.display(description="arguments")
    def short_arguments(self, asked: ApprovalRequest) -> str:
        text = asked.arguments
        return text if len(text) <= 80 else text[:79] + "…"

    @admin.display(description="arguments")
    def pretty_arguments(self, asked: ApprovalRequest) -> SafeString:
        try:
            shown = json.dumps(json.loads(asked.arguments), indent=2, ensure_ascii=False)
        except ValueError:
            shown = asked.arguments  # what the model sent, as it sent it
        return format_html('<pre class="approval-arguments">{}</pre>', shown)

    @admin.display(description="run")
    def run_link(self, asked: ApprovalRequest) -> SafeString:
        url = reverse("admin:agents_run_change", args=[asked.run_id])
        return format_html('<a href="{}">{}</a>', url, asked.run_id)

    @admin.display(description="conversation so far")
    def conversation(self, asked: ApprovalRequest) -> SafeString:
        shown = json.dumps(asked.run.messages, indent=2, ensure_ascii=False)
        return format_html('<pre class="approval-conversation">{}</pre>', shown)
