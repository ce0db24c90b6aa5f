"""GET /metrics: what every process counted (agents.runs.metrics) in PROMETHEUS_MULTIPROC_DIR,
added up at each scrape by prometheus_client's multiprocess collector, for a scraper that
has METRICS_TOKEN.

Without the token /metrics is a 404 to everyone, not open to loopback: behind a reverse
proxy on the same host every caller comes from loopback, so "loopback only" would be open
to the world in the most common deployment."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from agentbuilder.api.errors import not_found
from agentbuilder.metrics_dir import multiproc_dir


def _authorized(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode(), token.encode()
    )


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if not token:
        return not_found(request)
    if not _authorized(request, token):
        response = JsonResponse({"detail": "A valid METRICS_TOKEN is required."}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(multiproc_dir()))
    # The Prometheus text format whatever the Accept: every scraper reads it.
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
