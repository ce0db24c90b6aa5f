"""GET /metrics (agentbuilder.metrics): only for METRICS_TOKEN, in the Prometheus text format,
the counts of every process that shares PROMETHEUS_MULTIPROC_DIR added up."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from agentbuilder.metrics_dir import multiproc_dir
from tests.live import server_process
from tests.support.guardrails import ask
from tests.support.mcp_server import bearer
from tests.support.metrics import headers, parsed

RUNS = "agentbuilder_runs_total"


@pytest.fixture
def token(settings: Any) -> str:
    settings.METRICS_TOKEN = token = secrets.token_urlsafe(32)
    return token


def test_without_metrics_token_metrics_is_not_found(db: Any, settings: Any) -> None:
    settings.METRICS_TOKEN = None

    response = APIClient().get("/metrics", headers=headers("anything"))

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


@pytest.mark.parametrize(
    "authorization",
    ["", "Bearer", "Bearer wrong-token", "Basic {token}", "Bearer {token}x", "{token}"],
    ids=["missing", "empty", "wrong", "basic", "longer", "no-scheme"],
)
def test_a_missing_or_wrong_token_is_refused(db: Any, token: str, authorization: str) -> None:
    given = {"Authorization": authorization.format(token=token)} if authorization else {}

    response = APIClient().get("/metrics", headers=given)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"agentbuilder_" not in response.content


def test_the_token_gets_the_prometheus_text_format(db: Any, token: str) -> None:
    response = APIClient().get("/metrics", headers=headers(token))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")  # the text format
    parsed(response.content.decode())  # the parser takes it
    assert APIClient().post("/metrics", headers=headers(token)).status_code == 405


def test_metrics_reset_empties_the_directory(settings: Any, tmp_path: Path) -> None:
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path / "metrics")
    kept = multiproc_dir() / "counter_host-1.db"
    kept.write_bytes(b"\0" * 8)

    call_command("metrics_reset", verbosity=0)

    assert list(multiproc_dir().iterdir()) == []


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_runs_on_two_server_processes_show_in_one_scrape(
    tmp_path: Path, owner: Any, make_agent: Any
) -> None:
    agent = make_agent("Counted")
    token = secrets.token_urlsafe(32)
    shared = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"), "METRICS_TOKEN": token}
    with (
        server_process(tmp_path / "first.log", **shared) as first,
        server_process(tmp_path / "second.log", **shared) as second,
        httpx.Client(headers=bearer(owner), timeout=60) as http,
    ):
        for server, times in ((first, 2), (second, 1)):
            url = f"http://127.0.0.1:{server.port}/v1/agents/{agent.pk}/versions/latest/invoke"
            for _ in range(times):
                assert http.post(url, json=ask("What is 3x5?")).status_code == 200
        scraped = httpx.get(f"http://127.0.0.1:{second.port}/metrics", headers=headers(token))

    assert scraped.status_code == 200, scraped.text
    metrics = parsed(scraped.text)
    labels = {"agent": "Counted", "protocol": "native"}
    assert metrics.value(RUNS, **labels, status="completed") == 3
    assert metrics.value("agentbuilder_run_duration_seconds_count", **labels) == 3
    # Each process counted into files of its own.
    assert len(list((tmp_path / "metrics").glob("counter_*.db"))) == 2
