"""An agent's experiments in the admin (docs/architecture.md#experiments-in-the-admin): the
list with its charts and a form to start one, an experiment's page (its progress while it
runs, cancel, the summary, each case's result), and the JSON its progress bar polls.

READ on the agent shows its experiments; starting or canceling one needs INVOKE on it
(its runs are the requester's), as POST /v1/experiments does. The writes are the API's:
`experiment_start` and `experiment_cancel` check and write, the views translate.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString

from agentbuilder.admin_forms import ServiceForm, model_fields
from agentbuilder.errors import NotFound
from agentbuilder.users import User, request_user
from agents.access.permissions import Action, agents_with
from agents.evals.cases import input_text
from agents.evals.charts import Point, line_chart
from agents.evals.experiments import (
    ExperimentSpec,
    experiment_cancel,
    experiment_json,
    experiment_start,
)
from agents.evals.scorers.registry import SCORER_NAMES
from agents.evals.selectors import datasets_visible, experiment_for, experiments_visible
from agents.models import EXPERIMENT_ENDED, Agent, Dataset, Experiment, ExperimentResult
from agents.selectors.aliases import alias_list

LISTED = 100  # the newest experiments listed and charted on an agent's page
RESULTS_PER_PAGE = 100
NO_RUN = "00000000-0000-0000-0000-000000000000"  # replaced by each row's run id
SCORERS_HELP = (
    'A JSON list of scorers: names, or objects with options, e.g. ["exact", "contains"] or '
    '[{"name": "trajectory", "mode": "in_order"}, {"name": "max_latency_ms", "max": 2000}]. '
    f"Known: {', '.join(SCORER_NAMES)}."
)


# ---------------------------------------------------------------- who may see what


def readable_agent(user: User, object_id: str) -> Agent:
    """The agent, if `user` may READ it; else 404."""
    try:
        agent_id = uuid.UUID(object_id)
    except ValueError:
        raise Http404("No agent has this id.") from None
    agent = agents_with(user, Action.READ).filter(pk=agent_id).first()
    if agent is None:
        raise Http404("No agent you may read has this id.")
    return agent


def may_invoke(user: User, agent: Agent) -> bool:
    return agents_with(user, Action.INVOKE).filter(pk=agent.pk).exists()


def agent_experiment(user: User, agent: Agent, experiment_id: str) -> Experiment:
    """One of `agent`'s experiments `user` may read; else 404."""
    try:
        experiment = experiment_for(user, uuid.UUID(experiment_id))
    except (ValueError, NotFound):
        raise Http404("No experiment of this agent has this id.") from None
    if experiment.agent_id != agent.pk:
        raise Http404("No experiment of this agent has this id.")
    return experiment


# ---------------------------------------------------------------- the list and the form


