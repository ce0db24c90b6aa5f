"""Two experiments of an agent side by side in the admin, case by case
(docs/architecture.md#experiments-in-the-admin): each side's answer, tool calls and scores;
regressions first, then improvements, then the rest (agents.evals.compare orders them).

Filters: which changes (regressions, improvements, changed, all) and by which scorer (a
case then regresses when that scorer passed in A and fails in B). The rows come from one
comparison (a few queries, whatever the number of cases) and a page renders 100 of them:
what two 1,000-case experiments cost is one comparison and 100 rows (bench/experiments.py
measures the page).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from django.contrib.admin import AdminSite
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agentbuilder.users import request_user
from agents.evals.admin_experiments import (
    NO_RUN,
    agent_experiment,
    experiment_url,
    milliseconds,
    percent,
    pretty,
    readable_agent,
    score_cell,
    scorer_names,
)
from agents.evals.compare import (
    Change,
    Row,
    Side,
    compare_index,
    compare_rows,
    experiments_compare,
)
from agents.evals.selectors import experiments_visible
from agents.models import Agent, Experiment

ROWS_PER_PAGE = 100
Show = Literal["regressions", "improvements", "changed", "all"]
SHOWS: dict[str, str] = {
    "all": "All cases",
    "regressions": "Regressions",
    "improvements": "Improvements",
    "changed": "Changed",
}
ORDER = {"regression": 0, "improvement": 1, "changed": 2, "only_a": 3, "only_b": 3, "same": 4}
VERDICTS: dict[bool | None, tuple[str, str]] = {
    True: ("pass", "pass"),
    False: ("fail", "fail"),
    None: ("quiet", "undecided"),
}
NOT_RUN = SafeString('<td class="cell-text compare-side"><em class="quiet">not run</em></td>')
LABELS = {
    "regression": "regression",
    "improvement": "improvement",
    "changed": "changed",
    "only_a": "only in A",
    "only_b": "only in B",
    "same": "same",
}


def compare_page(site: AdminSite, request: HttpRequest, object_id: str) -> TemplateResponse:
    """GET ?a=<experiment>&b=<experiment>[&show=…&scorer=…&page=…]: A (the baseline) and B
    per case. Without both, the pickers. 404 unless the user may READ the agent and both
    are its experiments."""
    user = request_user(request)
    agent = readable_agent(user, object_id)
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    context: dict[str, Any] = {
        **site.each_context(request),
        "title": f"Compare experiments: {agent.name}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "choices": _choices(experiments_visible(user, agent)),
        "a_id": a_id,
        "b_id": b_id,
        "errors": [],
    }
    if not (a_id and b_id):
        if a_id or b_id:
            context["errors"].append("Pick two experiments: A, the baseline, and B.")
        return TemplateResponse(request, "admin/agents/experiment/compare.html", context)
    a, b = agent_experiment(user, agent, a_id), agent_experiment(user, agent, b_id)
    if a.dataset_id != b.dataset_id:
        context["errors"].append(
            f"A ran dataset '{a.dataset.name}' and B '{b.dataset.name}': "
            "experiments compare on one dataset."
        )
        return TemplateResponse(request, "admin/agents/experiment/compare.html", context)
    context.update(_compared(request, a, b))
    return TemplateResponse(request, "admin/agents/experiment/compare.html", context)


def _choices(experiments: Any) -> list[dict[str, str]]:
    listed = experiments.order_by("-created_at").only(
        "id", "revision", "created_at", "status", "agent_id", "version__number", "dataset__name"
    )[:100]
    return [
        {
            "id": str(e.pk),
            "label": f"v{e.version.number} on {e.dataset.name}@{e.revision} · "
            f"{e.created_at:%Y-%m-%d %H:%M} · {e.status}",
        }
        for e in listed
    ]


def _compared(request: HttpRequest, a: Experiment, b: Experiment) -> dict[str, Any]:
    names = list(dict.fromkeys([*scorer_names(a), *scorer_names(b)]))
    scorer = request.GET.get("scorer", "")
    scorer = scorer if scorer in names else ""
    show = request.GET.get("show", "all")
    show = show if show in SHOWS else "all"
    classified: list[tuple[str, int, Change, Row | None]]
    if scorer:
        # By one scorer: every case's scores are read (the comparison ordered them by whole
        # cases; by this scorer instead).
        classified = [
            (row.case_id, row.position, scorer_change(row, scorer), row)
            for row in experiments_compare(a, b).rows
        ]
        classified.sort(key=lambda rc: (ORDER[rc[2]], rc[1]))
    else:
        # By whole cases: classified in the database, the details read for the page alone.
        classified = [(str(i.case_id), i.position, i.change, None) for i in compare_index(a, b)]
    counts = {key: sum(1 for *_, c, _ in classified if _shown(c, key)) for key in SHOWS}
    shown = [rc for rc in classified if _shown(rc[2], show)]
    page = Paginator(shown, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    missing = [uuid.UUID(case_id) for case_id, _, _, row in page if row is None]
    details = {r.case_id: r for r in compare_rows(a, b, missing)} if missing else {}
    run_url = reverse("admin:agents_run_change", args=[NO_RUN])
    return {
        "a": a,
        "b": b,
        "a_url": experiment_url(a),
        "b_url": experiment_url(b),
        "a_pass": percent((a.summary or {}).get("passRate")),
        "b_pass": percent((b.summary or {}).get("passRate")),
        "same_revision": a.revision == b.revision,
        "scorer_names": names,
        "scorer": scorer,
        "show": show,
        "show_options": [(key, label, counts[key]) for key, label in SHOWS.items()],
        "rows": [
            _row(row or details[case_id], change, names, run_url)
            for case_id, _, change, row in page
        ],
        "page": page,
    }


def scorer_change(row: Row, scorer: str) -> Change:
    """How `row` changed by `scorer` alone: passed in A and failed in B is a regression."""
    if row.a is None or row.b is None:
        return row.change
    sa, sb = row.a.scores.get(scorer), row.b.scores.get(scorer)
    if sa is None or sb is None:
        return "same" if sa is sb else "changed"
    if sa.get("passed") and not sb.get("passed"):
        return "regression"
    if sb.get("passed") and not sa.get("passed"):
        return "improvement"
    return "changed" if sa.get("score") != sb.get("score") else "same"


def _shown(change: Change, show: str) -> bool:
    if show == "all":
        return True
    if show == "changed":
        return change != "same"
    return change == show.removesuffix("s")


def _row(row: Row, change: Change, names: list[str], run_url: str) -> dict[str, Any]:
    return {"row": row, "change": change, "html": row_html(row, change, names, run_url)}


# A row is built here rather than in the template: the template engine's cost is per node,
# and a row's nodes grow with its sides' scorers and tool calls, times 100 rows a page.
def row_html(row: Row, change: Change, names: list[str], run_url: str) -> SafeString:
    """One case's table row: its position, change, input and expectation, then A and B."""
    return format_html(
        '<tr class="change-{0}" data-change="{0}" data-position="{1}"><td>{1}</td>'
        '<td><span class="change-badge">{2}</span></td><td class="cell-text">{3}</td>'
        '<td class="cell-text"><pre>{4}</pre></td>{5}{6}</tr>',
        change,
        row.position,
        LABELS[change],
        row.input,
        pretty(row.expected),
        side_html(row.a, names, run_url),
        side_html(row.b, names, run_url),
    )


