"""The admin pages of an agent's experiments, under its admin URL (AgentAdmin.get_urls
adds them): the list, the compare page, one experiment, its progress and its cancel."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.admin import AdminSite
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from agents.evals.admin_compare import compare_page
from agents.evals.admin_experiments import (
    cancel_view,
    experiment_page,
    experiments_page,
    progress_view,
)


def experiment_urls(site: AdminSite) -> list[URLPattern]:
    """The pages under an agent's admin URL (AgentAdmin.get_urls adds them)."""

    def view(page: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        def bound(request: HttpRequest, **kwargs: str) -> HttpResponse:
            return page(site, request, **kwargs)

        return site.admin_view(bound)

    return [
        path(
            "<str:object_id>/experiments/",
            view(experiments_page),
            name="agents_agent_experiments",
        ),
        path(
            "<str:object_id>/experiments/compare/",
            view(compare_page),
            name="agents_agent_experiments_compare",
        ),
        path(
            "<str:object_id>/experiments/<str:experiment_id>/",
            view(experiment_page),
            name="agents_agent_experiment",
        ),
        path(
            "<str:object_id>/experiments/<str:experiment_id>/progress/",
            view(progress_view),
            name="agents_agent_experiment_progress",
        ),
        path(
            "<str:object_id>/experiments/<str:experiment_id>/cancel/",
            view(cancel_view),
            name="agents_agent_experiment_cancel",
        ),
    ]
