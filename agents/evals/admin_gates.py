"""Alias gates on the admin's aliases page (agents/admin/aliases.py): the gates listed, set
and removed, and a promotion its gate refused shown with the experiment and the cases that
failed (docs/api.md#gated-aliases)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from agentbuilder.errors import Conflict, Invalid
from agentbuilder.users import request_user
from agents.evals import gates
from agents.evals.admin_experiments import experiment_url
from agents.evals.selectors import datasets_visible
from agents.models import Agent, AliasGate, Dataset, Experiment

FAILING_SHOWN = 5


class GateForm(forms.Form):
    name = forms.CharField(max_length=50, label="Alias", help_text="Set now, or not yet.")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none(), label="Dataset")
    scorers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        initial='["exact"]',
        help_text="JSON: names, or objects with options (docs/api.md#scorers).",
    )
    thresholds = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        initial='{"exact": 1.0}',
        help_text="JSON: each scorer's minimum mean score, 0 to 1.",
    )

    def __init__(self, *args: Any, agent: Agent, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["dataset"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = datasets_visible(request_user(request), agent.environment).filter(
            agent_type=agent.agent_type
        )

    def clean_scorers(self) -> Any:
        return _json(self.cleaned_data["scorers"])

    def clean_thresholds(self) -> Any:
        return _json(self.cleaned_data["thresholds"])


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise forms.ValidationError(f"not JSON: {exc}") from None


def gates_of(agent: Agent) -> list[AliasGate]:
    return list(AliasGate.objects.filter(agent=agent).select_related("dataset"))


def gate_apply(request: HttpRequest, agent: Agent, form: GateForm) -> bool:
    """Set the gate the bound `form` describes; False (with the form's errors) when refused."""
    if not form.is_valid():
        return False
    data = form.cleaned_data
    try:
        gate = gates.gate_set(
            user=request_user(request),
            agent=agent,
            name=data["name"],
            dataset=data["dataset"],
            scorers=data["scorers"],
            thresholds=data["thresholds"],
        )
    except Invalid as exc:
        for item in exc.errors:
            at = [str(p) for p in item.loc]
            field = at[1] if len(at) > 1 and at[1] in form.fields else None
            if at[:2] == ["body", "datasetId"]:
                field = "dataset"
            where = ".".join(at[2:])
            form.add_error(field, f"{where}: {item.msg}" if where else item.msg)
        return False
    messages.success(request, f"Alias '{gate.name}' now moves only through its gate.")
    return True


def refusal_message(request: HttpRequest, refused: Conflict) -> None:
    """A refused promotion: why, a link to the experiment, and the first failing cases."""
    context = refused.context
    experiment_id = context.get("experimentId")
    experiment = (
        None if experiment_id is None else Experiment.objects.filter(pk=experiment_id).first()
    )
    if experiment is None:
        messages.error(request, refused.detail)
        return
    failing = context.get("failingCases", [])[:FAILING_SHOWN]
    # Lines, not a list: the admin styles every <li> of its messages as a message of its own.
    cases = format_html_join(
        "",
        '<br><span class="gate-failing">case {}: answered <q>{}</q></span>',
        ((c["position"], c["answer"][:200]) for c in failing),
    )
    messages.error(
        request,
        format_html(
            '{} <a href="{}" class="gate-experiment">See the experiment</a>.{}',
            refused.detail,
            experiment_url(experiment),
            cases,
        ),
    )
