"""An agent's aliases in the admin: which version `prod` and `staging` run, promoting a
version to an alias, rolling an alias back, and every change made (who, when, from, to).

Writes go through the same services as PUT/DELETE /v1/agents/{id}/aliases/{name}: EDIT
on the agent, the same name rules, the same history.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from agentbuilder.errors import Conflict, DomainError, Invalid
from agentbuilder.users import User, request_user
from agents.access.permissions import Action, agents_with
from agents.evals.admin_gates import GateForm, gate_apply, gates_of, refusal_message
from agents.evals.gates import alias_move, gate_delete
from agents.models import Agent
from agents.selectors.aliases import alias_history, alias_list
from agents.services.aliases import alias_delete, alias_roll_back

HISTORY_SHOWN = 50


class PromoteForm(forms.Form):
    version = forms.TypedChoiceField(coerce=int, label="Version")
    name = forms.CharField(
        max_length=50,
        label="Alias",
        help_text="prod, staging, …: a letter, then letters, digits, - or _.",
    )
    force = forms.BooleanField(
        required=False,
        label="Force past its gate",
        help_text="A gated alias moves only to a version that passes its dataset; AUDIT "
        "holders may force a move, with a reason kept in the history.",
    )
    reason = forms.CharField(max_length=500, required=False, label="Reason")

    def __init__(self, *args: Any, agent: Agent, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        versions = agent.versions.order_by("-number").only("number", "version_label")
        field = self.fields["version"]
        assert isinstance(field, forms.TypedChoiceField)
        field.choices = [
            (v.number, f"v{v.number}" + (f" · {v.version_label}" if v.version_label else ""))
            for v in versions
        ]


def aliases_page(site: AdminSite, request: HttpRequest, object_id: str) -> HttpResponse:
    """GET: the aliases, a promote form (`?version=N` picks the version) and the history.
    POST `action` promote / rollback / delete: EDIT on the agent. 404 without READ."""
    agent = _agent(request_user(request), object_id, Action.READ)
    may_edit = agents_with(request_user(request), Action.EDIT).filter(pk=agent.pk).exists()
    form = PromoteForm(agent=agent, initial={"version": request.GET.get("version")})
    gate_form = GateForm(agent=agent, request=request)
    if request.method == "POST":
        if not may_edit:
            raise Http404("No agent you may edit has this id.")
        if request.POST.get("action") == "gate":
            gate_form = GateForm(request.POST, agent=agent, request=request)
            done = gate_apply(request, agent, gate_form)
        else:
            done, form = _apply(request, agent)
        if done:
            return HttpResponseRedirect(request.path)
    context = {
        **site.each_context(request),
        "title": f"Aliases: {agent.name}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "aliases": _aliases(agent),
        "history": alias_history(agent=agent)[:HISTORY_SHOWN],
        "form": form,
        "gate_form": gate_form,
        "gates": gates_of(agent),
        "may_edit": may_edit,
    }
    return TemplateResponse(request, "admin/agents/agent/aliases.html", context)


def _agent(user: User, object_id: str, action: Action) -> Agent:
    try:
        agent_id = uuid.UUID(object_id)
    except ValueError:
        raise Http404("No agent has this id.") from None
    agent = agents_with(user, action).filter(pk=agent_id).first()
    if agent is None:
        raise Http404("No agent you may read has this id.")
    return agent


def _aliases(agent: Agent) -> list[dict[str, Any]]:
    """Each alias with the version a roll back would return it to (None: it has none)."""
    previous: dict[str, int | None] = {}
    for change in alias_history(agent=agent):
        key = change.name.lower()
        if key not in previous:  # the newest change of each alias
            previous[key] = change.from_version.number if change.from_version else None
    return [
        {"alias": alias, "previous": previous.get(alias.name.lower())}
        for alias in alias_list(agent=agent)
    ]


def _apply(request: HttpRequest, agent: Agent) -> tuple[bool, PromoteForm]:
    """Carry out the POSTed action; (True, …) when done, else the form with its errors."""
    action = request.POST.get("action")
    form = PromoteForm(agent=agent)
    try:
        if action == "promote":
            form = PromoteForm(request.POST, agent=agent)
            if not form.is_valid():
                return False, form
            name, number = form.cleaned_data["name"], form.cleaned_data["version"]
            alias = alias_move(
                user=request_user(request),
                agent=agent,
                name=name,
                version_number=number,
                force=form.cleaned_data["force"],
                reason=form.cleaned_data["reason"],
                name_loc=("name",),
                version_loc=("version",),
            )
            messages.success(request, f"'{alias.name}' now runs v{number}.")
        elif action == "rollback":
            alias = alias_roll_back(
                user=request_user(request),
                agent=agent,
                name=request.POST.get("name", ""),
                name_loc=(),
            )
            messages.success(request, f"'{alias.name}' rolled back to v{alias.version.number}.")
        elif action == "delete":
            name = request.POST.get("name", "")
            alias_delete(user=request_user(request), agent=agent, name=name, name_loc=())
            messages.success(request, f"Alias '{name}' deleted.")
        elif action == "ungate":
            name = request.POST.get("name", "")
            gate_delete(user=request_user(request), agent=agent, name=name)
            messages.success(request, f"Alias '{name}' is no longer gated.")
        else:
            messages.error(request, "Unknown action.")
        return True, form
    except Invalid as exc:
        for item in exc.errors:
            field = str(item.loc[0]) if item.loc and str(item.loc[0]) in form.fields else None
            if form.is_bound:
                form.add_error(field, item.msg)
            else:
                messages.error(request, item.msg)
        return not form.is_bound, form
    except Conflict as exc:  # a gate's refusal: the experiment and its failing cases
        refusal_message(request, exc)
        return True, form
    except DomainError as exc:
        messages.error(request, exc.detail)
        return True, form


def aliases_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_aliases", args=[agent.pk])
