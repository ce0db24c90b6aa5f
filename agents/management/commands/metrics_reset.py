"""`manage.py metrics_reset`: empty PROMETHEUS_MULTIPROC_DIR at a deployment's start, before
its servers and workers count (`make run`, docker/compose.yaml's migrate). Never while they
run: their counts so far would go, and a scraper would read the drop as a restart."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from agentbuilder.metrics_dir import multiproc_dir, multiproc_dir_reset


class Command(BaseCommand):
    help = "Empty PROMETHEUS_MULTIPROC_DIR before the deployment's processes start."

    def handle(self, *args: Any, **options: Any) -> None:
        removed = multiproc_dir_reset()
        if options["verbosity"] > 0:
            self.stdout.write(f"{removed} metrics files removed from {multiproc_dir()}")
