"""The cast: an admin, an owner (every permission on the default environment), a
collaborator (READ and INVOKE on one agent), a stranger (nothing), each with a client
that sends a real Bearer token."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from agents.access.permissions import Action, grant
from agents.access.tokens import token_encode
from agents.models import Agent, Environment
from agents.services.agents import agent_create
from tests.factories import CONFIGS, EnvironmentFactory, UserFactory
from tests.live import restore_serialized_rows
from tests.loopback import loopback_only


@pytest.fixture
def env(db: Any, _seeded: None) -> Environment:
    return Environment.objects.get(name="default")


@pytest.fixture
def other_env(db: Any) -> Environment:
    return EnvironmentFactory(name="other")


@pytest.fixture
def admin_user(db: Any) -> Any:
    return UserFactory(username="root", is_superuser=True, is_staff=True)


@pytest.fixture
def owner(env: Environment) -> Any:
    user = UserFactory(username="owner")
    for action in Action:
        grant(user, action, env)
    return user


@pytest.fixture
def stranger(db: Any) -> Any:
    return UserFactory(username="stranger")


def client_for(user: Any, environment: Environment | None = None) -> APIClient:
    token, _ = token_encode(
        user_id=user.pk, environment_id=str(environment.pk) if environment else None
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def as_user() -> Callable[..., APIClient]:
    return client_for


@pytest.fixture
def owner_client(owner: Any) -> APIClient:
    return client_for(owner)


@pytest.fixture
def rates(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """`rates(user="2/min", ...)`: the API's throttle rates for this test, with the
    throttles' history (the cache, shared with a live server in this process) cleared."""

    def set_rates(**changed: str) -> None:
        framework = settings.REST_FRAMEWORK
        rates = {**framework["DEFAULT_THROTTLE_RATES"], **changed}
        settings.REST_FRAMEWORK = {**framework, "DEFAULT_THROTTLE_RATES": rates}
        # DRF copies the rates onto the throttle class when it is defined.
        monkeypatch.setattr(
            SimpleRateThrottle, "THROTTLE_RATES", api_settings.DEFAULT_THROTTLE_RATES
        )

    cache.clear()
    return set_rates


@pytest.fixture
def make_agent(env: Environment, admin_user: Any) -> Callable[..., Agent]:
    def make(
        name: str = "calc",
        agent_type: str = "tool",
        environment: Environment | None = None,
        config: dict[str, Any] | None = None,
    ) -> Agent:
        agent, _ = agent_create(
            user=admin_user,
            environment=environment or env,
            name=name,
            agent_type=agent_type,
            config=config or CONFIGS[agent_type],
        )
        return agent

    return make


SEEDS = [
    ("agents.migrations.0002_version_immutable_and_catalog", "seed"),
    ("agents.migrations.0007_model_attachment_capabilities", "add"),
    ("agents.migrations.0020_run_cost", "price"),  # the catalog's list prices
    ("guardrails.migrations.0002_catalog", "seed"),
    ("guardrails.migrations.0004_catalog_engines", "configure"),
]


@pytest.fixture(autouse=True)
def _seeded(request: pytest.FixtureRequest) -> None:
    """The rows the migrations seed (default environment, catalogs) and post_migrate makes
    (permissions), whatever ran before.

    A transactional test flushes the database when it ends; xdist may schedule an ordinary
    test after it on the same worker. Re-running the (idempotent) seeds inside the test's
    transaction costs two queries when nothing is missing.
    """
    uses_db = request.node.get_closest_marker("django_db") or {
        "db",
        "transactional_db",
    } & set(request.fixturenames)
    if not uses_db:
        return
    request.getfixturevalue("_django_db_helper")
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.core.management.sql import emit_post_migrate_signal

    # The content-type cache outlives the rows it caches: a test that re-made them below
    # rolls them back, a serialized-rollback test restores the originals under other ids,
    # and guardian's grants would look permissions up under a stale id.
    ContentType.objects.clear_cache()

    from agents.models import LLMModel
    from guardrails.models import Guardrail

    # A serialized-rollback test's flush skips post_migrate, which makes the content types,
    # the permissions and guardian's anonymous user.
    if not Permission.objects.exists():
        emit_post_migrate_signal(verbosity=0, interactive=False, db="default")

    if (
        Environment.objects.filter(name="default").exists()
        and LLMModel.objects.filter(pk="local.demo-v1").exists()
        and Guardrail.objects.filter(
            name="HAIP-Prompt_attack-Medium", engine_config__detector="prompt_attack"
        ).exists()
    ):
        return
    import importlib

    from django.apps import apps

    for module, function in SEEDS:
        getattr(importlib.import_module(module), function)(apps, None)


@pytest.fixture(scope="module")
def reseed_after_module(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """For a module of transactional, serialized-rollback tests (live servers, threads):
    put the seeded rows back once its last test's flush has run.

    xdist's loadfile schedules the biggest files first, so files with non-transactional
    tests (which expect the `default` environment and the catalogs) can follow such a
    module on the same worker.
    """
    yield
    restore_serialized_rows(django_db_blocker)


@pytest.fixture(scope="session", autouse=True)
def _loopback_only() -> Iterator[None]:
    """No test resolves a public name or connects to a public address (tests/loopback.py)."""
    with loopback_only():
        yield
