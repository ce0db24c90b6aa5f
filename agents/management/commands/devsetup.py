"""The dev set-up of `make run`: superuser, default environment, example agents. Idempotent."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from agents.examples import EXAMPLES
from agents.models import Agent, Environment
from agents.selectors import DEFAULT_ENVIRONMENT
from agents.services import agent_create


class Command(BaseCommand):
    help = "Create the dev superuser, the default environment and the example agents."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        admin = users.objects.filter(username=settings.ADMIN_USERNAME).first()
        if admin is None:
            admin = users.objects.create_superuser(
                username=settings.ADMIN_USERNAME, password=settings.ADMIN_PASSWORD
            )
            self.stdout.write(f"created superuser '{admin.username}'")
        env, _ = Environment.objects.get_or_create(name=DEFAULT_ENVIRONMENT)
        for example in EXAMPLES:
            exists = Agent.objects.filter(
                environment=env, name__iexact=example["name"], deleted_at__isnull=True
            ).exists()
            if exists:
                continue
            agent_create(
                user=admin,
                environment=env,
                name=example["name"],
                description=example["description"],
                agent_type=example["agentType"],
                config=example["config"],
                notes="Example from the platform documentation.",
            )
            self.stdout.write(f"created example agent '{example['name']}'")
