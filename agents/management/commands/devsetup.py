"""The dev set-up of `make run`: superuser, default environment, example agents, sample
documents and the `document-helper` RAG agent over them. Idempotent: a second run creates
nothing that is already there.

The samples run on the model the configured provider serves (agents.examples.sample_model),
and OPENAI_MODELS joins the catalog first. Run again with real models, a sample nobody
edited follows the provider: a new version on its model (README, "A first API call")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agentbuilder.errors import Invalid
from agents.access.environments import DEFAULT_ENVIRONMENT
from agents.configs import config_parse
from agents.examples import DEV_EXAMPLES, DOCUMENT_HELPER, openai_model_id, sample_model, with_model
from agents.models import Agent, Environment, LLMModel
from agents.services.agents import agent_create
from agents.services.catalog import model_add
from agents.services.versions import version_add
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
        model = self._model()
        for example in DEV_EXAMPLES:
            self._agent(
                admin, env, with_model(example, model), "Example from the platform documentation."
            )
        for sample in SAMPLES:
            self._document(admin, env, sample)
        self._agent(
            admin,
            env,
            with_model(DOCUMENT_HELPER, model),
            "Sample RAG agent over the sample documents.",
        )

    def _model(self) -> str | None:
        """OPENAI_MODELS put in the catalog, then the samples' model (None: each its own)."""
        for name in settings.OPENAI_MODELS:
            try:
                added, changed = model_add(user=None, model_id=openai_model_id(name))
            except Invalid as exc:
                raise CommandError(f"OPENAI_MODELS: {name!r}: {exc.errors[0].msg}") from None
            if changed:
                self.stdout.write(f"added model '{added.id}' to the catalog")
        model = sample_model()
        if model is not None and not LLMModel.objects.filter(pk=model, enabled=True).exists():
            raise CommandError(
                f"the samples' model '{model}' is not an enabled model of the catalog: "
                f"add it with `manage.py models add {model}`"
            )
        return model

    def _agent(self, admin: Any, env: Environment, example: dict[str, Any], notes: str) -> None:
        agent = Agent.objects.filter(
            environment=env, name__iexact=example["name"], deleted_at__isnull=True
        ).first()
        if agent is not None:
            self._follow(admin, agent, example)
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

    def _follow(self, admin: Any, agent: Agent, example: dict[str, Any]) -> None:
        """Put a sample nobody edited on the example's model: its latest config is the
        example's but for the model. Offline every id is served, so nothing moves then
        unless DEFAULT_MODEL says."""
        if settings.LLM_OFFLINE and not settings.DEFAULT_MODEL:
            return
        latest = agent.versions.order_by("-number").first()
        if latest is None:  # pragma: no cover - every agent is created with version 1
            return
        wanted = config_parse(example["agentType"], example["config"])
        try:
            stored = config_parse(agent.agent_type, latest.config)
        except Invalid:  # an older form, edited since: not the sample any more
            return
        if stored.llm_model_id == wanted.llm_model_id:
            return
        if stored.model_copy(update={"llm_model_id": wanted.llm_model_id}) != wanted:
            return
        version = version_add(
            user=admin,
            agent=agent,
            config=example["config"],
            notes=f"The dev set-up's sample, on {wanted.llm_model_id}.",
        )
        model, number = wanted.llm_model_id, version.number
        self.stdout.write(f"example agent '{agent.name}' now uses '{model}' (version {number})")

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
