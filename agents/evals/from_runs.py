"""A run into a dataset, and a person's thumbs on it, from the admin: the run's page has a
form for each, and so has each playground answer (small JSON views, as the playground's
approvals are; docs/api.md#datasets-in-the-admin). Both write through the dataset services:
`case_from_run` (the run's input, its answer as the expected output, editable) and
`feedback_set`.

Who may: whoever may read the run (its caller; AUDIT on its agent; superusers), and for a
case EDIT on the environment of a dataset of the run's agent type, in the run's environment.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from drf_spectacular.utils import extend_schema
from pydantic import Field
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from agentbuilder.api.paths import path_uuid
from agentbuilder.api.views import ApiView
from agentbuilder.errors import DomainError, Invalid, NotFound
from agentbuilder.users import User, request_user
from agentbuilder.wire import CamelModel
from agents.access.permissions import Action, holds_on_environment
from agents.evals.selectors import datasets_visible
from agents.evals.services import case_from_run, feedback_set, run_case
from agents.evals.table import output_of, output_text
from agents.models import Agent, Dataset, DatasetCase, Run, RunFeedback, RunStatus
from agents.protocols.playground.links import playground_run_url
from agents.selectors.runs import runs_visible

COMMENT_MAX_CHARS = 4000


def datasets_for(user: User, agent: Agent) -> QuerySet[Dataset]:
    """The datasets a run of `agent` may become a case of, for `user`: of its environment
    and agent type, where `user` holds EDIT."""
    if not holds_on_environment(user, agent.environment, Action.EDIT):
        return Dataset.objects.none()
    return datasets_visible(user, agent.environment).filter(agent_type=agent.agent_type)


def run_readable(user: User, run_id: Any, agent_id: Any = None) -> Run:
    """The run, if `user` may read it (of `agent_id`, when given). Raises NotFound."""
    runs = Run.objects.all() if user.is_superuser else runs_visible(user=user)
    if agent_id is not None:
        runs = runs.filter(agent_id=agent_id)
    run = runs.select_related("agent__environment").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"Run '{run_id}' not found.")
    return run


def _dataset_for_run(user: User, run: Run, dataset_id: Any) -> Dataset:
    dataset = datasets_for(user, run.agent).filter(pk=dataset_id).first()
    if dataset is None:
        raise Invalid.at(
            ("body", "datasetId"),
            f"not a dataset of {run.agent.agent_type} agents in environment "
            f"'{run.agent.environment.name}' that you may edit",
        )
    return dataset


def _added(case: DatasetCase, dataset: Dataset) -> str:
    return f"Added to '{dataset.name}' as case {case.position}: revision {dataset.revision}."


# ---------------------------------------------------------------- the run's admin page


class AddCaseForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none(), empty_label=None)
    expected_output = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        required=False,
        strip=False,
        help_text="The run's answer: edit it to what the answer should be (empty: the answer).",
    )

    def __init__(self, *args: Any, user: User, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["dataset"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = datasets_for(user, run.agent)


class FeedbackForm(forms.Form):
    score = forms.TypedChoiceField(choices=[(1, "👍"), (-1, "👎")], coerce=int)
    comment = forms.CharField(max_length=COMMENT_MAX_CHARS, required=False)


def run_page_context(request: HttpRequest, run: Run) -> dict[str, Any]:
    """What the run's page shows below the run: its feedback and the two forms."""
    user = request_user(request)
    feedback = list(RunFeedback.objects.filter(run=run).select_related("user"))
    mine = next((f for f in feedback if f.user_id == user.pk), None)
    completed = run.status == RunStatus.COMPLETED
    expected = output_text(run_case(run)["expected"]["output"]) if completed else ""
    form = AddCaseForm(user=user, run=run, initial={"expected_output": expected})
    return {
        "feedback": feedback,
        "my_feedback": mine,
        "feedback_url": reverse("admin:agents_run_feedback", args=[run.pk]),
        "add_case_url": reverse("admin:agents_run_add_case", args=[run.pk]),
        "add_case_form": form,
        "add_case_datasets": datasets_for(user, run.agent).exists(),
        "run_completed": completed,
        "comment_max": COMMENT_MAX_CHARS,
        # "Open in playground", to go on with the run's thread (None: the user may not).
        "playground_url": playground_run_url(user=user, run=run),
    }


