"""A benchmark that cannot run says what it needs and how to install it (bench/common.py),
exit status 2, before it starts anything: no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The scripts a user runs (bench/README.md); sse_fake.py, settings.py and urls.py are parts.
BENCHMARKS = (
    "approvals.py",
    "budgets.py",
    "guard_overhead.py",
    "hnsw_params.py",
    "ingestion.py",
    "invoke_overhead.py",
    "metrics_cost.py",
    "oauth_tokens.py",
    "peers.py",
    "otel_export.py",
    "per_delta.py",
    "protocols_overhead.py",
    "prune.py",
    "retrieval_search.py",
    "stream_concurrency.py",
    "trace_cost.py",
    "trace_ui.py",
    "whole_answers.py",
    "workers.py",
)


def bench(script: str, *python_options: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, *python_options, f"bench/{script}", "--quick"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=120)  # noqa: S603


def test_ingestion_without_redis_server_says_how_to_install_it(tmp_path):
    done = bench("ingestion.py", env={**os.environ, "PATH": str(tmp_path)})

    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        "bench/ingestion.py needs redis-server: apt-get install redis-server"
    )
    assert done.stdout == b""  # nothing was measured or started


@pytest.mark.parametrize("script", BENCHMARKS)
def test_a_benchmark_without_the_projects_packages_names_them(script):
    # -S: no site-packages, as a Python outside the virtualenv would have.
    done = bench(script, "-S", env=dict(os.environ))

    assert done.returncode == 2
    message = done.stderr.decode().strip()
    assert message.startswith(
        f"bench/{script} needs the project's Python packages (missing: Django, "
    )
    assert message.endswith(
        "run it with .venv/bin/python (`make setup` makes .venv), "
        "or pip install -r requirements.txt"
    )
    assert "Traceback" not in message
