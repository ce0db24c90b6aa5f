"""Two versions of an agent side by side: their configs, labels and notes, as a diff.

Any two versions (by number, `latest` or an alias) are compared, not only a version and
the one before it; the page is a GET form, so a comparison is a link one can share.
"""

from __future__ import annotations

import difflib
import uuid
from typing import Any

from django.contrib.admin import AdminSite
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.utils.safestring import SafeString

from agentbuilder.errors import Invalid, NotFound
from agentbuilder.users import User, request_user
from agents.access.permissions import Action, agents_with
from agents.admin.forms import config_text
from agents.models import Agent, AgentVersion
from agents.selectors.aliases import alias_list
from agents.selectors.versions import version_get

CONTEXT_LINES = 3


def compare_page(site: AdminSite, request: HttpRequest, object_id: str) -> TemplateResponse:
    """GET ?a=<version>&b=<version>: the diff of `a` (default: the one before `b`) and `b`
    (default: latest). 404 unless the user may READ the agent."""
    agent = _readable(request_user(request), object_id)
    versions = list(agent.versions.order_by("-number").only("number", "version_label"))
    b_ref = request.GET.get("b") or "latest"
    b, b_error = _version(agent, b_ref)
    default_a = str(b.number - 1) if b is not None and b.number > 1 else b_ref
    a_ref = request.GET.get("a") or default_a
    a, a_error = _version(agent, a_ref)
    context = {
        **site.each_context(request),
        "title": f"Compare versions: {agent.name}",
        "opts": Agent._meta,
        "original": agent,
        "agent": agent,
        "versions": versions,
        "aliases": [{"name": a.name, "number": a.version.number} for a in alias_list(agent=agent)],
        "a_ref": a_ref,
        "b_ref": b_ref,
        "errors": [e for e in (a_error, b_error) if e],
        "a": a,
        "b": b,
    }
    if a is not None and b is not None:
        context.update(_diffs(a, b))
    return TemplateResponse(request, "admin/agents/agent/compare.html", context)


def _readable(user: User, object_id: str) -> Agent:
    try:
        agent_id = uuid.UUID(object_id)
    except ValueError:
        raise Http404("No agent has this id.") from None
    agent = agents_with(user, Action.READ).filter(pk=agent_id).first()
    if agent is None:
        raise Http404("No agent you may read has this id.")
    return agent


def _version(agent: Agent, ref: str) -> tuple[AgentVersion | None, str]:
    try:
        return version_get(agent=agent, ref=ref), ""
    except (NotFound, Invalid) as exc:
        return None, f"{ref}: {exc}"


def _diffs(a: AgentVersion, b: AgentVersion) -> dict[str, Any]:
    names = (f"v{a.number}", f"v{b.number}")
    config = _table(config_text(a.config_shown), config_text(b.config_shown), names)
    about = _table(_about(a), _about(b), names)
    return {
        "config_diff": config,
        "about_diff": about,
        "same_config": a.config == b.config,
    }


def _about(version: AgentVersion) -> str:
    return f"label: {version.version_label}\nnotes:\n{version.notes}"


def _table(old: str, new: str, names: tuple[str, str]) -> SafeString:
    # difflib escapes the lines it shows; its table is the whole of the page's diff.
    table = difflib.HtmlDiff(tabsize=2, wrapcolumn=70).make_table(
        old.splitlines(), new.splitlines(), *names, context=True, numlines=CONTEXT_LINES
    )
    return SafeString(table)  # difflib escapes every line it puts in its table
