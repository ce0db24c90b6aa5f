"""`manage.py models add` / `models list`: the model catalog from the command line, for a
model an OpenAI-compatible server (Ollama, vLLM, a gateway) serves under a name the catalog
does not have yet: `manage.py models add openai/llama3.2`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agentbuilder.errors import Invalid
from agents.selectors.catalog import model_list
from agents.services.catalog import ADDED_CAPABILITIES, model_add


class Command(BaseCommand):
    help = "Add models to the catalog (openai/<name>: OPENAI_BASE_URL serves it) or list it."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{add,list}")
        add = actions.add_parser(
            "add", help="add (or enable) catalog models: openai/<name>, or a Bedrock model id"
        )
        add.add_argument("model_ids", nargs="+", metavar="MODEL_ID")
        add.add_argument("--name", default="", help="the name shown (one model only)")
        add.add_argument(
            "--capabilities",
            default=",".join(ADDED_CAPABILITIES),
            help="comma-separated; add images and documents for a model that reads them",
        )
        actions.add_parser("list", help="the enabled models: id, provider, name")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            for model in model_list():
                self.stdout.write(f"{model.id}\t{model.provider}\t{model.name}")
            return
        if options["name"] and len(options["model_ids"]) > 1:
            raise CommandError("--name names one model: give one MODEL_ID with it")
        capabilities = tuple(c.strip() for c in options["capabilities"].split(",") if c.strip())
        for model_id in options["model_ids"]:
            try:
                model, changed = model_add(
                    user=None, model_id=model_id, name=options["name"], capabilities=capabilities
                )
            except Invalid as exc:
                raise CommandError(f"{model_id!r}: {exc.errors[0].msg}") from None
            what = "added" if changed else "already in the catalog:"
            self.stdout.write(f"{what} {model.id} ({model.provider})")