class ExperimentForm(ServiceForm):
    """POST /v1/experiments's body as a form; `experiment_start`'s errors show at their
    field (a case that does not fit the version, at the dataset)."""

    version = forms.ChoiceField(help_text="latest, an alias or a version number.")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none())
    revision = forms.IntegerField(
        required=False, min_value=1, help_text="Empty: the dataset's latest revision."
    )
    scorers = forms.JSONField(
        initial=["exact"],
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60, "style": "font-family:monospace"}),
        help_text=SCORERS_HELP,
    )
    repetitions = forms.IntegerField(initial=1, help_text="Runs of each case, for variance.")
    concurrency = forms.IntegerField(initial=4, help_text="Cases run at once.")

    located = {
        "version": "version",
        "datasetId": "dataset",
        "dataset": "dataset",
        "revision": "revision",
        "scorers": "scorers",
        "repetitions": "repetitions",
        "concurrency": "concurrency",
    }

    class Meta:
        model = Experiment
        exclude = model_fields(Experiment)

    def __init__(self, *args: Any, user: User, agent: Agent, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.agent = agent
        numbers = agent.versions.order_by("-number").values_list("number", "version_label")
        version = cast(forms.ChoiceField, self.fields["version"])
        version.choices = [
            ("latest", "latest"),
            *((a.name, f"{a.name} (v{a.version.number})") for a in alias_list(agent=agent)),
            *((str(n), f"v{n}" + (f" · {label}" if label else "")) for n, label in numbers),
        ]
        dataset = cast(forms.ModelChoiceField, self.fields["dataset"])
        dataset.queryset = datasets_visible(self.user, agent.environment).filter(
            agent_type=agent.agent_type
        )
        dataset.help_text = (
            f"Datasets of {agent.agent_type} agents' cases in {agent.environment.name}."
        )

    def apply(self, data: dict[str, Any]) -> Experiment:
        spec = ExperimentSpec(
            version=data["version"],
            scorers=data["scorers"],
            revision=data["revision"],
            repetitions=data["repetitions"],
            concurrency=data["concurrency"],
        )
        return experiment_start(
            user=self.user, agent=self.agent, dataset=data["dataset"], spec=spec
        )


def experiments_page(site: AdminSite, request: HttpRequest, object_id: str) -> HttpResponse:
    """GET: the agent's experiments (newest first), their charts, the form to start one.
    POST: start one (INVOKE on the agent) and go to its page. 404 without READ."""
    user = request_user(request)
    agent = readable_agent(user, object_id)
    invoker = may_invoke(user, agent)
    if request.method == "POST":
        if not invoker:
            raise PermissionDenied("Starting an experiment needs INVOKE on the agent.")
        form = ExperimentForm(request.POST, user=user, agent=agent)
        if form.is_valid():
            experiment = form.instance
            messages.success(request, f"Experiment started: {experiment.total} runs to go.")
            return HttpResponseRedirect(experiment_url(experiment))
    else:
        form = ExperimentForm(user=user, agent=agent)
    experiments = list(_listed(experiments_visible(user, agent)))
    context = {
        **site.each_context(request),
        "title": f"Experiments: {agent.name}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "experiments": [_listed_row(e) for e in experiments],
        "listed": LISTED,
        "charts": charts(experiments[::-1]),
        "form": form if invoker else None,
    }
    return TemplateResponse(request, "admin/agents/experiment/list.html", context)


def _listed(experiments: QuerySet[Experiment]) -> QuerySet[Experiment]:
    fields = ("version__number", "version__version_label", "dataset__name", "requester__username")
    return (
        experiments.select_related("requester")
        .order_by("-created_at")
        .only(
            "id",
            "agent_id",
            "dataset_id",
            "revision",
            "status",
            "done",
            "total",
            "summary",
            "created_at",
            "repetitions",
            *fields,
        )[:LISTED]
    )


def _listed_row(experiment: Experiment) -> dict[str, Any]:
    summary = experiment.summary or {}
    latency = summary.get("latencyMs") or {}
    return {
        "experiment": experiment,
        "url": experiment_url(experiment),
        "pass_rate": percent(summary.get("passRate")),
        "p50": milliseconds(latency.get("p50")),
        "p95": milliseconds(latency.get("p95")),
        "cost": dollars(summary.get("costUsd")),
        "ended": experiment.status in EXPERIMENT_ENDED,
    }


def charts(experiments: list[Experiment]) -> list[SafeString]:
    """Pass rate, p95 latency and cost per experiment, oldest first (agents.evals.charts)."""

    def points(value: Callable[[dict[str, Any]], Any]) -> list[Point]:
        return [
            Point(
                label=f"v{e.version.number}",
                value=None if (v := value(e.summary or {})) is None else float(v),
                note=f"{e.dataset.name}@{e.revision} · {e.created_at:%Y-%m-%d %H:%M}",
                href=experiment_url(e),
            )
            for e in experiments
        ]

    return [
        SafeString(  # charts.line_chart escapes every label it draws
            line_chart(
                points(lambda s: s.get("passRate")),
                title="Pass rate",
                fmt=lambda v: f"{v:.0%}",
                top=1.0,
                css_class="chart-pass-rate",
            )
        ),
        SafeString(
            line_chart(
                points(lambda s: (s.get("latencyMs") or {}).get("p95")),
                title="p95 latency (ms)",
                fmt=lambda v: f"{v:,.0f}",
                css_class="chart-latency",
            )
        ),
        SafeString(
            line_chart(
                points(lambda s: s.get("costUsd")),
                title="Cost (USD)",
                fmt=lambda v: f"{v:.4g}",
                css_class="chart-cost",
            )
        ),
    ]


# ---------------------------------------------------------------- one experiment


def experiment_page(
    site: AdminSite, request: HttpRequest, object_id: str, experiment_id: str
) -> TemplateResponse:
    """The experiment: its progress (polled while it runs), cancel, its summary and its
    results, 100 a page (`?only=failed` for the failed). 404 without READ on the agent."""
    user = request_user(request)
    agent = readable_agent(user, object_id)
    experiment = agent_experiment(user, agent, experiment_id)
    body = experiment_json(experiment)
    names = scorer_names(experiment)
    only_failed = request.GET.get("only") == "failed"
    results = experiment.results.select_related("case").order_by("position", "repetition")
    if only_failed:
        results = results.filter(passed=False)
    page = Paginator(results, RESULTS_PER_PAGE).get_page(request.GET.get("page"))
    run_url = reverse("admin:agents_run_change", args=[NO_RUN])
    context = {
        **site.each_context(request),
        "title": f"Experiment: {agent.name} v{experiment.version.number}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "experiment": experiment,
        "body": body,
        "summary": summary_rows(body),
        "scorer_names": names,
        "results": [result_row(r, names, run_url) for r in page],
        "page": page,
        "only_failed": only_failed,
        "may_cancel": not body["ended"] and may_invoke(user, agent),
        "others": _comparable(user, experiment),
        "settings": {
            "progressUrl": reverse(
                "admin:agents_agent_experiment_progress", args=[agent.pk, experiment.pk]
            ),
            "ended": body["ended"],
        },
    }
    return TemplateResponse(request, "admin/agents/experiment/detail.html", context)


def scorer_names(experiment: Experiment) -> list[str]:
    """The keys of its results' scores: each scorer's label, else its name."""
    return list(dict.fromkeys(str(s.get("label", s["name"])) for s in experiment.scorers or ()))


def summary_rows(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": name, "mean": f"{s['mean']:.3f}", "pass_rate": percent(s.get("passRate"))}
        for name, s in (body.get("summary") or {}).items()
    ]


def result_row(result: ExperimentResult, names: list[str], run_url: str) -> dict[str, Any]:
    scores = result.scores or {}
    return {
        "result": result,
        "input": input_text(result.case.input),
        "expected": pretty(result.case.expected),
        "scores": [score_cell(scores.get(name)) for name in names],
        "cost": dollars(result.cost_usd),
        "latency": milliseconds(result.latency_ms),
        "run_url": run_url.replace(NO_RUN, str(result.run_id)) if result.run_id else "",
        "error": pretty(result.error),
    }


def score_cell(score: dict[str, Any] | None) -> dict[str, Any] | None:
    if score is None:
        return None  # the scorer did not apply to this case (nothing it could check)
    return {
        "score": f"{float(score.get('score', 0)):.2f}",
        "passed": bool(score.get("passed")),
        "reason": str(score.get("reason") or ""),
    }


def _comparable(user: User, experiment: Experiment) -> list[Experiment]:
    """The agent's other experiments on the same dataset: the choices of "compare with"."""
    return list(
        experiments_visible(user, experiment.agent)
        .filter(dataset_id=experiment.dataset_id)
        .exclude(pk=experiment.pk)
        .order_by("-created_at")
        .only(
            "id",
            "revision",
            "created_at",
            "status",
            "agent__name",
            "version__number",
            "dataset__name",
        )[:LISTED]
    )


def progress_view(
    site: AdminSite, request: HttpRequest, object_id: str, experiment_id: str
) -> HttpResponse:
    """GET /v1/experiments/{id}'s body: what the page's progress bar polls."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    user = request_user(request)
    experiment = agent_experiment(user, readable_agent(user, object_id), experiment_id)
    return JsonResponse(experiment_json(experiment), encoder=DjangoJSONEncoder)


def cancel_view(
    site: AdminSite, request: HttpRequest, object_id: str, experiment_id: str
) -> HttpResponse:
    """Cancel the experiment (INVOKE on the agent); back to its page."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    user = request_user(request)
    agent = readable_agent(user, object_id)
    experiment = agent_experiment(user, agent, experiment_id)
    if not may_invoke(user, agent):
        raise PermissionDenied("Canceling an experiment needs INVOKE on the agent.")
    if experiment_cancel(user=user, experiment=experiment):
        messages.success(request, "Experiment canceled: the cases not yet run will not run.")
    else:
        messages.warning(request, "The experiment had already ended.")
    return HttpResponseRedirect(experiment_url(experiment))


def experiment_url(experiment: Experiment) -> str:
    return reverse("admin:agents_agent_experiment", args=[experiment.agent_id, experiment.pk])


# ---------------------------------------------------------------- how figures read


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def milliseconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def dollars(value: float | Decimal | None) -> str:
    return "-" if value is None else f"${float(value):.4f}"


def pretty(value: Any) -> str:
    """JSON on one line (a cell wraps it), a string as it is."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