def side_html(side: Side | None, names: list[str], run_url: str) -> SafeString:
    """One experiment's cell of a case: pass or fail, latency and run, answer, tool calls,
    scores (each reason on hover), error."""
    if side is None:
        return NOT_RUN
    css, word = VERDICTS[side.passed]
    head = [format_html('<span class="{}">{}</span>', css, word)]
    if side.pass_rate is not None and 0 < side.pass_rate < 1:  # repetitions that differ
        head.append(format_html("{} of runs", percent(side.pass_rate)))
    head.append(format_html("{}", milliseconds(side.latency_ms)))
    if side.run_id:
        head.append(format_html('<a href="{}">run</a>', run_url.replace(NO_RUN, side.run_id)))
    tools = format_html_join("", "<li><code>{}</code></li>", ((_call(c),) for c in side.tool_calls))
    cells = (score_cell(side.scores.get(name)) for name in names)
    scores = format_html_join(
        " ",
        '<span class="{}" title="{}">{} {}</span>',
        (
            ("pass" if cell["passed"] else "fail", cell["reason"], name, cell["score"])
            for name, cell in zip(names, cells, strict=True)
            if cell is not None
        ),
    )
    error = pretty(side.error)
    return format_html(
        '<td class="cell-text compare-side"><div class="side-head">{}</div>'
        '<div class="side-answer">{}</div>{}<div class="side-scores">{}</div>{}</td>',
        format_html_join(" · ", "{}", ((part,) for part in head)),
        side.answer,
        format_html('<ol class="side-tools">{}</ol>', tools) if side.tool_calls else "",
        scores,
        format_html('<pre class="result-error">{}</pre>', error) if error else "",
    )


def _call(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{call.get('name', '?')}({text})"
