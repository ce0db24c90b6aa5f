"""`manage.py prune [--days N] [--dry-run]`: what beat prunes daily (RUN_RETENTION_DAYS,
agents.runs.retention), now, and what it removed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runs.retention import BATCH, PruneReport, runs_prune

LABELS = {
    "runs": "runs",
    "events": "run events",
    "approval_requests": "approval requests",
    "push_configs": "push notification configs",
    "deliveries": "webhook deliveries",
    "experiment_results_unlinked": "experiment results unlinked from their run",
    "dataset_cases_unlinked": "dataset cases unlinked from their source run",
}


class Command(BaseCommand):
    help = (
        "Delete runs that ended more than RUN_RETENTION_DAYS (or --days) days ago, with their"
        " events and webhook deliveries; runs with feedback and runs not ended are kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=int, help="keep this many days instead of RUN_RETENTION_DAYS"
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument("--batch", type=int, default=BATCH, help="runs a transaction")

    def handle(
        self, *args: Any, days: int | None, dry_run: bool, batch: int, **options: Any
    ) -> None:
        if days is None:
            days = settings.RUN_RETENTION_DAYS
            if days < 1:
                self.stdout.write("RUN_RETENTION_DAYS is 0: runs are kept forever; nothing pruned.")
                return
        if days < 1:
            raise CommandError("--days must be 1 or more")
        if batch < 1:
            raise CommandError("--batch must be 1 or more")
        self.stdout.write(_text(runs_prune(days=days, dry_run=dry_run, batch=batch), days))


def _text(report: PruneReport, days: int) -> str:
    verb = "Would remove" if report.dry_run else "Removed"
    lines = [
        f"{verb} what ended before {report.cutoff:%Y-%m-%d %H:%M:%S} UTC ({days} days ago):",
        *(f"  {LABELS[name]}: {count}" for name, count in report.counts().items()),
    ]
    if not report.dry_run:
        lines.append(f"in {report.batches} transaction(s).")
    lines.append("Kept: runs not ended, runs with feedback, the audit log.")
    return "\n".join(lines)