def feedback_view(request: HttpRequest, object_id: str) -> HttpResponse:
    """POST score (1 or -1) and comment: the signed-in user's feedback on the run."""
    run, page = _run_and_page(request, object_id)
    form = FeedbackForm(request.POST)
    if request.method != "POST" or not form.is_valid():
        messages.error(request, "Choose 👍 or 👎 (a comment is up to 4,000 characters).")
        return page
    feedback_set(
        user=request_user(request),
        run=run,
        score=form.cleaned_data["score"],
        comment=form.cleaned_data["comment"],
    )
    messages.success(request, "Feedback saved.")
    return page


def add_case_view(request: HttpRequest, object_id: str) -> HttpResponse:
    """POST dataset and expected_output: the run as a case of that dataset."""
    run, page = _run_and_page(request, object_id)
    user = request_user(request)
    form = AddCaseForm(request.POST, user=user, run=run)
    if request.method != "POST" or not form.is_valid():
        for errors in form.errors.values():
            messages.error(request, " ".join(map(str, errors)))
        return page
    dataset = form.cleaned_data["dataset"]
    text = form.cleaned_data["expected_output"]
    try:
        case = case_from_run(
            user=user,
            dataset=dataset,
            run=run,
            expected_output=output_of(text) if text.strip() else None,
        )
    except Invalid as exc:
        messages.error(request, " ".join(e.msg for e in exc.errors))
        return page
    except DomainError as exc:
        messages.error(request, exc.detail)
        return page
    url = reverse("admin:agents_dataset_change", args=[dataset.pk])
    messages.success(request, format_html('{} <a href="{}">Open</a>', _added(case, dataset), url))
    return page


def _run_and_page(request: HttpRequest, object_id: str) -> tuple[Run, HttpResponseRedirect]:
    try:
        run = run_readable(request_user(request), uuid.UUID(object_id))
    except (ValueError, NotFound):
        raise Http404("No run you may read has this id.") from None
    return run, HttpResponseRedirect(reverse("admin:agents_run_change", args=[run.pk]))


# ---------------------------------------------------------------- the playground


class FeedbackBody(CamelModel):
    score: int
    comment: str = Field("", max_length=COMMENT_MAX_CHARS)


class CaseBody(CamelModel):
    dataset_id: uuid.UUID
    expected_output: str | None = Field(None, max_length=1_000_000)


class PlaygroundView(ApiView):
    """Session and CSRF, staff only, like the playground's other views; the run must be
    one the user may read, of the page's agent."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]

    def run(self, object_id: str, run_id: str) -> Run:
        agent_id = path_uuid(object_id, "object_id", "an agent id")
        return run_readable(self.request.user, path_uuid(run_id, "run_id", "a run id"), agent_id)


class PlaygroundFeedbackView(PlaygroundView):
    """POST {"score": 1 | -1, "comment"}: the user's thumbs on the answer's run."""

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str, run_id: str) -> Response:
        run = self.run(object_id, run_id)
        body = self.body(FeedbackBody)
        saved = feedback_set(
            user=self.request.user, run=run, score=body.score, comment=body.comment
        )
        return Response({"score": saved.score, "comment": saved.comment})


class PlaygroundCaseView(PlaygroundView):
    """POST {"datasetId", "expectedOutput"}: the answer's run as a case of that dataset
    (the answer as the expected output unless one is given)."""

    @extend_schema(exclude=True)
    def post(self, request: Request, object_id: str, run_id: str) -> Response:
        run = self.run(object_id, run_id)
        body = self.body(CaseBody)
        dataset = _dataset_for_run(self.request.user, run, body.dataset_id)
        text = body.expected_output
        expected = output_of(text) if text is not None and text.strip() else None
        case = case_from_run(
            user=self.request.user, dataset=dataset, run=run, expected_output=expected
        )
        return Response(
            {
                "caseId": str(case.pk),
                "position": case.position,
                "revision": dataset.revision,
                "said": _added(case, dataset),
                "datasetUrl": reverse("admin:agents_dataset_change", args=[dataset.pk]),
            }
        )


def playground_settings(user: User, agent: Agent, run_placeholder: str) -> dict[str, Any]:
    """What the playground's script needs for its feedback and "Add to dataset" controls."""
    return {
        "feedbackUrl": reverse(
            "admin:agents_agent_playground_feedback", args=[agent.pk, run_placeholder]
        ),
        "caseUrl": reverse("admin:agents_agent_playground_case", args=[agent.pk, run_placeholder]),
        "datasets": [{"id": str(d.pk), "name": d.name} for d in datasets_for(user, agent)],
    }
