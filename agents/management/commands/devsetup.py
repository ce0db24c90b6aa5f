"""The dev set-up of `make run`: superuser, default environment, example agents, sample
documents and the `document-helper` RAG agent over them. Idempotent: a second run creates
nothing that is already there."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from agents.access.environments import DEFAULT_ENVIRONMENT
from agents.examples import DEV_EXAMPLES, DOCUMENT_HELPER
from agents.models import Agent, Environment
from agents.services.agents import agent_create
from retrieval.indexing import document_ingest
from retrieval.ingestion import ingestion_wait
from retrieval.models import Document, DocumentStatus
from retrieval.services import document_create

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples"


@dataclass(frozen=True)
class Sample:
    file: str
    title: str
    doc_type: str
    metadata: dict[str, Any] = field(default_factory=dict)


SAMPLES = (
    Sample("employee-handbook.md", "Employee Handbook", "handbook", {"department": "HR"}),
    Sample("expense-policy.md", "Expense Policy", "policy", {"department": "Finance"}),
    Sample("product-faq.md", "Product FAQ", "faq", {"department": "Support"}),
)


class Command(BaseCommand):
    help = (
        "Create the dev superuser, the default environment, the example agents, the sample "
        "documents and the document-helper RAG agent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        admin = users.objects.filter(username=settings.ADMIN_USERNAME).first()
        if admin is None:
            admin = users.objects.create_superuser(
                username=settings.ADMIN_USERNAME, password=settings.ADMIN_PASSWORD
            )
            self.stdout.write(
                f"created superuser '{admin.username}' (password: ADMIN_PASSWORD, or in the dev"
                f" set-up the file {settings.VAR_DIR / 'admin_password'})"
            )
        env, _ = Environment.objects.get_or_create(name=DEFAULT_ENVIRONMENT)
        for example in DEV_EXAMPLES:
            self._agent(admin, env, example, "Example from the platform documentation.")
        for sample in SAMPLES:
            self._document(admin, env, sample)
        self._agent(admin, env, DOCUMENT_HELPER, "Sample RAG agent over the sample documents.")

    def _agent(self, admin: Any, env: Environment, example: dict[str, Any], notes: str) -> None:
        exists = Agent.objects.filter(
            environment=env, name__iexact=example["name"], deleted_at__isnull=True
        ).exists()
        if exists:
            return
        agent_create(
            user=admin,
            environment=env,
            name=example["name"],
            description=example["description"],
            agent_type=example["agentType"],
            config=example["config"],
            notes=notes,
        )
        self.stdout.write(f"created example agent '{example['name']}'")

    def _document(self, admin: Any, env: Environment, sample: Sample) -> None:
        """Upload a sample unless a document of that title is there; ingest it here and now
        (the dev set-up has no worker) unless it is ready already."""
        document = Document.objects.filter(environment=env, title=sample.title).first()
        if document is None:
            document = document_create(
                environment_id=env.pk,
                user=admin,
                title=sample.title,
                data=(SAMPLES_DIR / sample.file).read_bytes(),
                media_type=None,
                source_name=sample.file,
                doc_type=sample.doc_type,
                metadata=sample.metadata,
            )
            self.stdout.write(f"created sample document '{sample.title}'")
        # Without a broker the upload is being ingested by this process's threads since
        # the commit: wait for them. With a broker, or inside a transaction, it is still
        # pending: ingest it in this process.
        ingestion_wait(300)
        status = Document.objects.filter(pk=document.pk).values_list("status", flat=True).get()
        if status != DocumentStatus.READY:
            status = document_ingest(document_id=document.pk)
            if status != DocumentStatus.READY:
                error = Document.objects.filter(pk=document.pk).values_list("error", flat=True)
                self.stderr.write(f"sample document '{sample.title}' failed: {error.get()}")
