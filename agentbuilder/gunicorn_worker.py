"""The image's gunicorn worker (docker/Dockerfile, `-k agentbuilder.gunicorn_worker.Worker`):
uvicorn_worker's, on uvloop, speaking HTTP with agentbuilder.serving's httptools protocol,
as `make run` does.
Only the image installs uvicorn-worker (docker/requirements-deploy.txt)."""

from __future__ import annotations

from typing import Any, ClassVar

from uvicorn_worker import UvicornWorker


class Worker(UvicornWorker):
    CONFIG_KWARGS: ClassVar[dict[str, Any]] = {
        **UvicornWorker.CONFIG_KWARGS,
        "loop": "uvloop",
        "http": "agentbuilder.serving:HttpToolsProtocol",
    }
