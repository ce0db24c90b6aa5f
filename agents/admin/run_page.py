"""What a run's page shows below its summary (the conversation, usage, retrieval hits and
steps, the records as JSON on request) and the thread page: a caller's thread read as one
conversation, turn by turn, each turn linking to its run."""

from __future__ import annotations

import json
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from django.contrib.admin import AdminSite
from django.db.models import F, Func, QuerySet, TextField, Value
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode

from agentbuilder.users import request_user
from agents.admin.conversation import UsageRow, chat, hits, usage_rows
from agents.admin.timeline import timeline
from agents.admin.usage import dollars
from agents.models import RUN_ENDED, Run
from agents.protocols.playground.links import playground_run_url
from retrieval.selectors import chunk_snippets, document_titles

PREVIEW = 80  # characters of a run's input in the runs list
# The columns the runs list does not read: a run's records may be large.
# The runs and agent lists leave out the admin's navigation sidebar: with the filters beside
# them, their columns then fit a 1280 px window without a horizontal scroll.
WIDE_LIST = {"is_nav_sidebar_enabled": False}
HEAVY = ("messages", "output", "steps", "request", "paused", "webhook", "models_usage")


class InputPreview(Func):
    """The text of a run's first user message, its first characters (the runs list's input
    column, read in the query rather than with every message)."""

    function = "jsonb_path_query_first"
    template = "LEFT(%(function)s(%(expressions)s::jsonpath) #>> '{}', 200)"
    output_field = TextField()

    def __init__(self) -> None:
        super().__init__(F("messages"), Value('$[*] ? (@.role == "user").content'))


def thread_url(thread_id: str, caller_id: str | int) -> str:
    query = {"thread": thread_id, "caller": caller_id}
    return reverse("admin:agents_run_thread") + "?" + urlencode(query)


def run_sections(run: Run) -> dict[str, Any]:
    """The run page's sections, as its template (admin/agents/run/change_form.html) draws
    them."""
    rows = usage_rows(run.models_usage or {}, run.tokens_usage or {})
    found = hits(run.steps or [], {}, {})
    if found:  # two short reads, for the hits' titles and text
        titles = document_titles(document_ids=[h.doc_id for h in found])
        snippets = chunk_snippets(chunk_ids=[h.chunk_id for h in found])
        found = hits(run.steps or [], titles, snippets)
    return {
        "chat": chat(run.messages or [], run.steps or [], run.error),
        "usage": [{**asdict(row), "cost": dollars(row.cost_usd)} for row in rows],
        "usage_total": _total(rows) if len(rows) > 1 else None,
        "cost": dollars(run.cost_usd),
        "latency_ms": run.latency_ms,
        "first_token_ms": _first_token_ms(run.steps or []),
        "hits": found,
        "bars": timeline(run.steps or [], run.started_at, run.latency_ms),
        "span_ms": run.latency_ms,
        "in_progress": run.status not in RUN_ENDED,
        "records": [
            (name, json.dumps(getattr(run, name), indent=2, ensure_ascii=False))
            for name in ("messages", "output", "steps", "tokens_usage", "models_usage", "error")
        ],
    }


def _total(rows: list[UsageRow]) -> dict[str, Any]:
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    return {
        "input_tokens": sum(r.input_tokens for r in rows),
        "output_tokens": sum(r.output_tokens for r in rows),
        "cached_input_tokens": sum(r.cached_input_tokens for r in rows),
        # Unknown when any model's cost is: a partial sum would pass for the run's.
        "cost": dollars(sum(costs, Decimal(0)) if len(costs) == len(rows) else None),
    }


def _first_token_ms(steps: list[Any]) -> int | None:
    for step in steps:
        if isinstance(step, dict) and step.get("type") == "model_call":
            ttft = step.get("timeToFirstTokenMs")
            return None if ttft is None else int(ttft)
    return None


def thread_page(site: AdminSite, request: HttpRequest, runs: QuerySet[Run]) -> TemplateResponse:
    """GET ?thread=<id>&caller=<user id>: the turns of that caller's thread among `runs`
    (the runs the user may see: its own, or with AUDIT every caller's), oldest first. The
    caller defaults to the user; a thread with no turn the user may see is a 404."""
    thread_id = request.GET.get("thread", "")
    caller = request.GET.get("caller") or str(request.user.pk)
    if not thread_id or not caller.isdigit():
        raise Http404("No such thread.")
    turns = list(
        runs.filter(thread_id=thread_id, caller_id=int(caller))
        .select_related("agent", "version", "caller")
        .order_by("started_at", "id")
    )
    if not turns:
        raise Http404("No such thread.")
    listed = {"thread_id": thread_id, "caller__id__exact": caller}
    context = {
        **site.each_context(request),
        "title": f"Thread {thread_id}",
        "opts": Run._meta,
        "thread_id": thread_id,
        "thread_caller": turns[0].caller,
        "runs_url": reverse("admin:agents_run_changelist") + "?" + urlencode(listed),
        # Going on with it: the playground of its last turn's agent, the thread opened.
        "playground_url": playground_run_url(user=request_user(request), run=turns[-1]),
        "turns": [
            {
                "run": run,
                "url": reverse("admin:agents_run_change", args=[run.pk]),
                "chat": chat(run.messages or [], run.steps or [], run.error),
            }
            for run in turns
        ],
    }
    return TemplateResponse(request, "admin/agents/run/thread.html", context)
