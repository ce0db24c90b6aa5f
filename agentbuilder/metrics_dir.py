"""The directory every process counts its metrics into (PROMETHEUS_MULTIPROC_DIR,
prometheus_client's multiprocess mode): agents.runs.metrics writes there, GET /metrics
(agentbuilder.metrics) adds it all up, `manage.py metrics_reset` empties it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

# The files prometheus_client keeps per process and kind of metric (counter_<process>.db, …).
FILES = "*.db"


def multiproc_dir() -> Path:
    """The directory, made on first use (not by the settings, which also load while the
    image is built, as another user than the server's)."""
    path = Path(settings.PROMETHEUS_MULTIPROC_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def multiproc_dir_reset() -> int:
    """Empty the directory at a deployment's start, before any process counts (the files of
    processes gone would add up with those of new ones that reuse their names); the number
    of files removed."""
    removed = 0
    for file in multiproc_dir().glob(FILES):
        file.unlink(missing_ok=True)
        removed += 1
    return removed
